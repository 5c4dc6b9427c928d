import type { LineBatch } from "../transform/line-protocol.js";

/** A line InfluxDB refused for good, or one of a group a partial write dropped some of unnamed. */
export interface RejectedLine {
  readonly line: string;
  /** The HTTP status InfluxDB answered (400, 413 or 422). */
  readonly status: number;
  readonly error: string;
  /** Of its group, the share InfluxDB dropped (the others were stored); absent: this line was. */
  readonly droppedShare?: number;
}

/** What a write did: every line not in `rejected` is stored. */
export interface WriteOutcome {
  readonly written: number;
  readonly rejected: readonly RejectedLine[];
}

/** Of `lines` written, how many were stored: all but the rejected, of a mixed group its share. */
export function storedOf(lines: number, rejected: readonly RejectedLine[]): number {
  let dropped = 0;
  for (const r of rejected) dropped += r.droppedShare ?? 1;
  return lines - Math.round(dropped);
}

export interface WriteOptions {
  /** Send it now, with whatever waits (for a caller that reads the lines back next: rollups). */
  readonly now?: boolean;
}

/** Where points go: InfluxDB or a line-protocol file; lines with second precision. */
export interface PointSink {
  /** Where the points go, for logs and summaries (never contains a secret). */
  readonly target: string;
  /**
   * Writes a batch. Resolves once every line is stored or refused for good (those in `rejected`:
   * never retried; one bad line never fails the others). Rejects with an InfluxWriteError when the
   * write failed as a whole (token, bucket, target unavailable): then writing it again is safe.
   */
  write(batch: LineBatch, options?: WriteOptions): Promise<WriteOutcome>;
  /** Resolves once every write started before it has settled: the commit point. */
  flush(): Promise<void>;
  /** Waits for the writes in progress (each bounded in time), then releases the target. */
  close(): Promise<void>;
  /** Shutdown: ends requests in flight; pending and later writes reject (`aborted: <reason>`). */
  abort?(reason?: string): void;
  /** Readiness: rejects with a one-line reason when the target cannot take writes now. */
  check?(signal?: AbortSignal): Promise<void>;
}
