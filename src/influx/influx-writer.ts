import type { InfluxDB } from "@influxdata/influxdb-client";
import type { Logger } from "pino";
import { Deadline } from "../retry/deadline.js";
import {
  DEFAULT_RETRY_AFTER_MAX_MS,
  type RetryableFailure,
  type RetryPolicy,
} from "../retry/retry-policy.js";
import { retrying } from "../retry/retrying.js";
import { inBatches, type LineBatch, lineBatch, linesOf } from "../transform/line-protocol.js";
import { counted, excerpt } from "../util/text.js";
import { linkedSignal } from "../util/timers.js";
import { routeClientLogs } from "./client-logs.js";
import { checkInflux, type InfluxTarget } from "./influx-check.js";
import { influxClient, writePath } from "./influx-connection.js";
import {
  type BatchWork,
  type NarrowingWrites,
  narrowRefused,
  type Refusal,
} from "./narrow-refused.js";
import { type PointSink, type RejectedLine, storedOf, type WriteOutcome } from "./point-sink.js";
import { RequestBodies } from "./request-bodies.js";
import {
  abortedError,
  bucketMissing,
  credentialsRefused,
  droppedCount,
  type InfluxFailure,
  InfluxWriteError,
  readInfluxFailure,
  refusedWhole,
  retryAfterOverCap,
  writeDeadlinePassed,
  writeNotFound,
  writeRefused,
} from "./write-errors.js";

export interface InfluxWriterOptions extends InfluxTarget {
  /** Lines per HTTP request (default 5000). */
  readonly batchSize: number;
  /** INFLUX_DEADLINE_MS: one write() as a whole, every request (splits, narrowing) and wait. */
  readonly deadlineMs?: number;
  /** Longest Retry-After honoured; a longer one fails the write at once (default 10 min). */
  readonly retryAfterMaxMs?: number;
  /** Gzip request bodies (default false: on a LAN the CPU costs more than the bytes saved). */
  readonly gzip?: boolean;
  readonly retry: Omit<RetryPolicy, "retryAfterMaxMs">;
  readonly logger: Logger;
  /** Waits (default an abortable setTimeout); tests inject their own. */
  readonly sleep?: (ms: number) => Promise<void>;
}

/** Default of INFLUX_DEADLINE_MS: 15 minutes, above the Retry-After cap. */
export const DEFAULT_INFLUX_DEADLINE_MS = 900_000;

/** Bodies larger than this are gzipped when `gzip` is on (smaller ones gain nothing). */
const GZIP_THRESHOLD_BYTES = 1000;

/** One write() while it runs: its deadline (which abort() ends too) and what went wrong last. */
interface WriteRun {
  readonly deadline: Deadline;
  /** The last transient failure, for the deadline's message. */
  lastFailure?: string;
  /** True once InfluxDB took any line of the write (a refusal before it may fail it whole). */
  stored: boolean;
}

/** A failed request the retry policy decides on. */
interface TransientFailure extends RetryableFailure {
  readonly status?: number;
  /** `HTTP 503: ...`, or the transport's message. */
  readonly what: string;
  readonly retryAfter?: string;
}

/** One batch's bookkeeping (see {@link BatchWork}) and the write it belongs to. */
interface WriterWork extends BatchWork {
  readonly run: WriteRun;
}

/**
 * Writes line protocol to InfluxDB on the resolved api's path (`/api/v2/write`: 2.x, 3.x and 1.8+;
 * `/write?db=&rp=`: 1.x) with influxClient's credentials, in batches through
 * influxdb-client's transport; what each answer does (retried, split, narrowed down to the lines at
 * fault, refused whole) is docs/design.md, "Writing to InfluxDB". One write() ends by `deadlineMs`.
 */
export class InfluxWriter implements PointSink {
  readonly target: string;
  private readonly influx: InfluxDB;
  private readonly log: Logger;
  private readonly deadlineMs: number;
  private readonly policy: RetryPolicy;
  private readonly pending = new Set<Promise<WriteOutcome>>();
  private readonly bodies = new RequestBodies();
  private readonly writePath: string;
  /** Aborted by abort(), with its InfluxWriteError: every write and check follows it. */
  private readonly shutdown = new AbortController();

  constructor(private readonly options: InfluxWriterOptions) {
    this.influx = influxClient(options);
    this.log = options.logger.child({ component: "influx-writer" });
    this.deadlineMs = options.deadlineMs ?? DEFAULT_INFLUX_DEADLINE_MS;
    this.policy = {
      ...options.retry,
      retryAfterMaxMs: options.retryAfterMaxMs ?? DEFAULT_RETRY_AFTER_MAX_MS,
    };
    this.target = `InfluxDB ${options.url} bucket ${options.bucket}`;
    this.writePath = writePath(options.api, options);
    routeClientLogs(options.logger);
  }

