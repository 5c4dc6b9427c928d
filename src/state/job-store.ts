import type Database from "better-sqlite3";
import { JobQueue } from "./job-queue.js";
import { backfillStatus, jobRow, requireJob, UNFINISHED } from "./job-row.js";
import { type Lease, Leases, type LeaseTable, notHeldSql } from "./lease.js";
import { holderOf, type Owner } from "./owner.js";
import { integer, parseRow, parseRows, requireInteger, storedText } from "./rows.js";
import type { BackfillJob, BackfillStatus } from "./types.js";

export type { ChunkCounter, QueuedBackfill, QueuedJob } from "./job-queue.js";

/** The lease columns of `backfill_jobs` (a job outlives its leases). */
const JOB_LEASES: LeaseTable<Lease> = {
  table: "backfill_jobs",
  key: "id",
  owner: "lease_owner",
  until: "lease_until",
  kind: "columns",
  read(row) {
    const { leaseOwner, leaseUntilMs = 0 } = parseRow(jobRow, row, "backfill job");
    if (leaseOwner === undefined) return undefined;
    const lease = { ownerId: leaseOwner, holder: holderOf(leaseOwner), untilMs: leaseUntilMs };
    return { lease, holder: lease };
  },
};

function jobStatements(db: Database.Database) {
  return {
    get: db.prepare<[number]>("SELECT * FROM backfill_jobs WHERE id = ?"),
    unfinished: db.prepare<[]>(
      `SELECT * FROM backfill_jobs WHERE status IN ${UNFINISHED} ORDER BY id`,
    ),
    due: db.prepare<{ nowS: number; nowMs: number; owner: string }>(
      `SELECT * FROM backfill_jobs
       WHERE status IN ('pending', 'running', 'failed')
         AND (next_attempt_at IS NULL OR next_attempt_at <= @nowS)
         AND ${notHeldSql(JOB_LEASES)}
       ORDER BY id`,
    ),
    parked: db.prepare<[]>("SELECT * FROM backfill_jobs WHERE status = 'parked' ORDER BY id"),
    chunksOf: db
      .prepare<[number]>("SELECT chunk_index FROM backfill_chunks WHERE job_id = ?")
      .pluck(),
    setStatus: db.prepare<{
      id: number;
      status: BackfillStatus;
      keepError: 0 | 1;
      lastError: string | null;
      now: string;
    }>(
      `UPDATE backfill_jobs SET status = @status, updated_at = @now,
         last_error = CASE WHEN @keepError THEN last_error ELSE @lastError END
       WHERE id = @id`,
    ),
    finish: db.prepare<{ id: number; now: string }>(
      `UPDATE backfill_jobs SET status = 'done', last_error = NULL, attempts = 0,
         next_attempt_at = NULL, updated_at = @now
       WHERE id = @id`,
    ),
    fail: db.prepare<{
      id: number;
      lastError: string;
      nextAttemptS: number;
      maxAttempts: number;
      now: string;
    }>(
      `UPDATE backfill_jobs SET
         attempts = attempts + 1,
         status = CASE WHEN attempts + 1 >= @maxAttempts THEN 'parked' ELSE 'failed' END,
         next_attempt_at = CASE WHEN attempts + 1 >= @maxAttempts THEN NULL ELSE @nextAttemptS END,
         last_error = @lastError, updated_at = @now
       WHERE id = @id`,
    ),
    addChunk: db.prepare<{
      id: number;
      points: number;
      requests: number;
      newestS: number | null;
      now: string;
    }>(
      `UPDATE backfill_jobs SET
         chunks_done = (SELECT COUNT(*) FROM backfill_chunks WHERE job_id = @id),
         points = points + @points,
         requests = requests + @requests,
         newest_record_at = CASE WHEN @newestS IS NULL THEN newest_record_at
           ELSE MAX(COALESCE(newest_record_at, @newestS), @newestS) END,
         updated_at = @now
       WHERE id = @id`,
    ),
    chunkInsert: db.prepare<{ id: number; chunkIndex: number; points: number; now: string }>(
      `INSERT INTO backfill_chunks (job_id, chunk_index, points, done_at)
       VALUES (@id, @chunkIndex, @points, @now)
       ON CONFLICT (job_id, chunk_index) DO NOTHING`,
    ),
  };
}

export interface ChunkDone {
  readonly points: number;
  readonly requests: number;
  /** The newest record timestamp the chunk wrote, if any. */
  readonly newestRecordS?: number;
}

/**
 * Backfill jobs and their done chunks, queued so that the same command again continues them
 * ({@link JobQueue}). A job whose chunks keep failing waits longer before each attempt and is
 * parked after the last. A process works on a job only while it holds its lease ({@link claim}).
 */
export class JobStore extends JobQueue {
  private readonly sql;
  private readonly leases: Leases<number, Lease>;
  private readonly claimTx;
  private readonly recordChunkTx;

