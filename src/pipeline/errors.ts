import { InfluxWriteError } from "../influx/write-errors.js";

/** A failure that no retry or other device can get past (InfluxDB token or bucket). */
export function isFatal(error: unknown): boolean {
  return error instanceof InfluxWriteError && error.fatal;
}

/** The message of an error, for logs and the runs table. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
