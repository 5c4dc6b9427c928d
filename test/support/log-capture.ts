import { Writable } from "node:stream";
import type { Logger } from "pino";
import { createLogger } from "../../src/logger.js";

/** A real pino logger whose lines are kept in memory, for asserting on log output. */
export function captureLogger(level: "debug" | "info" | "warn" = "debug"): {
  logger: Logger;
  lines: string[];
} {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, callback) {
      for (const line of chunk.toString("utf8").split("\n")) if (line) lines.push(line);
      callback();
    },
  });
  return { logger: createLogger(level, sink), lines };
}