  constructor(db: Database.Database) {
    super(db);
    const sql = jobStatements(db);
    this.sql = sql;
    this.leases = new Leases(db, JOB_LEASES);

    this.claimTx = db.transaction(
      (id: number, owner: Owner, leaseMs: number, nowMs: number): boolean => {
        const job = this.get(id);
        if (job === undefined || job.status === "done") return false;
        return this.leases.acquire(id, owner, leaseMs, nowMs).acquired;
      },
    );

    this.recordChunkTx = db.transaction(
      (jobId: number, chunkIndex: number, done: ChunkDone, now: string) => {
        const job = requireJob(this.get(jobId), jobId);
        if (chunkIndex >= job.chunksTotal) {
          throw new RangeError(
            `chunk ${chunkIndex} of backfill job ${jobId} is out of range (it has ${job.chunksTotal})`,
          );
        }
        const inserted =
          sql.chunkInsert.run({ id: jobId, chunkIndex, points: done.points, now }).changes > 0;
        // A chunk recorded twice (a retry after a crash) counts once.
        sql.addChunk.run({
          id: jobId,
          points: inserted ? done.points : 0,
          requests: inserted ? done.requests : 0,
          newestS: done.newestRecordS ?? null,
          now,
        });
      },
    );
  }

  get(id: number): BackfillJob | undefined {
    const row = this.sql.get.get(id);
    return row === undefined ? undefined : parseRow(jobRow, row, "backfill job");
  }

  /** Jobs not done (pending, running, failed, parked), oldest first. */
  unfinished(): BackfillJob[] {
    return parseRows(jobRow, this.sql.unfinished.all(), "backfill job");
  }

  /**
   * Jobs to work on at `nowS`: pending, running, or failed and not waiting for a later attempt; not
   * leased by another owner past `nowMs` (a holder that is gone is found by {@link claim}).
   */
  due(nowS: number, owner?: Owner, nowMs = nowS * 1000): BackfillJob[] {
    const rows = this.sql.due.all({ nowS, nowMs, owner: owner?.id ?? "" });
    return parseRows(jobRow, rows, "backfill job");
  }

  /** Parked jobs, oldest first. */
  parked(): BackfillJob[] {
    return parseRows(jobRow, this.sql.parked.all(), "backfill job");
  }

  /** `lastError`: recorded, cleared by null, kept when omitted. Throws for an unknown job. */
  setStatus(id: number, status: BackfillStatus, now: Date, lastError?: string | null): void {
    const result = this.sql.setStatus.run({
      id,
      status: parseRow(backfillStatus, status, "backfill status"),
      keepError: lastError === undefined ? 1 : 0,
      lastError: lastError == null ? null : storedText(lastError),
      now: now.toISOString(),
    });
    if (result.changes === 0) throw new RangeError(`no backfill job ${id}`);
  }

  /** The job is done: its error and attempts are cleared. */
  finish(id: number, now: Date): void {
    if (this.sql.finish.run({ id, now: now.toISOString() }).changes === 0) {
      throw new RangeError(`no backfill job ${id}`);
    }
  }

  /** A failed chunk: `failed` until `nextAttemptS`, `parked` after attempt `maxAttempts`. */
  recordFailure(
    id: number,
    error: string,
    nextAttemptS: number,
    maxAttempts: number,
    now: Date,
  ): BackfillJob {
    requireInteger("maxAttempts", maxAttempts, 1);
    this.sql.fail.run({
      id,
      lastError: storedText(error),
      nextAttemptS,
      maxAttempts,
      now: now.toISOString(),
    });
    return requireJob(this.get(id), id);
  }

  /**
   * Claims a job for `owner` for `leaseMs`: true unless it is done or another process may still be
   * working under its lease (see leaseState). One immediate transaction: never two get it.
   */
  claim(id: number, owner: Owner, leaseMs: number, nowMs: number): boolean {
    return this.claimTx.immediate(id, owner, leaseMs, nowMs);
  }

  /** Extends `owner`'s lease; false when the job is no longer its (the lease expired and was taken). */
  renewLease(id: number, owner: Owner, leaseMs: number, nowMs: number): boolean {
    return this.leases.renew(id, owner, leaseMs, nowMs);
  }

  /** Gives the job up (a no-op when the lease is not `owner`'s). */
  releaseLease(id: number, owner: Owner): void {
    this.leases.release(id, owner);
  }

  completedChunks(jobId: number): Set<number> {
    return new Set(parseRows(integer, this.sql.chunksOf.all(jobId), "chunk index"));
  }

  /** Records a done chunk once (its points and requests count once); raises the newest record. */
  recordChunkDone(jobId: number, chunkIndex: number, done: ChunkDone, now: Date): void {
    requireInteger("chunkIndex", chunkIndex);
    requireInteger("points", done.points);
    requireInteger("requests", done.requests);
    this.recordChunkTx.immediate(jobId, chunkIndex, done, now.toISOString());
  }
}
