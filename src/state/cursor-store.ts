import type Database from "better-sqlite3";
import { z } from "zod";
import {
  integer,
  optionalInteger,
  parseRow,
  parseRows,
  presentFields,
  requireInteger,
  requireText,
  storedText,
} from "./rows.js";
import type { Cursor } from "./types.js";

const cursorRow = z
  .object({
    device_id: z.string(),
    resource_id: z.string(),
    newest_record_at: optionalInteger,
    fetched_until: integer,
    started_at: integer,
    next_probe_at: optionalInteger,
    failures: integer,
    parked_until: optionalInteger,
    retry_at: optionalInteger,
    last_error: z.string().nullable(),
    updated_at: z.string(),
  })
  .transform(
    (r): Cursor => ({
      deviceId: r.device_id,
      resourceId: r.resource_id,
      fetchedUntilS: r.fetched_until,
      startedS: r.started_at,
      failures: r.failures,
      ...presentFields({
        newestRecordS: r.newest_record_at,
        nextProbeS: r.next_probe_at,
        parkedUntilS: r.parked_until,
        retryAtS: r.retry_at,
        lastError: r.last_error,
      }),
      updatedAt: r.updated_at,
    }),
  );

type Key = { deviceId: string; resourceId: string };

/** What a fully fetched window says: how far it reached and the newest record it wrote. */
export interface WindowCommit {
  /** End of the window, capped at the API's clock. */
  readonly fetchedUntilS: number;
  /** The newest record timestamp written in it (capped at the API's clock), if any. */
  readonly newestRecordS?: number;
}

/**
 * Cursors per device resource (table `cursors`): what the data says, never what the local clock
 * says. Both positions only move forward; a commit also ends a failure streak, and a commit with
 * a newer record ends the silence (probing) of the resource.
 */
export class CursorStore {
  private readonly sql;

  constructor(db: Database.Database) {
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
      commit: db.prepare<Key & { fetchedUntilS: number; newestS: number | null; now: string }>(
        `UPDATE cursors SET
           fetched_until = MAX(fetched_until, @fetchedUntilS),
           next_probe_at = CASE WHEN @newestS IS NOT NULL
             AND @newestS > COALESCE(newest_record_at, -1) THEN NULL ELSE next_probe_at END,
           newest_record_at = CASE WHEN @newestS IS NULL THEN newest_record_at
             ELSE MAX(COALESCE(newest_record_at, @newestS), @newestS) END,
           failures = 0, retry_at = NULL, last_error = NULL, updated_at = @now
         WHERE device_id = @deviceId AND resource_id = @resourceId`,
      ),
      fail: db
        .prepare<Key & { retryAtS: number; error: string; now: string }>(
          `UPDATE cursors SET failures = failures + 1, retry_at = @retryAtS, last_error = @error,
           updated_at = @now
         WHERE device_id = @deviceId AND resource_id = @resourceId
         RETURNING failures`,
        )
        .pluck(),
      park: db.prepare<Key & { untilS: number; now: string }>(
        `UPDATE cursors SET parked_until = MAX(COALESCE(parked_until, @untilS), @untilS),
           updated_at = @now
         WHERE device_id = @deviceId AND resource_id = @resourceId`,
      ),
      repair: db.prepare<Key & { newestS: number; now: string }>(
        `UPDATE cursors SET newest_record_at = @newestS, fetched_until = MIN(fetched_until, @newestS),
           updated_at = @now
         WHERE device_id = @deviceId AND resource_id = @resourceId`,
      ),
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
   * Records a fully fetched (and written) window: both positions move forward only, the failure
   * streak ends, and a newer record ends the silence. Returns the cursor now stored.
   */
  commit(deviceId: string, resourceId: string, window: WindowCommit, now: Date): Cursor {
    requireInteger("fetchedUntilS", window.fetchedUntilS);
    if (window.newestRecordS !== undefined) requireInteger("newestRecordS", window.newestRecordS);
    const changed = this.sql.commit.run({
      deviceId,
      resourceId,
      fetchedUntilS: window.fetchedUntilS,
      newestS: window.newestRecordS ?? null,
      now: now.toISOString(),
    });
    if (changed.changes === 0) throw new RangeError(`no cursor ${deviceId}/${resourceId}`);
    return this.require(deviceId, resourceId);
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

  /** Windows up to `untilS` were parked as jobs: syncs read on after them (forward only). */
  park(deviceId: string, resourceId: string, untilS: number, now: Date): void {
    requireInteger("untilS", untilS);
    const changed = this.sql.park.run({ deviceId, resourceId, untilS, now: now.toISOString() });
    if (changed.changes === 0) throw new RangeError(`no cursor ${deviceId}/${resourceId}`);
  }

  /**
   * Sets the newest record back to `newestS` (the one write that may move it backwards): for a
   * cursor found ahead of the API's clock, e.g. a watermark a local clock running ahead had set
   * before migration 002.
   */
  repair(deviceId: string, resourceId: string, newestS: number, now: Date): void {
    requireInteger("newestS", newestS);
    const changed = this.sql.repair.run({ deviceId, resourceId, newestS, now: now.toISOString() });
    if (changed.changes === 0) throw new RangeError(`no cursor ${deviceId}/${resourceId}`);
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
