import { z } from "zod";
import { type Setting, section, setting, settingsOf } from "./setting.js";
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

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
/** How log lines are written: see {@link Terminal}. */
export const LOG_FORMATS = ["auto", "json", "pretty"] as const;

/** The deadline of an API request or InfluxDB write with its retries, and the longest Retry-After. */
const deadlines = (prefix: "API" | "INFLUX", what: "request" | "write") => ({
  deadlineMs: setting(int(1000, 86_400_000).default(900_000), {
    env: `${prefix}_DEADLINE_MS`,
    describe: `Deadline of one ${what} with all its attempts, retries and waits, in ms`,
  }),
  retryAfterMax: setting(boundedDuration("PT0S", "P1D").prefault("PT10M"), {
    env: `${prefix}_RETRY_AFTER_MAX`,
    describe: `Longest Retry-After honoured; a longer one fails the ${what}`,
  }),
});

/**
 * The one schema of energy-etl's configuration: SETTINGS, the flags, `config` output and the
 * files of CONFIG_ARTEFACTS are derived from it. Besides the sections of settings, `sites`.
 */
export const configSchema = z
  .object({
    api: section({
      url: setting(
        optionalUrl(
          "put them into ENERGY_API_USER and ENERGY_API_PASSWORD (and the key into ENERGY_API_KEY)",
        ).default(""),
        {
          env: "ENERGY_API_URL",
          flag: "--api-url",
          describe: "Base URL of the Energy Monitoring Data API",
        },
      ),
      key: setting(headerSecret.default(""), {
        env: "ENERGY_API_KEY",
        secret: true,
        describe: "API key (`x-api-key`)",
      }),
      user: setting(apiUser.default(""), {
        env: "ENERGY_API_USER",
        flag: "--api-user",
        describe: "API username",
      }),
      password: setting(z.string().default(""), {
        env: "ENERGY_API_PASSWORD",
        secret: true,
        describe: "API password (set with `set-password`)",
      }),
      concurrency: setting(int(1, 64).default(4), {
        env: "API_CONCURRENCY",
        flag: "--api-concurrency",
        describe: "Requests in flight at once (1-64)",
      }),
      rateLimit: setting(positiveNumber(1000).default(5), {
        env: "API_RATE_LIMIT",
        flag: "--api-rate-limit",
        describe: "Requests per second at most",
      }),
      timeoutMs: setting(int(100, 600_000).default(30_000), {
        env: "API_TIMEOUT_MS",
        flag: "--api-timeout-ms",
        describe:
          "Timeout of each wait in one HTTP attempt (connecting, sending, the answer's head, each next part of its body), in ms",
      }),
      ...deadlines("API", "request"),
      retries: setting(int(0, 20).default(5), {
        env: "API_RETRIES",
        flag: "--api-retries",
        describe: "Retries of a failed request (5xx, 429, timeouts, resets)",
      }),
      retryBaseDelayMs: setting(int(1, 600_000).default(500), {
        env: "API_RETRY_BASE_DELAY_MS",
        describe: "First retry delay in ms, doubled per retry, with jitter",
      }),
      retryMaxDelayMs: setting(int(1, 3_600_000).default(30_000), {
        env: "API_RETRY_MAX_DELAY_MS",
        describe:
          "Largest retry delay in ms; a longer Retry-After (up to `API_RETRY_AFTER_MAX`) is still honoured",
      }),
      maxRecordBytes: setting(int(1024, 1024 * 1024 * 1024).default(1024 * 1024), {
        env: "API_MAX_RECORD_BYTES",
        describe: "Longest record of a data answer in bytes; a longer one fails its chunk",
      }),
      maxAnswerBytes: setting(int(1024, 64 * 1024 * 1024 * 1024).default(512 * 1024 * 1024), {
        env: "API_MAX_ANSWER_BYTES",
        describe: "Largest data answer in bytes; a larger one fails its chunk",
      }),
      answerBudgetMb: setting(int(1, 65_536).default(16), {
        env: "API_ANSWER_BUDGET_MB",
        describe:
          "Memory the data answers in flight and their writes may hold at once, in MiB (7 days of " +
          "20 values at one minute: about 3.5); a request waits for room ([Memory](operations.md#memory))",
      }),
    }),
    influx: section({
      url: setting(optionalUrl("put the token into INFLUX_TOKEN").default(""), {
        env: "INFLUX_URL",
        flag: "--influx-url",
        describe: "InfluxDB URL; empty: `OUTPUT_FILE` (or `--output`) must say where points go",
      }),
      token: setting(headerSecret.default(""), {
        env: "INFLUX_TOKEN",
        secret: true,
        describe: "InfluxDB API token",
      }),
      org: setting(z.string().default(""), {
        env: "INFLUX_ORG",
        flag: "--influx-org",
        describe: "InfluxDB organisation",
      }),
      bucket: setting(requiredName.default("energy"), {
        env: "INFLUX_BUCKET",
        flag: "--influx-bucket",
        describe: "InfluxDB bucket (on 1.8: `database` or `database/retention-policy`)",
      }),
      batchSize: setting(int(1, 100_000).default(5000), {
        env: "INFLUX_BATCH_SIZE",
        describe: "Lines per write request",
      }),
      timeoutMs: setting(int(100, 600_000).default(30_000), {
        env: "INFLUX_TIMEOUT_MS",
        describe: "Timeout of one write request in ms",
      }),
      ...deadlines("INFLUX", "write"),
      retries: setting(int(0, 20).default(5), {
        env: "INFLUX_RETRIES",
        describe:
          "Retries of a failed write (429, 5xx, network), 1 s doubling to 30 s, never sooner " +
          "than Retry-After",
      }),
      gzip: setting(bool.default(false), {
        env: "INFLUX_GZIP",
        describe:
          "Gzip write requests: worth it over a slow link to InfluxDB Cloud, a CPU cost on a LAN",
      }),
    }),
    state: section({
      db: setting(requiredName.default("./data/state.db"), {
        env: "STATE_DB",
        flag: "--state-db",
        describe: "SQLite state file",
      }),
    }),
    sync: section({
      cron: setting(cronExpression.prefault("*/5 * * * *"), {
        env: "SYNC_CRON",
        flag: "--sync-cron",
        describe: "Schedule of incremental syncs (a cron expression)",
      }),
      start: setting(syncStart.prefault("P7D"), {
        env: "SYNC_START",
        flag: "--sync-start",
        describe:
          "Where a device never synced starts; what `--from` takes: an ISO date or date-time " +
          "(`2025-01-01T00:00:00Z`, UTC when no zone is given), `now`, or a time before now " +
          "(`P30D`, `-30d`, `-12h`, `-90m`)",
      }),
      lookback: setting(boundedDuration("PT0S", "P30D").prefault("PT1H"), {
        env: "SYNC_LOOKBACK",
        flag: "--sync-lookback",
        describe: "Re-read before the newest record, for corrections",
      }),
      lookbackEvery: setting(boundedDuration("PT0S", "P7D").prefault("PT1H"), {
        env: "SYNC_LOOKBACK_EVERY",
        describe:
          "How often a resource's lookback is re-read (ticks in between read from its newest " +
          "record on); `PT0S`: on every tick",
      }),
      lateDataHorizon: setting(boundedDuration("PT1H", "P1Y").prefault("P30D"), {
        env: "LATE_DATA_HORIZON",
        flag: "--late-data-horizon",
        describe: "How far back late data is still fetched; a sync never reads further back",
      }),
      silentAfter: setting(boundedDuration("PT1M", "P30D").prefault("PT6H"), {
        env: "SILENT_AFTER",
        describe: "A resource without a new record for this long is silent: probed, not fetched",
      }),
      probeInterval: setting(boundedDuration("PT1M", "P7D").prefault("PT1H"), {
        env: "SILENT_PROBE_INTERVAL",
        describe: "How often a silent resource is probed (1-2 requests)",
      }),
      catalogRefresh: setting(boundedDuration("PT1M", "P7D").prefault("PT1H"), {
        env: "CATALOG_REFRESH",
        flag: "--catalog-refresh",
        describe:
          "How often the device list, resources and value lists are read again (per device)",
      }),
    }),
    failures: section({
      backoff: setting(boundedDuration("PT0S", "P1D").prefault("PT1M"), {
        env: "FAILURE_BACKOFF",
        describe: "Wait after a failed sync of a resource or attempt of a job; doubles per failure",
      }),
      backoffMax: setting(boundedDuration("PT0S", "P7D").prefault("PT30M"), {
        env: "FAILURE_BACKOFF_MAX",
        describe: "Longest wait after a failure",
      }),
      parkAfter: setting(int(1, 1000).default(8), {
        env: "PARK_AFTER",
        describe: "Failed attempts after which a job (or a sync window) is parked",
      }),
    }),
    log: section({
      level: setting(z.enum(LOG_LEVELS).default("info"), {
        env: "LOG_LEVEL",
        flag: "--log-level",
        describe: `pino log level: ${LOG_LEVELS.map((level) => `\`${level}\``).join(", ")}`,
      }),
      format: setting(z.enum(LOG_FORMATS).default("auto"), {
        env: "LOG_FORMAT",
        flag: "--log-format",
        describe:
          "Log lines: pretty (pino-pretty) on a terminal and JSON lines otherwise (`auto`), or " +
          "always `json` or `pretty`",
      }),
    }),
    http: section({
      port: setting(int(0, 65_535).default(8080), {
        env: "HTTP_PORT",
        flag: "--http-port",
        describe: "Port of `/healthz`, `/readyz` and `/metrics`",
      }),
      host: setting(hostName.default("127.0.0.1"), {
        env: "HTTP_HOST",
        flag: "--http-host",
        describe:
          "Address of `/healthz`, `/readyz` and `/metrics` (`0.0.0.0`: every interface; the " +
          "image sets it)",
      }),
    }),
    service: section({
      memoryBudgetMb: setting(int(64, 65_536).default(512), {
        env: "MEMORY_BUDGET_MB",
        describe:
          "The resident memory energy-etl may use, in MB; beyond it for 15 s a command or the " +
          "service stops with an error that says so (set it below a container's memory limit)",
      }),
      shutdownTimeoutMs: setting(int(100, 600_000).default(8000), {
        env: "SHUTDOWN_TIMEOUT_MS",
        describe:
          "After SIGTERM/SIGINT: how long in-flight work may finish before it is aborted, in ms",
      }),
      readyMaxLag: setting(boundedDuration("PT1M", "P30D").prefault("PT1H"), {
        env: "READY_MAX_LAG",
        describe: "`/readyz` fails when a resource that is not silent lags more than this",
      }),
      readyFailedSyncs: setting(int(1, 1000).default(3), {
        env: "READY_FAILED_SYNCS",
        describe: "`/readyz` fails after this many failed syncs in a row",
      }),
      readyCheckIntervalMs: setting(int(1000, 3_600_000).default(30_000), {
        env: "READY_CHECK_INTERVAL_MS",
        describe: "`/readyz` asks InfluxDB and the API at most this often, in ms (cached between)",
      }),
    }),
    output: section({
      file: setting(z.string().default(""), {
        env: "OUTPUT_FILE",
        flag: "--output-file",
        describe:
          "Line protocol into this file instead of InfluxDB (writing needs it or `INFLUX_URL`)",
      }),
      maxBytes: setting(int(1024, 1024 * 1024 * 1024 * 1024).default(100 * 1024 * 1024), {
        env: "OUTPUT_FILE_MAX_BYTES",
        describe: "The file is rotated past this size in bytes (`FILE.1`, `FILE.2`, ...)",
      }),
      keep: setting(int(0, 1000).default(3), {
        env: "OUTPUT_FILE_KEEP",
        describe: "Rotated files kept",
      }),
    }),
    rollups: section({
      enabled: setting(bool.default(true), {
        env: "ROLLUPS",
        describe:
          "Write the hourly and daily rollups of the counters (energy per hour and per day), " +
          "beside the raw points or in `ROLLUP_BUCKET`; false leaves them out (the energy " +
          "panels then stay empty)",
      }),
      timeZones: setting(timeZoneList.default("UTC"), {
        env: "ROLLUP_TIME_ZONES",
        describe:
          "Time zones of the daily rollups, comma-separated IANA names in any case " +
          "(`UTC,Europe/Berlin`), each written as its IANA name once; hourly rollups are UTC " +
          "hours (see [The schema](schema.md#rollups-energy-per-hour-and-per-day))",
      }),
      bucket: setting(rollupBucket.default(""), {
        env: "ROLLUP_BUCKET",
        describe:
          "Where the rollups go: `<database>/<retention policy>` on INFLUX_BUCKET's database " +
          "(`energy/rollups`; InfluxDB 2.x: a bucket of that name, 3: a database); empty: beside " +
          "the raw points (see [Where the rollups live](operations.md#where-the-rollups-live))",
      }),
    }),
    shard: section({
      count: setting(int(1, 1024).default(1), {
        env: "SHARD_COUNT",
        flag: "--shard-count",
        describe:
          "Replicas that split the fleet (see [Sizing and sharding](operations.md#sizing-and-sharding))",
      }),
      index: setting(int(0, 1023).default(0), {
        env: "SHARD_INDEX",
        flag: "--shard-index",
        describe: "This replica's shard, `0` to `SHARD_COUNT - 1`",
      }),
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
  return settingsOf(sections);
})();
