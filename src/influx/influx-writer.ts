import { InfluxDB, setLogger, type WriteApi } from "@influxdata/influxdb-client";
import type { Logger } from "pino";
import { computeRetryDelay, type RetryPolicy } from "../util/retry-delay.js";
import { checkInflux } from "./influx-check.js";
import type { PointSink } from "./point-sink.js";
import {
  bucketMissing,
  excerptOf,
  InfluxWriteError,
  readInfluxFailure,
  tokenRefused,
} from "./write-errors.js";

/** Where and how to write. */
export interface InfluxWriterOptions {
  readonly url: string;
  readonly token: string;
  readonly org: string;
  /** Bucket (InfluxDB 2.x/3.x) or `database[/retention-policy]` (1.8). */
  readonly bucket: string;
  /** Lines per HTTP request (default 5000). */
  readonly batchSize: number;
  readonly timeoutMs: number;
  /** Gzip request bodies (default false: on a LAN the CPU costs more than the bytes saved). */
  readonly gzip?: boolean;
  readonly retry: RetryPolicy;
  readonly logger: Logger;
  /** Waits (default setTimeout); tests inject their own. */
  readonly sleep?: (ms: number) => Promise<void>;
}

const defaultSleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Writes line protocol to InfluxDB through @influxdata/influxdb-client's WriteApi (`/api/v2/write`:
 * InfluxDB 2.x, 3.x and 1.8+), in batches, with failures classified as Telegraf does: 413 splits
 * the batch, 400/422 fail it as bad data, 401/403/404 are fatal, 429/5xx/network are retried with
 * backoff (never sooner than Retry-After). The client's own retry buffer is off (maxRetries 0): a
 * batch is either accepted or its error reaches the caller.
 */
export class InfluxWriter implements PointSink {
  readonly target: string;
  private readonly influx: InfluxDB;
  private readonly log: Logger;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly pending = new Set<Promise<void>>();
  private accepted = 0;

  constructor(private readonly options: InfluxWriterOptions) {
    this.influx = new InfluxDB({
      url: options.url,
      token: options.token,
      timeout: options.timeoutMs,
    });
    this.log = options.logger.child({ component: "influx-writer" });
    this.sleep = options.sleep ?? defaultSleep;
    this.target = `InfluxDB ${options.url} bucket ${options.bucket}`;
    routeClientLogs(options.logger);
  }

  /** Lines InfluxDB has accepted so far (only batches it answered 2xx count). */
  get linesWritten(): number {
    return this.accepted;
  }

  write(lines: readonly string[]): Promise<void> {
    const done = this.writeAll(lines);
    this.pending.add(done);
    const forget = (): void => {
      this.pending.delete(done);
    };
    done.then(forget, forget);
    return done;
  }

  async flush(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }

  async close(): Promise<void> {
    await this.flush();
  }

  /** The start-up check again: reachable, token accepted, bucket present. */
  check(): Promise<void> {
    return checkInflux(this.options);
  }

  private async writeAll(lines: readonly string[]): Promise<void> {
    const size = Math.max(1, this.options.batchSize);
    for (let i = 0; i < lines.length; i += size) {
      await this.writeBatch(lines.slice(i, i + size));
    }
  }

  /** One batch, retried when the failure is transient, halved on 413. */
  private async writeBatch(lines: string[]): Promise<void> {
    const { retry } = this.options;
    for (let attempt = 1; ; attempt++) {
      const failure = await this.send(lines);
      if (!failure) {
        this.accepted += lines.length;
        return;
      }
      const { status } = failure;
      if (status === 413) {
        if (lines.length === 1) {
          throw this.badData(failure.message, status, lines);
        }
        const half = Math.ceil(lines.length / 2);
        this.log.warn({ lines: lines.length }, "batch too large for InfluxDB (413), splitting it");
        await this.writeBatch(lines.slice(0, half));
        await this.writeBatch(lines.slice(half));
        return;
      }
      if (status === 401 || status === 403) throw tokenRefused(status, this.options.bucket);
      if (status === 404) throw bucketMissing(this.options.bucket, failure.message);
      if (status !== undefined && status >= 400 && status < 500 && status !== 429) {
        throw this.badData(failure.message, status, lines);
      }
      const what = status === undefined ? failure.message : `HTTP ${status}: ${failure.message}`;
      if (attempt > retry.retries) {
        throw new InfluxWriteError(
          `InfluxDB write failed after ${attempt} attempts (${what})`,
          "unavailable",
          status,
        );
      }
      const delayMs = computeRetryDelay(attempt, retry, failure.retryAfterMs);
      this.log.warn(
        { status, attempt, delayMs, lines: lines.length, error: what },
        "write failed, retrying",
      );
      await this.sleep(delayMs);
    }
  }

  private badData(message: string, status: number, lines: readonly string[]): InfluxWriteError {
    const first = lines[0] ?? "";
    this.log.error(
      { status, lines: lines.length, firstLine: excerptOf(first), error: message },
      "InfluxDB rejected the data",
    );
    return new InfluxWriteError(
      `InfluxDB rejected ${lines.length} lines as bad data (HTTP ${status}: ${excerptOf(message)})`,
      "bad_data",
      status,
    );
  }

  /** Sends one batch through a fresh WriteApi; resolves with the failure, if any. */
  private async send(lines: string[]) {
    const api: WriteApi = this.influx.getWriteApi(this.options.org, this.options.bucket, "s", {
      batchSize: lines.length + 1,
      maxBufferLines: lines.length + 1,
      flushInterval: 0,
      maxRetries: 0,
      gzipThreshold: this.options.gzip ? 1000 : Number.MAX_SAFE_INTEGER,
      writeFailed: () => undefined,
    });
    api.writeRecords(lines);
    try {
      await api.close();
      return undefined;
    } catch (error) {
      return readInfluxFailure(error);
    }
  }
}

let clientLogsRouted = false;

/** Sends the client library's own messages to pino (at debug) instead of the console. */
function routeClientLogs(logger: Logger): void {
  if (clientLogsRouted) return;
  clientLogsRouted = true;
  const log = logger.child({ component: "influxdb-client" });
  setLogger({
    error: (message: string) => log.debug(message),
    warn: (message: string) => log.debug(message),
  });
}
