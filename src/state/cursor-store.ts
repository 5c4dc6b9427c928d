import type Database from "better-sqlite3";
import { z } from "zod";
import {
  columns,
  integer,
  optionalInteger,
  optionalText,
  parseRow,
  parseRows,
  requireInteger,
  requireText,
  storedText,
} from "./rows.js";
import type { Cursor, CursorState } from "./types.js";

const cursorRow: z.ZodType<Cursor> = columns({
  deviceId: z.string(),
  resourceId: z.string(),
  startedS: ["started_at", integer],
  fetchedUntilS: ["fetched_until", integer],
  newestRecordS: ["newest_record_at", optionalInteger],
  nextProbeS: ["next_probe_at", optionalInteger],
  parkedUntilS: ["parked_until", optionalInteger],
  failures: integer,
  retryAtS: ["retry_at", optionalInteger],
  lastError: optionalText,
  lookedBackS: ["looked_back_at", optionalInteger],
  updatedAt: z.string(),
});

type Key = { deviceId: string; resourceId: string };

/** The fields of a {@link CursorState}, in the order of the swap statement's row value. */
const STATE_FIELDS = [
  "fetchedUntilS",
  "newestRecordS",
  "nextProbeS",
  "parkedUntilS",
  "failures",
  "retryAtS",
  "lastError",
  "lookedBackS",
] as const;

/** A cursor's state as its columns (NULL: the field is absent), as the statements bind them. */
type StateRow = { [K in keyof CursorState]-?: Exclude<CursorState[K], undefined> | null };

/** A cursor's state as columns, each checked (positions: integers >= 0), the error text cut. */
function stateRow(state: CursorState): StateRow {
  requireInteger("fetchedUntilS", state.fetchedUntilS);
  requireInteger("failures", state.failures);
  for (const field of STATE_FIELDS) {
    const value = state[field];
    if (typeof value !== "string" && value !== undefined) requireInteger(field, value);
  }
  const lastError = state.lastError === undefined ? undefined : storedText(state.lastError);
  return columnsOf({ ...state, lastError });
}

/** A cursor's state as its columns, as they are (no check, the error text not cut again). */
function columnsOf(state: CursorState): StateRow {
  return Object.fromEntries(STATE_FIELDS.map((field) => [field, state[field] ?? null])) as StateRow;
}

/** The cursor a save of `row` over `before` stored: what a read would give back, without one. */
function saved(before: Cursor, row: StateRow, updatedAt: string): Cursor {
  const { deviceId, resourceId, startedS } = before;
  const present = STATE_FIELDS.filter((field) => row[field] !== null);
  const state = Object.fromEntries(present.map((field) => [field, row[field]])) as CursorState;
  return { deviceId, resourceId, startedS, ...state, updatedAt };
}

/** Saves a cursor's state (the {@link StateRow} parameters). */
const SAVE = `UPDATE cursors SET fetched_until = @fetchedUntilS, newest_record_at = @newestRecordS,
    next_probe_at = @nextProbeS, parked_until = @parkedUntilS, failures = @failures,
    retry_at = @retryAtS, last_error = @lastError, looked_back_at = @lookedBackS, updated_at = @now
  WHERE device_id = @deviceId AND resource_id = @resourceId`;

/** The stored row a cursor was read from, as the swap statement's row value. */
function was(cursor: Cursor): (string | number | null)[] {
  return [...Object.values(columnsOf(cursor)), cursor.updatedAt];
}

/** What a fully fetched window says: how far it reached and the newest record it wrote. */
export interface WindowCommit {
  /** End of the window, capped at the API's clock. */
  readonly fetchedUntilS: number;
  /** The newest record timestamp written in it (capped at the API's clock), if any. */
  readonly newestRecordS?: number;
}

/** Cursors per device resource, from the data, never the local clock; rules: pipeline/cursor.ts. */
export class CursorStore {
  private readonly sql;
  private readonly updateTx;

