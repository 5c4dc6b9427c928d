import type Database from "better-sqlite3";
import { z } from "zod";
import { integer, parseRow, parseRows, requireInteger } from "./rows.js";
import type { RunKind, RunRecord, RunSummary } from "./types.js";

const runKind = z.enum(["sync", "backfill"]);
const runRow = z
  .object({
    id: integer,
    kind: runKind,
    started_at: z.string(),
    ended_at: z.string().nullable(),
    status: z.enum(["running", "ok", "partial", "failed", "interrupted"]),
    devices: integer.nullable(),
    requests: integer.nullable(),
    points: integer.nullable(),
    errors: integer.nullable(),
    detail: z.string().nullable(),
  })
  .transform(
    (r): RunRecord => ({
      id: r.id,
      kind: r.kind,
      startedAt: r.started_at,
      endedAt: r.ended_at,
      status: r.status,
      ...(r.devices === null ? {} : { devices: r.devices }),
      ...(r.requests === null ? {} : { requests: r.requests }),
      ...(r.points === null ? {} : { points: r.points }),
      ...(r.errors === null ? {} : { errors: r.errors }),
      ...(r.ended_at === null && r.detail === null ? {} : { detail: r.detail }),
    }),
  );

/** The history of sync and backfill runs (table `runs`). */
export class RunStore {
  private readonly sql;

  constructor(db: Database.Database) {
    this.sql = {
      start: db
        .prepare<[RunKind, string]>(
          "INSERT INTO runs (kind, started_at, status) VALUES (?, ?, 'running') RETURNING id",
        )
        .pluck(),
      finish: db.prepare<{
        id: number;
        status: RunSummary["status"];
        devices: number;
        requests: number;
        points: number;
        errors: number;
        detail: string | null;
        now: string;
      }>(
        `UPDATE runs SET status = @status, ended_at = @now, devices = @devices,
           requests = @requests, points = @points, errors = @errors, detail = @detail
         WHERE id = @id`,
      ),
      markStale: db.prepare<[string]>(
        "UPDATE runs SET status = 'interrupted', ended_at = ? WHERE status = 'running'",
      ),
      last: db.prepare<[]>("SELECT * FROM runs ORDER BY id DESC LIMIT 1"),
      lastOfKind: db.prepare<[RunKind]>(
        "SELECT * FROM runs WHERE kind = ? ORDER BY id DESC LIMIT 1",
      ),
      recent: db.prepare<[number]>("SELECT * FROM runs ORDER BY id DESC LIMIT ?"),
    };
  }

  /** Records a run as started ('running'); returns its id. */
  start(kind: RunKind, now: Date): number {
    const parsed = parseRow(runKind, kind, "run kind");
    return parseRow(integer, this.sql.start.get(parsed, now.toISOString()), "run id");
  }

  /** Records the end of a run with its counters. Throws for an unknown run. */
  finish(id: number, summary: RunSummary, now: Date): void {
    const status = parseRow(
      z.enum(["ok", "partial", "failed", "interrupted"]),
      summary.status,
      "run status",
    );
    requireInteger("devices", summary.devices);
    requireInteger("requests", summary.requests);
    requireInteger("points", summary.points);
    requireInteger("errors", summary.errors);
    const result = this.sql.finish.run({
      id,
      status,
      devices: summary.devices,
      requests: summary.requests,
      points: summary.points,
      errors: summary.errors,
      detail: summary.detail,
      now: now.toISOString(),
    });
    if (result.changes === 0) throw new RangeError(`no run ${id}`);
  }

  /**
   * Marks runs still 'running' as 'interrupted' (their process died); returns how many. Call it at
   * startup, before starting runs: it cannot tell a dead process's run from a live one's.
   */
  markStaleInterrupted(now: Date): number {
    return this.sql.markStale.run(now.toISOString()).changes;
  }

  /** The latest run (of a kind, if given), or undefined. */
  last(kind?: RunKind): RunRecord | undefined {
    const row = kind === undefined ? this.sql.last.get() : this.sql.lastOfKind.get(kind);
    return row === undefined ? undefined : parseRow(runRow, row, "run");
  }

  /** The latest runs, newest first. */
  recent(limit: number): RunRecord[] {
    requireInteger("limit", limit);
    return parseRows(runRow, this.sql.recent.all(limit), "run");
  }
}