  write(batch: LineBatch): Promise<WriteOutcome> {
    if (this.shutdown.signal.aborted) return Promise.reject(this.shutdown.signal.reason);
    const deadline = new Deadline(this.deadlineMs, () => performance.now(), [this.shutdown.signal]);
    const run: WriteRun = { deadline, stored: false };
    deadline.resume();
    const done = this.writeAll(batch, run)
      .catch((error: unknown) => {
        throw deadline.signal.aborted ? this.ended(run) : error;
      })
      .finally(() => deadline.finish());
    this.pending.add(done);
    const forget = () => this.pending.delete(done);
    done.then(forget, forget);
    return done;
  }

  async flush(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }

  /** Waits for the writes in progress (each ends by its deadline; at once after {@link abort}). */
  async close(): Promise<void> {
    await this.flush();
  }

  /**
   * Ends every request in flight; pending and later writes and checks reject as `aborted` (fatal).
   */
  abort(reason = "the InfluxDB writer was aborted"): void {
    if (!this.shutdown.signal.aborted) this.shutdown.abort(abortedError(reason));
  }

  /** The start-up check again (see checkInflux), ended by `signal` or {@link abort} too. */
  async check(signal?: AbortSignal): Promise<void> {
    const shutdown = this.shutdown.signal;
    if (shutdown.aborted) throw shutdown.reason;
    const ended = linkedSignal([shutdown, signal]);
    try {
      await checkInflux(this.options, ended.signal);
    } finally {
      ended.release();
    }
  }

  private async writeAll(all: LineBatch, run: WriteRun): Promise<WriteOutcome> {
    const size = Math.max(1, this.options.batchSize);
    const rejected: RejectedLine[] = [];
    const batches = all.lines <= size ? [all] : inBatches(all, size);
    for (const batch of batches) {
      if (batch.lines === 0) continue;
      const work: WriterWork = {
        run,
        lines: batch.lines,
        requests: 0,
        narrowed: false,
        rejected: [],
      };
      await this.writeBatch(batch, work).catch((error: unknown) => {
        this.logRefusedWhole(error, work);
        throw error;
      });
      if (work.narrowed || work.rejected.length > 0) this.logRefused(batch.lines, work);
      for (const line of work.rejected) rejected.push(line);
    }
    return { written: storedOf(all.lines, rejected), rejected };
  }

  /** One batch, retried when the failure is transient, halved on 413, narrowed on 400/422. */
  private async writeBatch(batch: LineBatch, work: WriterWork): Promise<void> {
    const refusal = await this.sendRetried(batch, work);
    if (refusal !== undefined) await this.refused(linesOf(batch), refusal, work);
  }

  /** Lines refused: halved on 413 (one line too large fails the write), narrowed on 400/422. */
  private async refused(lines: readonly string[], refusal: Refusal, work: WriterWork) {
    if (refusal.status !== 413) {
      await narrowRefused(lines, refusal, work, this.narrowing);
      return;
    }
    if (lines.length === 1) {
      // no line of ours is that large: a limit in front of InfluxDB, which refuses every write
      throw refusedWhole(refusal, work.lines, "a single line is too large");
    }
    const half = Math.ceil(lines.length / 2);
    this.log.warn({ lines: lines.length }, "batch too large for InfluxDB (413), splitting it");
    await this.writeBatch(lineBatch(lines.slice(0, half)), work);
    await this.writeBatch(lineBatch(lines.slice(half)), work);
  }

  /** How narrowing writes: batches of lines, sent as any batch or once. */
  private readonly narrowing: NarrowingWrites<WriterWork> = {
    write: (lines, work) => this.writeBatch(lineBatch(lines), work),
    send: (lines, work) => this.sendRetried(lineBatch(lines), work),
    refused: (lines, refusal, work) => this.refused(lines, refusal, work),
    stored: (work) => work.run.stored,
  };

