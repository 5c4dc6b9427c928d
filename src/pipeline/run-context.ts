import type { Logger } from "pino";
import { ApiError } from "../api/errors.js";
import { InfluxWriteError } from "../influx/write-errors.js";
import type { RunKind } from "../state/types.js";
import { messageOf } from "../util/errors.js";
import type { ChunkResult } from "./chunk-writer.js";
import { isRefusal } from "./errors.js";

/** What one run (a sync or a backfill) counts, at zero; its own, never shared with another run. */
export function emptyCounters() {
  return {
    /** HTTP attempts to the API (catalog and data, retries included). */
    requests: 0,
    /** GET /data answers received in full. */
    dataRequests: 0,
    /** Devices whose resources and value lists were read from the API. */
    catalogReads: 0,
    /** Lines the sink accepted. */
    points: 0,
    chunks: 0,
    chunkErrors: 0,
    /** Chunks whose write InfluxDB refused as a whole (none of its lines taken). */
    refusedWrites: 0,
    /** New dead letters (rows that failed validation, lines InfluxDB refused). */
    deadLetters: 0,
    /** Members dropped because they were not requested. */
    droppedMembers: 0,
    /** Rows dropped because they lay outside the requested window. */
    droppedRows: 0,
    /** Repeated (timestamp, values_id) rows of one answer collapsed to the first. */
    duplicateRows: 0,
  };
}

export type RunCounters = ReturnType<typeof emptyCounters>;

/** One run's id (in the runs table), logger (with `run` and `kind` bound) and counters. */
export class RunContext {
  readonly counters: RunCounters = emptyCounters();

  constructor(
    readonly id: number,
    readonly kind: RunKind,
    readonly logger: Logger,
  ) {}

  /** A chunk was written: what its result says counts in the run. */
  countChunk(result: ChunkResult): void {
    const c = this.counters;
    c.requests += result.requests;
    c.dataRequests++;
    c.chunks++;
    c.points += result.points;
    c.deadLetters += result.newDeadLetters;
    c.droppedMembers += result.dropped.extraMembers;
    c.droppedRows += result.dropped.outOfWindow;
    c.duplicateRows += result.dropped.duplicates;
  }

  /** Chunk failures by cause: the first is logged whole, the others counted. */
  private readonly failures = new Map<string, { count: number; example: string }>();

  /**
   * A chunk failed: the first failure of a cause (the API down, a token refused, …) is one error
   * line; the same cause again is a debug line, counted for {@link reportFailures}.
   */
  chunkFailed(context: Record<string, unknown>, error: unknown, answeredRequests = 0): void {
    this.counters.chunkErrors++;
    if (isRefusal(error)) this.counters.refusedWrites++;
    // the attempts of a failed request travel with its error; a chunk whose write (or answer)
    // failed after the API answered made the answer's requests
    this.counters.requests +=
      error instanceof ApiError && error.attempts !== undefined ? error.attempts : answeredRequests;
    const cause = causeOf(error);
    const seen = this.failures.get(cause);
    if (seen) {
      seen.count++;
      this.logger.debug({ ...context, error: messageOf(error) }, "chunk failed");
      return;
    }
    this.failures.set(cause, { count: 1, example: messageOf(error) });
    this.logger.error({ ...context, error: messageOf(error) }, "chunk failed");
  }

  /** One line per cause that failed more than one chunk, with the count. */
  reportFailures(): void {
    for (const [cause, { count, example }] of this.failures) {
      if (count > 1) {
        this.logger.error({ cause, chunks: count, error: example }, "chunks failed for one cause");
      }
    }
  }

  /** A run context with `run` and `kind` bound to a child of `logger`. */
  static create(id: number, kind: RunKind, logger: Logger): RunContext {
    return new RunContext(id, kind, logger.child({ run: id, kind }));
  }
}

/** What makes failures "the same": the error's class and code (not its device or window). */
function causeOf(error: unknown): string {
  if (error instanceof ApiError) return `api:${error.code}:${error.status ?? ""}`;
  if (error instanceof InfluxWriteError) return `influx:${error.code}:${error.status ?? ""}`;
  return `other:${messageOf(error)}`;
}
