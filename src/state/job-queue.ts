import type Database from "better-sqlite3";
import { type JobLookup, type JobMatch, matchPlan } from "./job-match.js";
import { checkSpec, jobKey, jobRow, requireJob, UNFINISHED } from "./job-row.js";
import { parseRow, parseRows, requireInteger, sortedIds } from "./rows.js";
import type { BackfillJob, BackfillSpec } from "./types.js";

/** A job that {@link JobQueue.queue} returns. */
export interface QueuedJob {
  readonly job: BackfillJob;
  /** An unfinished job continued (false: inserted now). */
  readonly resumed: boolean;
}

export interface QueuedBackfill {
  /** The jobs to run: continued and new ones, each once, by spec and start. */
  readonly jobs: readonly QueuedJob[];
  /** Jobs of the backfill being continued that are done already (not to run again). */
  readonly finished: readonly BackfillJob[];
}

/** How many chunks a job of `valueCount` value ids over `[fromS, toS]` has (`countChunks`). */
export type ChunkCounter = (valueCount: number, fromS: number, toS: number) => number;

/** What jobs are queued as: `parked` for a sync window handed over after its last attempt. */
export type QueueStatus = "pending" | "parked";

function queueStatements(db: Database.Database) {
  return {
    byKey: db.prepare<[string]>(
      `SELECT * FROM backfill_jobs WHERE key = ? AND status IN ${UNFINISHED} ORDER BY id DESC LIMIT 1`,
    ),
    insert: db.prepare<
      Omit<BackfillSpec, "valueIds"> & {
        key: string;
        valueIds: string;
        status: QueueStatus;
        chunksTotal: number;
        now: string;
      }
    >(
      `INSERT INTO backfill_jobs (key, device_id, resource_id, value_ids, from_s, to_s, reason,
         status, chunks_total, created_at, updated_at)
       VALUES (@key, @deviceId, @resourceId, @valueIds, @fromS, @toS, @reason,
         @status, @chunksTotal, @now, @now)
       RETURNING *`,
    ),
    restart: db.prepare<{ id: number; chunksTotal: number; now: string }>(
      `UPDATE backfill_jobs SET chunks_total = @chunksTotal, chunks_done = 0, status = 'pending',
         attempts = 0, next_attempt_at = NULL, updated_at = @now
       WHERE id = @id`,
    ),
    chunksDelete: db.prepare<[number]>("DELETE FROM backfill_chunks WHERE job_id = ?"),
    extend: db.prepare<{ id: number; toS: number; key: string; now: string }>(
      "UPDATE backfill_jobs SET to_s = @toS, key = @key, updated_at = @now WHERE id = @id",
    ),
    unpark: db.prepare<{ id: number; now: string }>(
      `UPDATE backfill_jobs SET status = 'pending', attempts = 0, next_attempt_at = NULL,
         updated_at = @now
       WHERE id = @id AND status IN ('parked', 'failed')`,
    ),
    unfinishedOf: db.prepare<[string, string]>(
      `SELECT * FROM backfill_jobs
       WHERE device_id = ? AND resource_id = ? AND status IN ${UNFINISHED} ORDER BY id`,
    ),
    doneSince: db.prepare<[string, string, string]>(
      `SELECT * FROM backfill_jobs
       WHERE device_id = ? AND resource_id = ? AND status = 'done' AND updated_at >= ?
       ORDER BY id`,
    ),
  };
}

/**
 * How requested backfill jobs become stored ones (JobStore's queueing): a request continues the
 * unfinished jobs it overlaps ({@link matchPlan}), keeping their chunks' windows, and inserts jobs
 * for the rest. The time right after a continued job goes into its last window when no chunk of it
 * is done, no process holds the job, and the chunk count under `chunksOf` stays the same. Asked for
 * as `pending`, a parked or waiting job gets a fresh set of attempts; one whose chunk count changed
 * restarts its chunks.
 */
export abstract class JobQueue {
  private readonly queueSql;
  private readonly queueTx;

