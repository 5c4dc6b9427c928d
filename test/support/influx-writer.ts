import { InfluxWriter, type InfluxWriterOptions } from "../../src/influx/influx-writer.js";
import type { TestInfluxDb } from "./influx-db.js";
import { captureLogger } from "./log-capture.js";

/** A writer for a test database with fast retries; its log lines are kept. */
export function writerFor(
  db: Pick<TestInfluxDb, "url" | "token" | "org" | "bucket">,
  overrides: Partial<InfluxWriterOptions> = {},
) {
  const { logger, lines } = captureLogger("debug");
  const writer = new InfluxWriter({
    url: db.url,
    token: db.token,
    org: db.org,
    bucket: db.bucket,
    batchSize: 5000,
    timeoutMs: 5000,
    retry: { retries: 2, baseDelayMs: 10, maxDelayMs: 50 },
    logger,
    ...overrides,
  });
  return { writer, logLines: lines };
}

/** The log entries (parsed JSON) of a captured logger whose `msg` is `msg`. */
export function logEntries(logLines: readonly string[], msg: string): Record<string, unknown>[] {
  return logLines
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((entry) => entry.msg === msg);
}

/** The warning InfluxWriter logs once per batch whose lines it narrowed down. */
export const REFUSED_LINES_LOG = "InfluxDB refused lines of a batch; the others are written";
