import type Database from "better-sqlite3";
import { z } from "zod";
import { columns, integer, parseRows, requireInteger, requireText } from "./rows.js";

/** A range of a device resource whose rollups are due (epoch s, inclusive). */
export interface RollupMark {
  readonly id: number;
  readonly deviceId: string;
  readonly resourceId: string;
  readonly fromS: number;
  readonly toS: number;
  /** Raw points were written in it (a chunk's mark, not a `rollups` command's request). */
  readonly written: boolean;
}

const markRow: z.ZodType<RollupMark> = columns({
  id: integer,
  deviceId: z.string(),
  resourceId: z.string(),
  fromS: integer,
  toS: integer,
  written: ["request", z.nullable(z.string()).transform((request) => request === null)],
});

/** What rollups are due: a range per write of raw points, kept until its rollups are written. */
export class RollupStore {
  private readonly sql;

  constructor(db: Database.Database) {
    this.sql = {
      mark: db.prepare<{
        deviceId: string;
        resourceId: string;
        fromS: number;
        toS: number;
        request: string | null;
      }>(
        `INSERT INTO rollup_marks (device_id, resource_id, from_s, to_s, request)
         VALUES (@deviceId, @resourceId, @fromS, @toS, @request)`,
      ),
      ofRequest: db
        .prepare<[string]>("SELECT count(*) FROM rollup_marks WHERE request = ?")
        .pluck(),
      all: db.prepare<[]>("SELECT * FROM rollup_marks ORDER BY id"),
      count: db.prepare<[]>("SELECT count(*) FROM rollup_marks").pluck(),
      forget: db.prepare<[number]>("DELETE FROM rollup_marks WHERE id = ?"),
      remove: db.prepare<{ deviceId: string; resourceId: string; upTo: number }>(
        `DELETE FROM rollup_marks
         WHERE device_id = @deviceId AND resource_id = @resourceId AND id <= @upTo`,
      ),
    };
  }

  /**
   * Marks [fromS, toS] of a device resource due for rollups; `request`: who asked, besides raw
   * writes.
   */
  mark(deviceId: string, resourceId: string, fromS: number, toS: number, request?: string): number {
    requireText("deviceId", deviceId);
    requireText("resourceId", resourceId);
    requireInteger("fromS", fromS);
    requireInteger("toS", toS);
    const { lastInsertRowid } = this.sql.mark.run({
      deviceId,
      resourceId,
      fromS,
      toS: Math.max(fromS, toS),
      request: request ?? null,
    });
    return Number(lastInsertRowid);
  }

  forget(ids: readonly number[]): void {
    for (const id of ids) this.sql.forget.run(id);
  }

  /** Marks of a `rollups` command's request still waiting (an earlier run of it stopped). */
  countOf(request: string): number {
    return z.number().parse(this.sql.ofRequest.get(request));
  }

  /** Every mark, oldest first. */
  pending(): RollupMark[] {
    return parseRows(markRow, this.sql.all.all(), "rollup mark");
  }

  count(): number {
    return z.number().parse(this.sql.count.get());
  }

  /** Forgets a device resource's marks up to id `upTo` (those whose rollups were written). */
  done(deviceId: string, resourceId: string, upTo: number): void {
    this.sql.remove.run({ deviceId, resourceId, upTo });
  }
}
