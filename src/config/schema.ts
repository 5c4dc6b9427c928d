import { z } from "zod";
import { type Setting, section, setting, settingsOf } from "./setting.js";
import { INFLUX_APIS, LOG_FORMATS, LOG_LEVELS, NAMES } from "./setting-names.js";
import { sitesSchema } from "./sites.js";
import {
  apiUser,
  bool,
  boundedDuration,
  cronExpression,
  databaseAndPolicy,
  headerSecret,
  hostName,
  int,
  optionalUrl,
  positiveNumber,
  requiredName,
  rollupBucket,
  rollupBucketProblem,
  syncStart,
  timeZoneList,
} from "./values.js";

/** The deadline of an API request or InfluxDB write with its retries, and the longest Retry-After. */
const deadlines = (names: (typeof NAMES)["api" | "influx"]) => ({
  deadlineMs: setting(int(1000, 86_400_000).default(900_000), names.deadlineMs),
  retryAfterMax: setting(boundedDuration("PT0S", "P1D").prefault("PT10M"), names.retryAfterMax),
});

export { LOG_FORMATS };

/**
 * The one schema of energy-etl's configuration (the names and meaning of each setting are
 * NAMES's, src/config/setting-names.ts): SETTINGS, the flags, `config` output and the
 * files of CONFIG_ARTEFACTS are derived from it. Besides the sections of settings, `sites`.
 */
