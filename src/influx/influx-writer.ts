import { InfluxDB, setLogger, type WriteApi } from "@influxdata/influxdb-client";
import type { Logger } from "pino";
import { computeRetryDelay, type RetryPolicy } from "../util/retry-delay.js";
import { checkInflux } from "./influx-check.js";
import type { PointSink, RejectedLine, WriteOutcome } from "./point-sink.js";
import {
  bucketMissing,
  everyPointDropped,
  excerptOf,
  type InfluxFailure,
  InfluxWriteError,
  namedRefusals,
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

/** One batch's bookkeeping while it is written and, if need be, narrowed down. */
interface BatchWork {
  /** HTTP requests sent for the batch so far (retries, 413 splits and narrowing included). */
  requests: number;
  /** True once a 400/422 made the writer narrow the batch down. */
  narrowed: boolean;
  readonly rejected: RejectedLine[];
}

/**
 * Writes line protocol to InfluxDB through @influxdata/influxdb-client's WriteApi (`/api/v2/write`:
 * InfluxDB 2.x, 3.x and 1.8+), in batches, with failures classified as Telegraf does, except that
 * one bad line never fails the others:
 * - 400/422 (unparsable line, point beyond the retention policy, field type conflict): the batch is
 *   narrowed down to the lines at fault, which come back as {@link RejectedLine}s while every
 *   other line is written. Lines the answer names (`unable to parse '<line>'`, 3.x `data`) are
 *   taken out at once and the rest is sent again; an answer saying every point was dropped rejects
 *   the whole batch; otherwise the batch is bisected (its halves written, recursively), which costs
 *   at most 2·log2(n)+1 requests for one bad line in n. Good lines of a partial write may be
 *   written twice (same series and timestamp: the point is overwritten, not doubled). One warning
 *   per narrowed batch says how many lines were refused and how many requests it took.
 * - 413: the batch is halved until it fits; a single line still too large is a RejectedLine.
 * - 401/403/404 reject the write (fatal); 429/5xx/network are retried with backoff (never sooner
 *   than Retry-After), then reject it as `unavailable`; any other 4xx rejects it as `bad_data`.
 *
 * The client's own retry buffer is off (maxRetries 0): every request's answer reaches this class.
 */
export class InfluxWriter implements PointSink {
  readonly target: string;
  private readonly influx: InfluxDB;
  private readonly log: Logger;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly pending = new Set<Promise<WriteOutcome>>();
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

  /** Lines InfluxDB has accepted so far (rejected lines never count; a rewritten line counts once). */
  get linesWritten(): number {
    return this.accepted;
  }

  /** See {@link PointSink.write} and the class comment for how failures are handled. */
  write(lines: readonly string[]): Promise<WriteOutcome> {
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

  private async writeAll(lines: readonly string[]): Promise<WriteOutcome> {
    const size = Math.max(1, this.options.batchSize);
    const rejected: RejectedLine[] = [];
    for (let i = 0; i < lines.length; i += size) {
      const batch = lines.slice(i, i + size);
      const work: BatchWork = { requests: 0, narrowed: false, rejected: [] };
      await this.writeBatch(batch, work);
      if (work.narrowed || work.rejected.length > 0) this.logRefused(batch.length, work);
      for (const line of work.rejected) rejected.push(line);
    }
    return { written: lines.length - rejected.length, rejected };
  }

  /** One batch, retried when the failure is transient, halved on 413, narrowed on 400/422. */
  private async writeBatch(lines: string[], work: BatchWork): Promise<void> {
    const { retry } = this.options;
    for (let attempt = 1; ; attempt++) {
      work.requests++;
      const failure = await this.send(lines);
      if (!failure) {
        this.accepted += lines.length;
        return;
      }
      const { status } = failure;
      if (status === 413) {
        if (lines.length === 1) {
          this.rejectAll(lines, status, failure.message, work);
          return;
        }
        const half = Math.ceil(lines.length / 2);
        this.log.warn({ lines: lines.length }, "batch too large for InfluxDB (413), splitting it");
        await this.writeBatch(lines.slice(0, half), work);
        await this.writeBatch(lines.slice(half), work);
        return;
      }
      if (status === 400 || status === 422) {
        await this.narrow(lines, { ...failure, status }, work);
        return;
      }
      if (status === 401 || status === 403) throw tokenRefused(status, this.options.bucket);
      if (status === 404) throw bucketMissing(this.options.bucket, failure.message);
      if (status !== undefined && status >= 400 && status < 500 && status !== 429) {
        throw this.refused(failure.message, status, lines);
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

  /**
   * A 400/422 for `lines`: finds the lines at fault and writes the others. A single line is
   * refused for good; lines the answer names are taken out and the rest sent again; an answer
   * that every point was dropped refuses them all; otherwise both halves are written in turn.
   */
  private async narrow(
    lines: string[],
    failure: InfluxFailure & { readonly status: number },
    work: BatchWork,
  ): Promise<void> {
    const { status } = failure;
    if (lines.length === 1) {
      this.rejectAll(lines, status, failure.message, work);
      return;
    }
    work.narrowed = true;
    const named = namedRefusals(failure, new Set(lines));
    if (named.size > 0) {
      const rest: string[] = [];
      for (const line of lines) {
        const error = named.get(line);
        if (error === undefined) rest.push(line);
        else work.rejected.push({ line, status, error: excerptOf(error) });
      }
      if (rest.length > 0) await this.writeBatch(rest, work);
      return;
    }
    if (everyPointDropped(failure, lines.length)) {
      this.rejectAll(lines, status, failure.message, work);
      return;
    }
    const half = Math.ceil(lines.length / 2);
    await this.writeBatch(lines.slice(0, half), work);
    await this.writeBatch(lines.slice(half), work);
  }

  private rejectAll(lines: readonly string[], status: number, message: string, work: BatchWork) {
    const error = excerptOf(message);
    for (const line of lines) work.rejected.push({ line, status, error });
  }

  /** One warning per batch that had refused lines (never one per line). */
  private logRefused(lines: number, work: BatchWork): void {
    const first = work.rejected[0];
    this.log.warn(
      {
        lines,
        rejected: work.rejected.length,
        requests: work.requests,
        ...(first && {
          status: first.status,
          firstRejected: excerptOf(first.line),
          error: first.error,
        }),
      },
      "InfluxDB refused lines of a batch; the others are written",
    );
  }

  private refused(message: string, status: number, lines: readonly string[]): InfluxWriteError {
    this.log.error(
      { status, lines: lines.length, error: message },
      "InfluxDB refused the write request",
    );
    return new InfluxWriteError(
      `InfluxDB refused a write of ${lines.length} lines (HTTP ${status}: ${excerptOf(message)})`,
      "bad_data",
      status,
    );
  }

  /** Sends one batch through a fresh WriteApi; resolves with the failure, if any. */
  private async send(lines: string[]): Promise<InfluxFailure | undefined> {
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
