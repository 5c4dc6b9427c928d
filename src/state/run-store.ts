import type Database from "better-sqlite3";
import { z } from "zod";
import { isGone, type Owner } from "./owner.js";
import {
  columns,
  integer,
  optionalInteger,
  parseRow,
  parseRows,
  requireInteger,
  storedText,
} from "./rows.js";
import type { RunKind, RunRecord, RunSummary } from "./types.js";

const runKind = z.enum(["sync", "backfill", "catalog"]);
/** A row of `runs` (a run still running has no `detail` yet). */
const runRow: z.ZodType<RunRecord> = columns({
  id: integer,
  kind: runKind,
  startedAt: z.string(),
  endedAt: z.string().nullable(),
  status: z.enum(["running", "ok", "partial", "failed", "interrupted"]),
  devices: optionalInteger,
  requests: optionalInteger,
  points: optionalInteger,
  errors: optionalInteger,
  detail: z.string().nullable(),
}).transform(({ detail, ...run }) =>
  run.endedAt === null && detail === null ? run : { ...run, detail },
);

/** The history of sync and backfill runs (table `runs`). */
export class RunStore {
  private readonly sql;

  constructor(db: Database.Database) {
    this.sql = {
      start: db
        .prepare<[RunKind, string, string | null, number | null, string | null]>(
          `INSERT INTO runs (kind, started_at, status, owner_id, owner_pid, owner_host)
           VALUES (?, ?, 'running', ?, ?, ?) RETURNING id`,
        )
        .pluck(),
      finish: db.prepare<RunSummary & { id: number; now: string }>(
        `UPDATE runs SET status = @status, ended_at = @now, devices = @devices,
           requests = @requests, points = @points, errors = @errors, detail = @detail
         WHERE id = @id`,
      ),
      running: db.prepare<[]>(
        "SELECT id, owner_id, owner_pid, owner_host FROM runs WHERE status = 'running'",
      ),
      markInterrupted: db.prepare<[string, number]>(
        "UPDATE runs SET status = 'interrupted', ended_at = ? WHERE id = ? AND status = 'running'",
      ),
      last: db.prepare<[]>("SELECT * FROM runs ORDER BY id DESC LIMIT 1"),
      lastOfKind: db.prepare<[RunKind]>(
        "SELECT * FROM runs WHERE kind = ? ORDER BY id DESC LIMIT 1",
      ),
      recentOfKind: db.prepare<[RunKind, number]>(
        "SELECT * FROM runs WHERE kind = ? AND status != 'running' ORDER BY id DESC LIMIT ?",
      ),
    };
  }

  /** Records a run as started ('running') by `owner` (pid, host); returns its id. */
  start(kind: RunKind, now: Date, owner?: Owner): number {
    const parsed = parseRow(runKind, kind, "run kind");
    const id = this.sql.start.get(
      parsed,
      now.toISOString(),
      owner?.id ?? null,
      owner?.pid ?? null,
      owner?.host ?? null,
    );
    return parseRow(integer, id, "run id");
  }

  /** Records the end of a run with its counters. Throws for an unknown run. */
  finish(id: number, summary: RunSummary, now: Date): void {
    const status = parseRow(
      z.enum(["ok", "partial", "failed", "interrupted"]),
      summary.status,
      "run status",
    );
    for (const count of ["devices", "requests", "points", "errors"] as const) {
      requireInteger(count, summary[count]);
    }
    const detail = summary.detail === null ? null : storedText(summary.detail);
    const result = this.sql.finish.run({ ...summary, id, status, detail, now: now.toISOString() });
    if (result.changes === 0) throw new RangeError(`no run ${id}`);
  }

  /**
   * Marks runs still 'running' whose process is gone (see isGone) or that have no owner (before
   * migration 003) as 'interrupted'; runs of live processes and other hosts are left. Returns how
   * many.
   */
  markStaleInterrupted(now: Date, me: Owner): number {
    const row = z.object({
      id: integer,
      owner_id: z.string().nullable(),
      owner_pid: integer.nullable(),
      owner_host: z.string().nullable(),
    });
    let marked = 0;
    for (const run of this.sql.running.all().map((r) => parseRow(row, r, "run"))) {
      const gone =
        run.owner_pid === null ||
        run.owner_host === null ||
        isGone({ id: run.owner_id ?? "", pid: run.owner_pid, host: run.owner_host }, me);
      if (gone) marked += this.sql.markInterrupted.run(now.toISOString(), run.id).changes;
    }
    return marked;
  }

  /** The latest run (of a kind, if given), or undefined. */
  last(kind?: RunKind): RunRecord | undefined {
    const row = kind === undefined ? this.sql.last.get() : this.sql.lastOfKind.get(kind);
    return row === undefined ? undefined : parseRow(runRow, row, "run");
  }

  /** The latest finished runs of a kind, newest first. */
  recentFinished(kind: RunKind, limit: number): RunRecord[] {
    requireInteger("limit", limit);
    return parseRows(runRow, this.sql.recentOfKind.all(kind, limit), "run");
  }
}