  /**
   * Sends a batch until stored (undefined) or refused whole (413/400/422, for the caller to split).
   */
  private sendRetried(batch: LineBatch, work: WriterWork): Promise<Refusal | undefined> {
    const { run } = work;
    return retrying<Refusal | undefined, TransientFailure>(
      async () => {
        work.requests++;
        const failure = await this.send(batch, run);
        if (!failure) {
          run.stored = true;
          return { ok: true, value: undefined };
        }
        const { status } = failure;
        if (status === 400 || status === 413 || status === 422) {
          // a partial write: InfluxDB took the lines it did not count as dropped
          if ((droppedCount(failure) ?? batch.lines) < batch.lines) run.stored = true;
          return { ok: true, value: { ...failure, status } };
        }
        const transient = this.transient(failure, batch.lines);
        run.lastFailure = transient.what;
        return { ok: false, failure: transient };
      },
      {
        policy: this.policy,
        deadline: run.deadline,
        sleep: this.options.sleep,
        giveUp: (failure, why, retries) => {
          if (why.reason === "retry-after-over-cap") {
            const error = retryAfterOverCap(failure, this.policy.retryAfterMaxMs, batch.lines);
            const { status, retryAfterMs } = failure;
            this.log.warn({ status, retryAfterMs, lines: batch.lines }, error.message);
            return error;
          }
          if (why.reason === "past-deadline") return this.deadlinePassed(run);
          return new InfluxWriteError(
            `InfluxDB write failed after ${counted(retries + 1, "attempt")} (${failure.what})`,
            "unavailable",
            failure.status,
          );
        },
        beforeRetry: (failure, delayMs, attempt) =>
          this.log.warn(
            { status: failure.status, attempt, delayMs, lines: batch.lines, error: failure.what },
            "write failed, retrying",
          ),
      },
    );
  }

  /**
   * 401/403/404 and other 4xx are thrown as final; 429, 5xx and network failures go to the policy.
   */
  private transient(failure: InfluxFailure, lines: number): TransientFailure {
    const { status } = failure;
    const { api, bucket } = this.options;
    if (status === 401 || status === 403)
      throw credentialsRefused(api, status, bucket, this.options);
    if (bucketMissing(failure)) throw writeNotFound(api, this.options, failure);
    if (status !== undefined && status >= 400 && status < 500 && status !== 429) {
      this.log.error(
        { status, lines, error: failure.message },
        "InfluxDB refused the write request",
      );
      throw writeRefused(failure.message, status, lines);
    }
    return {
      retryable: true,
      status,
      what: status === undefined ? failure.message : `HTTP ${status}: ${failure.message}`,
      retryAfterMs: failure.retryAfterMs,
      retryAfter: failure.retryAfter,
    };
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
          firstRejected: excerpt(first.line),
          error: first.error,
        }),
      },
      "InfluxDB refused lines of a batch; the others are written",
    );
  }

  /** One warning per write refused as a whole, with the requests it took to know. */
  private logRefusedWhole(error: unknown, work: WriterWork): void {
    if (!(error instanceof InfluxWriteError) || error.code !== "refused") return;
    const { status, message } = error;
    const context = { status, lines: work.lines, requests: work.requests, error: message };
    this.log.warn(context, "InfluxDB refused a write as a whole");
  }

  private deadlinePassed(run: WriteRun): InfluxWriteError {
    return writeDeadlinePassed(this.deadlineMs, run.lastFailure);
  }

  /** The error of a write ended from outside: abort() (its own error), or the deadline. */
  private ended(run: WriteRun): InfluxWriteError {
    const reason: unknown = run.deadline.signal.reason;
    return reason instanceof InfluxWriteError ? reason : this.deadlinePassed(run);
  }

  /** Sends one batch; resolves with the failure, if any (a refused or failed request). */
  private async send(batch: LineBatch, run: WriteRun): Promise<InfluxFailure | undefined> {
    const { signal } = run.deadline;
    if (signal.aborted) throw this.ended(run);
    // a signal per request: the transport adds an abort listener per request and never removes
    // it, so the write's own signal would collect one listener (and its body) per retry
    const request = linkedSignal([signal]);
    // a batch's bytes go out as they are, never decoded into a string and encoded again
    const body = this.bodies.body(batch.bytes);
    try {
      const answer = this.influx.transport.iterate(this.writePath, body, {
        method: "POST",
        headers: { "content-type": "text/plain; charset=utf-8" },
        gzipThreshold: this.options.gzip ? GZIP_THRESHOLD_BYTES : undefined,
        signal: request.signal,
      });
      for await (const _ of answer) {
        // nothing to read: the answer to a write is empty
      }
      this.bodies.reuse(body);
      return undefined;
    } catch (error) {
      if (signal.aborted) throw this.ended(run);
      return readInfluxFailure(error);
    } finally {
      request.release();
    }
  }
}
