import type { Logger } from "pino";
import { type Config, ConfigError } from "../config.js";
import { errnoOf, messageOf } from "../util/errors.js";
import { durationMs } from "../util/iso-duration.js";
import { CoalescingSink } from "./coalescing-sink.js";
import { checkInflux, influxUnreachable } from "./influx-check.js";
import { resolveInfluxApi } from "./influx-connection.js";
import { InfluxWriter } from "./influx-writer.js";
import { type LineProtocolFileOptions, LineProtocolFileSink } from "./line-protocol-file-sink.js";
import type { PointSink } from "./point-sink.js";
import type { BucketTarget } from "./write-errors.js";

/** Why a command that writes points refuses to start when it has nowhere to write them. */
const NOWHERE_TO_WRITE =
  "nowhere to write the points: set INFLUX_URL (with INFLUX_TOKEN, INFLUX_ORG, INFLUX_BUCKET), " +
  "or OUTPUT_FILE for line protocol in a file (rotated at OUTPUT_FILE_MAX_BYTES); sync and " +
  "backfill also take --output FILE";

/**
 * Decides where points go, at once, and returns what opens that sink: `output` (`--output`; `-`
 * for stdout; never rotated); else OUTPUT_FILE (rotated); else InfluxDB at INFLUX_URL. With none
 * of them it throws a {@link ConfigError}: call it before anything else moves (the state database).
 */
export function pointSinkOpener(
  config: Config,
  logger: Logger,
  output?: string,
): () => Promise<PointSink> {
  const { influx } = config;
  const { file, maxBytes, keep } = config.output;
  const target =
    output !== undefined
      ? { file: output }
      : file !== ""
        ? { file, rotation: { maxBytes, keep } }
        : undefined;
  if (target) {
    // opened now: a directory or a path that cannot be written fails before anything moves
    const sink = fileSink(target.file, target.rotation, output !== undefined);
    return async () => {
      logger.info({ target: sink.target }, "writing line protocol instead of InfluxDB");
      return sink;
    };
  }
  if (influx.url === "") throw new ConfigError(NOWHERE_TO_WRITE);
  return () => openInfluxSink(influx, logger, { bucket: influx.bucket });
}

/** The line-protocol sink on `file`, or a ConfigError naming --output or OUTPUT_FILE and why not. */
function fileSink(
  file: string,
  rotation: LineProtocolFileOptions | undefined,
  fromFlag: boolean,
): LineProtocolFileSink {
  try {
    return new LineProtocolFileSink(file, rotation);
  } catch (error) {
    const why =
      errnoOf(error) === "EISDIR" ? messageOf(error) : `cannot be written (${messageOf(error)})`;
    throw new ConfigError(`${fromFlag ? "--output" : "OUTPUT_FILE"} ${file}: ${why}`);
  }
}

/** The rollups' sink on ROLLUP_BUCKET when set (the raw points' kind); undefined otherwise. */
export async function openRollupSink(
  config: Config,
  logger: Logger,
): Promise<PointSink | undefined> {
  const { bucket } = config.rollups;
  if (!config.rollups.enabled || bucket === "" || config.influx.url === "") return undefined;
  return openInfluxSink(config.influx, logger, { bucket, bucketSetting: "ROLLUP_BUCKET" });
}

/**
 * InfluxDB at INFLUX_URL, bucket `target`: its write API resolved once (INFLUX_API, or `/ping`'s
 * version), then the start-up check on that path; short writes coalesced.
 */
async function openInfluxSink(
  influx: Config["influx"],
  logger: Logger,
  target: BucketTarget,
): Promise<PointSink> {
  const server = await resolveInfluxApi(influx, influx.api).catch((error: unknown) => {
    throw influxUnreachable(influx, error);
  });
  const { api, version } = server;
  logger.info(
    { api, version: version ?? "unknown", bucket: target.bucket, setting: influx.api },
    "InfluxDB write API",
  );
  await checkInflux({ ...influx, ...target, api });
  const writer = new InfluxWriter({
    ...influx,
    ...target,
    api,
    retryAfterMaxMs: durationMs(influx.retryAfterMax),
    retry: { retries: influx.retries, baseDelayMs: 1000, maxDelayMs: 30_000 },
    logger,
  });
  return new CoalescingSink(writer, influx.batchSize);
}

/** The sink of a dry run: none is opened, and nothing may be written. */
export const DRY_RUN_SINK: PointSink = {
  target: "nowhere (dry run)",
  write: () => Promise.reject(new Error("a dry run writes nothing")),
  flush: () => Promise.resolve(),
  close: () => Promise.resolve(),
};