export const configSchema = z
  .object({
    api: section({
      url: setting(
        optionalUrl(
          "put them into ENERGY_API_USER and ENERGY_API_PASSWORD (and the key into ENERGY_API_KEY)",
        ).default(""),
        NAMES.api.url,
      ),
      key: setting(headerSecret.default(""), NAMES.api.key),
      user: setting(apiUser.default(""), NAMES.api.user),
      password: setting(z.string().default(""), NAMES.api.password),
      concurrency: setting(int(1, 64).default(4), NAMES.api.concurrency),
      rateLimit: setting(positiveNumber(1000).default(5), NAMES.api.rateLimit),
      timeoutMs: setting(int(100, 600_000).default(30_000), NAMES.api.timeoutMs),
      ...deadlines(NAMES.api),
      retries: setting(int(0, 20).default(5), NAMES.api.retries),
      retryBaseDelayMs: setting(int(1, 600_000).default(500), NAMES.api.retryBaseDelayMs),
      retryMaxDelayMs: setting(int(1, 3_600_000).default(30_000), NAMES.api.retryMaxDelayMs),
      maxRecordBytes: setting(
        int(1024, 1024 * 1024 * 1024).default(1024 * 1024),
        NAMES.api.maxRecordBytes,
      ),
      maxAnswerBytes: setting(
        int(1024, 64 * 1024 * 1024 * 1024).default(512 * 1024 * 1024),
        NAMES.api.maxAnswerBytes,
      ),
      answerBudgetMb: setting(int(1, 65_536).default(16), NAMES.api.answerBudgetMb),
    }),
    influx: section({
      url: setting(optionalUrl("put the token into INFLUX_TOKEN").default(""), NAMES.influx.url),
      token: setting(headerSecret.default(""), NAMES.influx.token),
      api: setting(z.enum(INFLUX_APIS).default("auto"), NAMES.influx.api),
      username: setting(z.string().default(""), NAMES.influx.username),
      password: setting(z.string().default(""), NAMES.influx.password),
      org: setting(z.string().default(""), NAMES.influx.org),
      bucket: setting(requiredName.default("energy"), NAMES.influx.bucket),
      batchSize: setting(int(1, 100_000).default(5000), NAMES.influx.batchSize),
      timeoutMs: setting(int(100, 600_000).default(30_000), NAMES.influx.timeoutMs),
      ...deadlines(NAMES.influx),
      retries: setting(int(0, 20).default(5), NAMES.influx.retries),
      gzip: setting(bool.default(false), NAMES.influx.gzip),
    }),
    state: section({
      db: setting(requiredName.default("./data/state.db"), NAMES.state.db),
    }),
    sync: section({
      cron: setting(cronExpression.prefault("*/5 * * * *"), NAMES.sync.cron),
      start: setting(syncStart.prefault("P7D"), NAMES.sync.start),
      lookback: setting(boundedDuration("PT0S", "P30D").prefault("PT1H"), NAMES.sync.lookback),
      lookbackEvery: setting(
        boundedDuration("PT0S", "P7D").prefault("PT1H"),
        NAMES.sync.lookbackEvery,
      ),
      lateDataHorizon: setting(
        boundedDuration("PT1H", "P1Y").prefault("P30D"),
        NAMES.sync.lateDataHorizon,
      ),
      silentAfter: setting(
        boundedDuration("PT1M", "P30D").prefault("PT6H"),
        NAMES.sync.silentAfter,
      ),
      probeInterval: setting(
        boundedDuration("PT1M", "P7D").prefault("PT1H"),
        NAMES.sync.probeInterval,
      ),
      catalogRefresh: setting(
        boundedDuration("PT1M", "P7D").prefault("PT1H"),
        NAMES.sync.catalogRefresh,
      ),
    }),
    failures: section({
      backoff: setting(boundedDuration("PT0S", "P1D").prefault("PT1M"), NAMES.failures.backoff),
      backoffMax: setting(
        boundedDuration("PT0S", "P7D").prefault("PT30M"),
        NAMES.failures.backoffMax,
      ),
      parkAfter: setting(int(1, 1000).default(8), NAMES.failures.parkAfter),
    }),
    log: section({
      level: setting(z.enum(LOG_LEVELS).default("info"), NAMES.log.level),
      format: setting(z.enum(LOG_FORMATS).default("auto"), NAMES.log.format),
    }),
    http: section({
      port: setting(int(0, 65_535).default(8080), NAMES.http.port),
      host: setting(hostName.default("127.0.0.1"), NAMES.http.host),
    }),
    service: section({
      memoryBudgetMb: setting(int(64, 65_536).default(512), NAMES.service.memoryBudgetMb),
      shutdownTimeoutMs: setting(int(100, 600_000).default(8000), NAMES.service.shutdownTimeoutMs),
      readyMaxLag: setting(
        boundedDuration("PT1M", "P30D").prefault("PT1H"),
        NAMES.service.readyMaxLag,
      ),
      readyFailedSyncs: setting(int(1, 1000).default(3), NAMES.service.readyFailedSyncs),
      readyCheckIntervalMs: setting(
        int(1000, 3_600_000).default(30_000),
        NAMES.service.readyCheckIntervalMs,
      ),
    }),
    output: section({
      file: setting(z.string().default(""), NAMES.output.file),
      maxBytes: setting(
        int(1024, 1024 * 1024 * 1024 * 1024).default(100 * 1024 * 1024),
        NAMES.output.maxBytes,
      ),
      keep: setting(int(0, 1000).default(3), NAMES.output.keep),
    }),
    rollups: section({
      enabled: setting(bool.default(true), NAMES.rollups.enabled),
      timeZones: setting(timeZoneList.default("UTC"), NAMES.rollups.timeZones),
      bucket: setting(rollupBucket.default(""), NAMES.rollups.bucket),
    }),
    shard: section({
      count: setting(int(1, 1024).default(1), NAMES.shard.count),
      index: setting(int(0, 1023).default(0), NAMES.shard.index),
    }),
    // not a section of settings: a map by device id, config file only (src/config/sites.ts)
    sites: sitesSchema,
  })
  .strict()
  .superRefine((config, ctx) => {
    if (config.shard.index >= config.shard.count) {
      ctx.addIssue({
        code: "custom",
        path: ["shard", "index"],
        message: `must be below SHARD_COUNT (${config.shard.count})`,
      });
    }
    const problem = rollupBucketAgainstInflux(config.rollups.bucket, config.influx.bucket);
    if (problem) ctx.addIssue({ code: "custom", path: ["rollups", "bucket"], message: problem });
  });

/**
 * What is wrong with ROLLUP_BUCKET beside INFLUX_BUCKET: InfluxQL reads the raw points and the
 * rollups through one database, so both must be on the same one, and in another policy.
 */
function rollupBucketAgainstInflux(rollups: string, influx: string): string | undefined {
  if (rollups === "" || rollupBucketProblem(rollups) !== undefined) return undefined;
  const { database } = databaseAndPolicy(influx);
  const own = databaseAndPolicy(rollups).database;
  if (own !== database) {
    return (
      `its database must be INFLUX_BUCKET's (${database}, as in ${database}/rollups), not ` +
      `${own}: InfluxQL reads the raw points and the rollups through one database`
    );
  }
  if (rollups === influx) {
    return "is INFLUX_BUCKET itself: leave it empty to keep the rollups beside the raw points";
  }
  return undefined;
}

/** The validated configuration. */
export type Config = z.output<typeof configSchema>;

/** Every setting of {@link configSchema}, in its order. */
export const SETTINGS: readonly Setting[] = (() => {
  const { sites: _sites, ...sections } = configSchema.shape;
  return settingsOf(sections, NAMES);
})();
