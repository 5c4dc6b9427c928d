import type { Logger } from "pino";
import type { Config } from "../config.js";
import { checkInflux } from "./influx-check.js";
import { InfluxWriter } from "./influx-writer.js";
import { LineProtocolFileSink } from "./line-protocol-file-sink.js";
import type { PointSink } from "./point-sink.js";

/** Where points go when INFLUX_URL is not set and no --output is given. */
export const DEFAULT_LINE_PROTOCOL_FILE = "./data/points.lp";

/**
 * The sink for a run: a line-protocol file with `output` (`-` for stdout) or when INFLUX_URL is not
 * set; otherwise InfluxDB, checked first (reachable, token accepted, bucket present).
 */
export async function createPointSink(
  config: Config,
  logger: Logger,
  output?: string,
): Promise<PointSink> {
  const { influx } = config;
  if (output !== undefined || influx.url === "") {
    const sink = new LineProtocolFileSink(output ?? DEFAULT_LINE_PROTOCOL_FILE);
    logger.info({ target: sink.target }, "writing line protocol instead of InfluxDB");
    return sink;
  }
  await checkInflux(influx);
  return new InfluxWriter({
    ...influx,
    retry: { retries: influx.retries, baseDelayMs: 1000, maxDelayMs: 30_000 },
    logger,
  });
}
