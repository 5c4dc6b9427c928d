import { InfluxDB } from "@influxdata/influxdb-client";
import {
  bucketMissing,
  InfluxWriteError,
  readInfluxFailure,
  tokenRefused,
} from "./write-errors.js";

/** The connection settings the start-up check needs. */
export interface InfluxTarget {
  readonly url: string;
  readonly token: string;
  readonly org: string;
  readonly bucket: string;
  readonly timeoutMs: number;
}

/**
 * Start-up check: InfluxDB reachable (`GET /ping`), token accepted and bucket present (a write of
 * zero lines, which InfluxDB 1.8, 2.x and 3.x answer 204 after checking both). Each failure is an
 * InfluxWriteError with a one-line message that says what to fix.
 */
export async function checkInflux(target: InfluxTarget): Promise<void> {
  const influx = new InfluxDB({ url: target.url, token: target.token, timeout: target.timeoutMs });
  try {
    await influx.transport.request("/ping", "", { method: "GET" });
  } catch (error) {
    const failure = readInfluxFailure(error);
    throw new InfluxWriteError(
      `InfluxDB at ${target.url} is not reachable (${failure.status ? `HTTP ${failure.status}` : failure.message}): ` +
        "check INFLUX_URL and that InfluxDB is running",
      "unavailable",
      failure.status,
    );
  }
  const query = new URLSearchParams({ org: target.org, bucket: target.bucket, precision: "s" });
  try {
    await influx.transport.request(`/api/v2/write?${query}`, "", {
      method: "POST",
      headers: { "content-type": "text/plain; charset=utf-8" },
    });
  } catch (error) {
    const failure = readInfluxFailure(error);
    if (failure.status === 401 || failure.status === 403)
      throw tokenRefused(failure.status, target.bucket);
    if (failure.status === 404) throw bucketMissing(target.bucket, failure.message);
    throw new InfluxWriteError(
      `InfluxDB at ${target.url} failed the write check (${failure.status ? `HTTP ${failure.status}: ` : ""}${failure.message})`,
      "unavailable",
      failure.status,
    );
  }
}