  constructor(db: Database.Database) {
    type Change = (cursor: Cursor) => CursorState;
    this.updateTx = db.transaction(
      (deviceId: string, resourceId: string, change: Change, now: string) => {
        const current = this.require(deviceId, resourceId);
        const row = stateRow(change(current));
        this.sql.save.run({ deviceId, resourceId, ...row, now });
        return saved(current, row, now);
      },
    );
    this.sql = {
      get: db.prepare<Key>(
        "SELECT * FROM cursors WHERE device_id = @deviceId AND resource_id = @resourceId",
      ),
      list: db.prepare<[]>("SELECT * FROM cursors ORDER BY device_id, resource_id"),
      begin: db.prepare<Key & { startedS: number; now: string }>(
        `INSERT INTO cursors (device_id, resource_id, fetched_until, started_at, updated_at)
         VALUES (@deviceId, @resourceId, @startedS - 1, @startedS, @now)
         ON CONFLICT (device_id, resource_id) DO NOTHING`,
      ),
      save: db.prepare<Key & StateRow & { now: string }>(SAVE),
      // save, only if the row is still exactly the cursor the caller last saw
      swap: db.prepare<[...(string | number | null)[], Key & StateRow & { now: string }]>(
        `${SAVE} AND (fetched_until, newest_record_at, next_probe_at, parked_until, failures, retry_at,
                last_error, looked_back_at, updated_at) IS (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      fail: db
        .prepare<Key & { retryAtS: number; error: string; now: string }>(
          `UPDATE cursors SET failures = failures + 1, retry_at = @retryAtS, last_error = @error,
           updated_at = @now
         WHERE device_id = @deviceId AND resource_id = @resourceId
         RETURNING failures`,
        )
        .pluck(),
      probe: db.prepare<Key & { nextProbeS: number | null; now: string }>(
        `UPDATE cursors SET next_probe_at = @nextProbeS, updated_at = @now
         WHERE device_id = @deviceId AND resource_id = @resourceId`,
      ),
    };
  }

  /** The cursor of a device resource, or undefined before its first sync. */
  get(deviceId: string, resourceId: string): Cursor | undefined {
    const row = this.sql.get.get({ deviceId, resourceId });
    return row === undefined ? undefined : parseRow(cursorRow, row, "cursor");
  }

  /** Every cursor, ordered by device, then resource. */
  list(): Cursor[] {
    return parseRows(cursorRow, this.sql.list.all(), "cursor");
  }

  /** Creates the cursor of a resource seen for the first time (a no-op when it exists). */
  begin(deviceId: string, resourceId: string, startedS: number, now: Date): Cursor {
    requireText("deviceId", deviceId);
    requireText("resourceId", resourceId);
    requireInteger("startedS", startedS, 1);
    this.sql.begin.run({ deviceId, resourceId, startedS, now: now.toISOString() });
    return this.require(deviceId, resourceId);
  }

  /**
   * Moves a cursor as `change` (pure: it may be called twice) decides from the cursor as stored,
   * no other writer in between; returns it. With `seen` (the cursor last read or saved): one
   * statement while the row is still exactly that, else a transaction that reads it first.
   */
  update(
    deviceId: string,
    resourceId: string,
    change: (cursor: Cursor) => CursorState,
    now: Date,
    seen?: Cursor,
  ): Cursor {
    const updatedAt = now.toISOString();
    if (seen !== undefined) {
      const row = stateRow(change(seen));
      const swapped = this.sql.swap.run(...was(seen), {
        deviceId,
        resourceId,
        ...row,
        now: updatedAt,
      });
      if (swapped.changes === 1) return saved(seen, row, updatedAt);
    }
    return this.updateTx.immediate(deviceId, resourceId, change, updatedAt);
  }

  /** Records a failed attempt; no new attempt before `retryAtS`. Returns the failures in a row. */
  recordFailure(
    deviceId: string,
    resourceId: string,
    error: string,
    retryAtS: number,
    now: Date,
  ): number {
    const failures = this.sql.fail.get({
      deviceId,
      resourceId,
      retryAtS,
      error: storedText(error),
      now: now.toISOString(),
    });
    if (failures === undefined) throw new RangeError(`no cursor ${deviceId}/${resourceId}`);
    return parseRow(integer, failures, "failures");
  }

  /** Marks the resource silent until `nextProbeS` (probed then), or ends its silence (undefined). */
  setNextProbe(deviceId: string, resourceId: string, nextProbeS: number | undefined, now: Date) {
    const changed = this.sql.probe.run({
      deviceId,
      resourceId,
      nextProbeS: nextProbeS ?? null,
      now: now.toISOString(),
    });
    if (changed.changes === 0) throw new RangeError(`no cursor ${deviceId}/${resourceId}`);
  }

  private require(deviceId: string, resourceId: string): Cursor {
    const cursor = this.get(deviceId, resourceId);
    if (cursor === undefined) throw new RangeError(`no cursor ${deviceId}/${resourceId}`);
    return cursor;
  }
}
