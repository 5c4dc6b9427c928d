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