  constructor(db: Database.Database) {
    this.queueSql = queueStatements(db);
    this.queueTx = db.transaction(
      (
        specs: readonly BackfillSpec[],
        chunksOf: ChunkCounter,
        status: QueueStatus,
        now: string,
      ) => {
        const chunks = (job: BackfillSpec) => chunksOf(job.valueIds.length, job.fromS, job.toS);
        const jobs = new Map<number, QueuedJob>();
        const finished = new Map<number, BackfillJob>();
        for (const { continued, created, finished: done } of this.match(specs, chunksOf, status)) {
          const queued = [
            ...continued.map((job) => {
              if (job.toS !== this.require(job.id).toS) {
                this.queueSql.extend.run({ id: job.id, toS: job.toS, key: jobKey(job), now });
              }
              return this.resume(this.require(job.id), chunks(job), status, now);
            }),
            ...created.map((part) => this.insertOrResume(part, chunks(part), status, now)),
          ];
          queued.sort((a, b) => a.job.fromS - b.job.fromS);
          for (const q of queued) if (!jobs.has(q.job.id)) jobs.set(q.job.id, q);
          for (const job of done) finished.set(job.id, job);
        }
        return { jobs: [...jobs.values()], finished: [...finished.values()] };
      },
    );
  }

  abstract get(id: number): BackfillJob | undefined;

  /** Indexes of the chunks of a job that are done. */
  abstract completedChunks(jobId: number): Set<number>;

  /**
   * Queues one command's jobs: overlapped unfinished ones continue, the rest are inserted; one
   * immediate transaction.
   */
  queue(
    specs: readonly BackfillSpec[],
    chunksOf: ChunkCounter,
    now: Date,
    status: QueueStatus = "pending",
  ): QueuedBackfill {
    for (const spec of specs) checkSpec(spec);
    return this.queueTx.immediate(specs, chunksOf, status, now.toISOString());
  }

  /** What {@link queue} would do with a command's jobs now, per spec. Reads only (a dry run). */
  match(
    specs: readonly BackfillSpec[],
    chunksOf: ChunkCounter,
    status: QueueStatus = "pending",
  ): JobMatch[] {
    const read = (rows: unknown[]) => parseRows(jobRow, rows, "backfill job");
    const lookup: JobLookup = {
      unfinished: (deviceId, resourceId) =>
        read(this.queueSql.unfinishedOf.all(deviceId, resourceId)),
      // a sync hands a window over to be read again, whatever was fetched before
      ...(status === "pending" && {
        doneSince: (deviceId: string, resourceId: string, since: string) =>
          read(this.queueSql.doneSince.all(deviceId, resourceId, since)),
      }),
    };
    return matchPlan(specs, lookup, (job, toS) => {
      const values = job.valueIds.length;
      const perWindow = chunksOf(values, job.fromS, job.fromS);
      if (job.leaseOwner !== undefined || perWindow === 0) return false;
      const total = job.chunksTotal;
      if (chunksOf(values, job.fromS, job.toS) !== total) return false;
      if (chunksOf(values, job.fromS, toS) !== total) return false;
      return [...this.completedChunks(job.id)].every((index) => index < total - perWindow);
    });
  }

  /** Puts parked (or waiting) jobs back to pending with a fresh set of attempts; returns how many. */
  unpark(ids: readonly number[], now: Date): number {
    let changed = 0;
    for (const id of ids) {
      changed += this.queueSql.unpark.run({ id, now: now.toISOString() }).changes;
    }
    return changed;
  }

  /** Exactly this spec: the unfinished job with its key, continued ({@link resume}), or a new one. */
  private insertOrResume(
    spec: BackfillSpec,
    chunksTotal: number,
    status: QueueStatus,
    now: string,
  ): QueuedJob {
    const stored = this.queueSql.byKey.get(jobKey(spec));
    if (stored !== undefined) {
      return this.resume(parseRow(jobRow, stored, "backfill job"), chunksTotal, status, now);
    }
    requireInteger("chunksTotal", chunksTotal);
    const inserted = this.queueSql.insert.get({
      ...spec,
      key: jobKey(spec),
      valueIds: JSON.stringify(sortedIds(spec.valueIds)),
      status,
      chunksTotal,
      now,
    });
    return { job: parseRow(jobRow, inserted, "backfill job"), resumed: false };
  }

  /** Continues a job: a changed chunk count restarts its chunks; `pending` gives fresh attempts. */
  private resume(job: BackfillJob, chunksTotal: number, status: QueueStatus, now: string) {
    requireInteger("chunksTotal", chunksTotal);
    if (job.chunksTotal !== chunksTotal) {
      // The chunking changed (e.g. another chunk size): done chunk numbers mean other
      // windows now, so the job restarts from its first chunk (rewriting is harmless).
      this.queueSql.chunksDelete.run(job.id);
      this.queueSql.restart.run({ id: job.id, chunksTotal, now });
    } else if (status !== "parked") {
      this.queueSql.unpark.run({ id: job.id, now });
    }
    return { job: this.require(job.id), resumed: true };
  }

  private require(id: number): BackfillJob {
    return requireJob(this.get(id), id);
  }
}
