import type { LineBatch } from "../transform/line-protocol.js";

/**
 * A line InfluxDB refused for good (400/422 once narrowed down to that line alone), or one of a
 * group of which a partial write dropped some without naming them (narrowing stopped there).
 */
export interface RejectedLine {
  readonly line: string;
  /** The HTTP status InfluxDB answered (400, 413 or 422). */
  readonly status: number;
  /** InfluxDB's message, on one line and cut to about 200 characters. */
  readonly error: string;
  /** Of its group, the share InfluxDB dropped (the others were stored); absent: this line was. */
  readonly droppedShare?: number;
}

/** What a write did: every line not in `rejected` is stored. */
export interface WriteOutcome {
  /** Lines stored (see {@link storedOf}). */
  readonly written: number;
  readonly rejected: readonly RejectedLine[];
}

/** Of `lines` written, how many were stored: all but the rejected, of a mixed group its share. */
export function storedOf(lines: number, rejected: readonly RejectedLine[]): number {
  let dropped = 0;
  for (const r of rejected) dropped += r.droppedShare ?? 1;
  return lines - Math.round(dropped);
}

/** How a write goes out. */
export interface WriteOptions {
  /**
   * Send it now, with whatever waits to go out: a caller that reads the lines back next (the
   * rollups) must not wait for a coalescing sink's linger. Sinks that never hold a write ignore it.
   */
  readonly now?: boolean;
}

/**
 * Where points go: InfluxDB ({@link InfluxWriter}) or a line-protocol file
 * ({@link LineProtocolFileSink}). Lines are InfluxDB line protocol with second precision.
 */
export interface PointSink {
  /** Where the points go, for logs and summaries (never contains a secret). */
  readonly target: string;
  /**
   * Writes a batch of lines. Resolves once every line is either stored or refused for good: lines the target
   * refuses on their own (unparsable, beyond the retention policy, a field type conflict, too
   * large) come back in `rejected` and must not be retried; one bad line never fails the others.
   * Rejects with an InfluxWriteError when the write failed for reasons that are not about
   * particular lines (token, bucket, target unavailable after retries); then none of the lines is
   * reported written, and writing them again later is safe.
   */
  write(batch: LineBatch, options?: WriteOptions): Promise<WriteOutcome>;
  /** Resolves once every write started before it has settled: the commit point. */
  flush(): Promise<void>;
  /** Waits for the writes in progress (each bounded in time), then releases the target. */
  close(): Promise<void>;
  /**
   * Shutdown: ends requests in flight at once; pending and later writes reject with an
   * InfluxWriteError `aborted: <reason>` (code `unavailable`, fatal). `close()` after it resolves
   * promptly. Safe to call more than once.
   */
  abort?(reason?: string): void;
  /**
   * Readiness: rejects with a one-line reason when the target cannot take writes now. Bounded in
   * time; `signal` ends it at once.
   */
  check?(signal?: AbortSignal): Promise<void>;
}
