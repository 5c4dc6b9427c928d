import type Database from "better-sqlite3";
import { z } from "zod";
import { parseRows, requireText, sortedIds } from "./rows.js";

type Key = { deviceId: string; resourceId: string };

/** The value ids seen per device resource (table `value_catalog`). */
export class CatalogStore {
  private readonly sql;
  private readonly refreshTx: Database.Transaction<
    (deviceId: string, resourceId: string, valueIds: readonly string[], now: string) => string[]
  >;

  constructor(db: Database.Database) {
    const sql = {
      insert: db.prepare<Key & { valueId: string; now: string }>(
        `INSERT INTO value_catalog (device_id, resource_id, value_id, first_seen, last_seen)
         VALUES (@deviceId, @resourceId, @valueId, @now, @now)
         ON CONFLICT (device_id, resource_id, value_id) DO NOTHING`,
      ),
      touch: db.prepare<Key & { valueId: string; now: string }>(
        `UPDATE value_catalog SET last_seen = @now
         WHERE device_id = @deviceId AND resource_id = @resourceId AND value_id = @valueId`,
      ),
      list: db
        .prepare<Key>(
          `SELECT value_id FROM value_catalog
           WHERE device_id = @deviceId AND resource_id = @resourceId ORDER BY value_id`,
        )
        .pluck(),
    };
    this.sql = sql;
    this.refreshTx = db.transaction(
      (deviceId: string, resourceId: string, valueIds: readonly string[], now: string) => {
        const added: string[] = [];
        for (const valueId of sortedIds(valueIds)) {
          const row = { deviceId, resourceId, valueId, now };
          if (sql.insert.run(row).changes > 0) added.push(valueId);
          else sql.touch.run(row);
        }
        return added;
      },
    );
  }

  /**
   * Upserts the value ids seen now (last_seen = now; first_seen set on insert), in one
   * transaction; returns the ids that were new, sorted.
   */
  refresh(deviceId: string, resourceId: string, valueIds: readonly string[], now: Date): string[] {
    requireText("deviceId", deviceId);
    requireText("resourceId", resourceId);
    for (const id of valueIds) requireText("value id", id);
    return this.refreshTx(deviceId, resourceId, valueIds, now.toISOString());
  }

  /** The value ids seen so far for a device resource, sorted. */
  list(deviceId: string, resourceId: string): string[] {
    return parseRows(z.string(), this.sql.list.all({ deviceId, resourceId }), "value id");
  }
}
