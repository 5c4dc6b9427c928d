import type { Logger } from "pino";
import type { Config } from "../config.js";
import { durationMs } from "../util/iso-duration.js";
import { checkInflux } from "./influx-check.js";
import { InfluxWriter } from "./influx-writer.js";
import { LineProtocolFileSink } from "./line-protocol-file-sink.js";
import type { PointSink } from "./point-sink.js";

/** Where points go when neither INFLUX_URL nor OUTPUT_FILE is set and no --output is given. */
export const DEFAULT_LINE_PROTOCOL_FILE = "./data/points.lp";

/**
 * The sink for a run, in this order: `output` (`--output`; `-` for stdout; never rotated);
 * OUTPUT_FILE (rotated past OUTPUT_FILE_MAX_BYTES, OUTPUT_FILE_KEEP copies kept); the default file
 * when INFLUX_URL is not set; otherwise InfluxDB, checked first (one request: reachable, token
 * accepted, bucket present), written with INFLUX_DEADLINE_MS and INFLUX_RETRY_AFTER_MAX.
 */
export async function createPointSink(
  config: Config,
  logger: Logger,
  output?: string,
): Promise<PointSink> {
  const { influx } = config;
  const file = fileSinkFor(config, output);
  if (file) {
    logger.info({ target: file.target }, "writing line protocol instead of InfluxDB");
    return file;
  }
  await checkInflux(influx);
  return new InfluxWriter({
    ...influx,
    deadlineMs: influx.deadlineMs,
    retryAfterMaxMs: durationMs(influx.retryAfterMax),
    retry: { retries: influx.retries, baseDelayMs: 1000, maxDelayMs: 30_000 },
    logger,
  });
}

/** The line-protocol sink a run uses instead of InfluxDB, if any (see {@link createPointSink}). */
function fileSinkFor(config: Config, output: string | undefined): LineProtocolFileSink | undefined {
  if (output !== undefined) return new LineProtocolFileSink(output);
  const { file, maxBytes, keep } = config.output;
  if (file !== "") return new LineProtocolFileSink(file, { maxBytes, keep });
  if (config.influx.url === "") return new LineProtocolFileSink(DEFAULT_LINE_PROTOCOL_FILE);
  return undefined;
}
