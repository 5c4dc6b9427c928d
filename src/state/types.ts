/** Rows of the state database. Times: epoch seconds for data and schedules, ISO for bookkeeping. */

/** Where a device's resource stands, from what its data says (README "Cursors"). */
export interface Cursor {
  readonly deviceId: string;
  readonly resourceId: string;
  /** The newest record timestamp written, capped at the API's clock; undefined until one came. */
  readonly newestRecordS?: number;
  /** End of the last fully fetched window, capped at the API's clock. */
  readonly fetchedUntilS: number;
  /** Where the cursor began (SYNC_START at its first sync). */
  readonly startedS: number;
  /** Set while the resource is silent: it is probed, not fetched, and not before this time. */
  readonly nextProbeS?: number;
  /** Failed attempts in a row (reset by a success). */
  readonly failures: number;
  /** Windows up to here were parked as jobs after failing on their own: no sync reads them. */
  readonly parkedUntilS?: number;
  /** After a failure: no new attempt before this time. */
  readonly retryAtS?: number;
  readonly lastError?: string;
  /** When a sync last re-read the lookback and committed it (by the API's clock). */
  readonly lookedBackS?: number;
  readonly updatedAt: string;
}

/** What the cursor rules move of a cursor (pipeline/cursor.ts); its key and start stay. */
export type CursorState = Omit<Cursor, "deviceId" | "resourceId" | "startedS" | "updatedAt">;

/** `failed`: waits for `nextAttemptS`; `parked`: failed too often, left for an operator. */
export type BackfillStatus = "pending" | "running" | "done" | "failed" | "parked";

/**
 * Why a backfill job exists: `manual` (backfill), `new_value` (history of a value that appeared),
 * `audit` (holes found by audit --fix), `parked` (a sync window that kept failing on its own).
 */
export type BackfillReason = "manual" | "new_value" | "audit" | "parked";

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
  /** Attempts that ended with a failed chunk (reset when the job is done or retried by hand). */
  readonly attempts: number;
  /** A failed job is not attempted again before this time. */
  readonly nextAttemptS?: number;
  readonly newestRecordS?: number;
  /** The process working on it (see {@link Owner}) and until when its lease runs (epoch ms). */
  readonly leaseOwner?: string;
  readonly leaseUntilMs?: number;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export type RunKind = "sync" | "backfill" | "catalog";
export type RunStatus = "running" | "ok" | "partial" | "failed" | "interrupted";

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

/**
 * `row`: an element of an answer that is not a record; `member`: one requested member of a record
 * that failed validation (its other members were written); `line`: a line InfluxDB refused.
 */
export type DeadLetterKind = "row" | "member" | "line";

/** The kinds of dead letters, as the state database spells them. */
export const DEAD_LETTER_KINDS: readonly DeadLetterKind[] = ["row", "member", "line"];

/** A bad row, member or line to keep (DeadLetterStore.add). */
export interface NewDeadLetter {
  readonly kind: DeadLetterKind;
  readonly deviceId: string;
  readonly resourceId: string;
  /** The requested window it came from (the first time). */
  readonly windowFromS: number;
  readonly windowToS: number;
  /** The value ids requested (a row is cut to them when retried); a `member`'s one member. */
  readonly valueIds: readonly string[];
  /** The raw row (JSON text; a member's whole row) or the line, cut at MAX_DEAD_LETTER_CHARS. */
  readonly payload: string;
  /** Why it was refused (already free of secrets: the caller scrubs). */
  readonly error: string;
}

/** A bad row, member or line, kept instead of freezing its device (README "Dead letters"). */
export interface DeadLetter extends NewDeadLetter {
  readonly id: number;
  /** The payload was cut at {@link MAX_DEAD_LETTER_CHARS} (it cannot be retried). */
  readonly truncated: boolean;
  /** How often it came (a lookback re-read brings the same row again). */
  readonly occurrences: number;
  /** Retries by `dead-letters --retry` that failed again. */
  readonly retries: number;
  readonly firstSeen: string;
  readonly lastSeen: string;
}

/** Longest payload kept in a dead letter (longer ones are cut and cannot be retried). */
export const MAX_DEAD_LETTER_CHARS = 65_536;
