/** Rows of the state database (SQLite at STATE_DB). Times: epoch seconds for data windows, ISO strings for bookkeeping. */

/** How far a device's resource is synced: every record at or before `syncedUntilS` is in the sink. */
export interface Watermark {
  readonly deviceId: string;
  readonly resourceId: string;
  readonly syncedUntilS: number;
  readonly updatedAt: string;
}

/** A value id as seen in GET /<device>/<resource>/values. */
export interface CatalogEntry {
  readonly deviceId: string;
  readonly resourceId: string;
  readonly valueId: string;
  readonly firstSeen: string;
  readonly lastSeen: string;
}

export type BackfillStatus = "pending" | "running" | "done" | "failed";

/** Why a backfill job exists. */
export type BackfillReason = "manual" | "new_value";

/** What a backfill job covers; the same spec gives the same key, so a re-run continues the job. */
export interface BackfillSpec {
  readonly deviceId: string;
  readonly resourceId: string;
  /** Sorted value ids (never values_id). */
  readonly valueIds: readonly string[];
  readonly fromS: number;
  readonly toS: number;
  readonly reason: BackfillReason;
}

export interface BackfillJob extends BackfillSpec {
  readonly id: number;
  readonly key: string;
  readonly status: BackfillStatus;
  readonly chunksTotal: number;
  readonly chunksDone: number;
  readonly points: number;
  readonly requests: number;
  readonly lastError: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export type RunKind = "sync" | "backfill";
export type RunStatus = "running" | "ok" | "partial" | "failed" | "interrupted";

/** Counters of a finished run. */
export interface RunSummary {
  readonly status: Exclude<RunStatus, "running">;
  readonly devices: number;
  readonly requests: number;
  readonly points: number;
  readonly errors: number;
  /** Free-form JSON detail (e.g. per-device errors), or null. */
  readonly detail: string | null;
}

export interface RunRecord extends Partial<Omit<RunSummary, "status">> {
  readonly id: number;
  readonly kind: RunKind;
  readonly startedAt: string;
  readonly endedAt: string | null;
  readonly status: RunStatus;
}
