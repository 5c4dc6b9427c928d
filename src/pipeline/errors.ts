import { InfluxWriteError } from "../influx/write-errors.js";

/** A failure that no retry or other device can get past (InfluxDB token or bucket). */
export function isFatal(error: unknown): boolean {
  return error instanceof InfluxWriteError && error.fatal;
}
