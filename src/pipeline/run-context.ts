import type { Logger } from "pino";
import type { CallOptions } from "../api/client.js";
import type { RunKind } from "../state/types.js";

/** What one run (a sync or a backfill) counts; its own, never shared with another run. */
export interface RunCounters {
  /** HTTP attempts to the API (catalog and data, retries included). */
  requests: number;
  /** GET /data answers received in full. */
  dataRequests: number;
  /** Devices whose resources and value lists were read from the API. */
  catalogReads: number;
  /** Lines the sink accepted. */
  points: number;
  chunks: number;
  chunkErrors: number;
  /** New dead letters (rows that failed validation, lines InfluxDB refused). */
  deadLetters: number;
  /** Members dropped because they were not requested. */
  droppedMembers: number;
  /** Rows dropped because they lay outside the requested window. */
  droppedRows: number;
  /** Repeated (timestamp, values_id) rows of one answer collapsed to the first. */
  duplicateRows: number;
}

/** Counters at zero. */
export function emptyCounters(): RunCounters {
  return {
    requests: 0,
    dataRequests: 0,
    catalogReads: 0,
    points: 0,
    chunks: 0,
    chunkErrors: 0,
    deadLetters: 0,
    droppedMembers: 0,
    droppedRows: 0,
    duplicateRows: 0,
  };
}

/**
 * One owner per run: its id (in the runs table), its logger (with `run` and `kind` bound) and its
 * counters. Passed to the functions that do the run's work; the API calls they make count here.
 */
export class RunContext {
  readonly counters: RunCounters = emptyCounters();
  /** Call options that count this run's HTTP attempts. */
  readonly calls: CallOptions = {
    onAttempt: () => {
      this.counters.requests++;
    },
  };

  constructor(
    readonly id: number,
    readonly kind: RunKind,
    readonly logger: Logger,
  ) {}

  /** A run context with `run` and `kind` bound to a child of `logger`. */
  static create(id: number, kind: RunKind, logger: Logger): RunContext {
    return new RunContext(id, kind, logger.child({ run: id, kind }));
  }
}

/**
 * A finished run's status: `failed` after a fatal error or when every part (device, job) failed,
 * `interrupted` when stopped by a signal, `partial` when some part failed, else `ok`.
 */
export function runStatus(run: {
  readonly fatal: boolean;
  readonly stopping: boolean;
  readonly parts: number;
  readonly failed: number;
}): "ok" | "partial" | "failed" | "interrupted" {
  if (run.fatal) return "failed";
  if (run.stopping) return "interrupted";
  if (run.parts > 0 && run.failed >= run.parts) return "failed";
  return run.failed > 0 ? "partial" : "ok";
}
