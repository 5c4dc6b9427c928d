import { createHash } from "node:crypto";
import type Database from "better-sqlite3";
import { z } from "zod";
import { type JobLookup, type JobMatch, matchPlan } from "./job-match.js";
import { holderOf, isGone, type Owner } from "./owner.js";
import {
  integer,
  jsonStringArray,
  optionalInteger,
  parseRow,
  parseRows,
  requireInteger,
  requireText,
  sortedIds,
  storedText,
} from "./rows.js";
import type { BackfillJob, BackfillSpec, BackfillStatus } from "./types.js";

const UNFINISHED = "('pending', 'running', 'failed', 'parked')";
const backfillStatus = z.enum(["pending", "running", "done", "failed", "parked"]);

const jobRow = z
  .object({
    id: integer,
    key: z.string(),
    device_id: z.string(),
    resource_id: z.string(),
    value_ids: jsonStringArray,
    from_s: integer,
    to_s: integer,
    reason: z.enum(["manual", "new_value", "audit", "parked"]),
    status: backfillStatus,
    chunks_total: integer,
    chunks_done: integer,
    points: integer,
    requests: integer,
    last_error: z.string().nullable(),
    attempts: integer,
    next_attempt_at: optionalInteger,
    newest_record_at: optionalInteger,
    lease_owner: z.string().nullable(),
    lease_until: optionalInteger,
    created_at: z.string(),
    updated_at: z.string(),
  })
  .transform(
    (r): BackfillJob => ({
      id: r.id,
      key: r.key,
      deviceId: r.device_id,
      resourceId: r.resource_id,
      valueIds: r.value_ids,
      fromS: r.from_s,
      toS: r.to_s,
      reason: r.reason,
      status: r.status,
      chunksTotal: r.chunks_total,
      chunksDone: r.chunks_done,
      points: r.points,
      requests: r.requests,
      lastError: r.last_error,
      attempts: r.attempts,
      ...(r.next_attempt_at === undefined ? {} : { nextAttemptS: r.next_attempt_at }),
      ...(r.newest_record_at === undefined ? {} : { newestRecordS: r.newest_record_at }),
      ...(r.lease_owner === null ? {} : { leaseOwner: r.lease_owner }),
      ...(r.lease_until === undefined ? {} : { leaseUntilMs: r.lease_until }),
      createdAt: r.created_at,
      updatedAt: r.updated_at,
    }),
  );

/** What one finished chunk of a job produced. */
export interface ChunkDone {
  readonly points: number;
  readonly requests: number;
  /** The newest record timestamp the chunk wrote, if any. */
  readonly newestRecordS?: number;
}

/** A job that {@link JobStore.queue} or {@link JobStore.createOrResume} returns. */
export interface QueuedJob {
  readonly job: BackfillJob;
  /** An unfinished job continued (false: inserted now). */
  readonly resumed: boolean;
}

/** What {@link JobStore.queue} did with a command's jobs. */
export interface QueuedBackfill {
  /** The jobs to run: continued and new ones, each once, by spec and start. */
  readonly jobs: readonly QueuedJob[];
  /** Jobs of the backfill being continued that are done already (not to run again). */
  readonly finished: readonly BackfillJob[];
}

/** How many chunks a job of `valueCount` value ids over `[fromS, toS]` has (`countChunks`). */
export type ChunkCounter = (valueCount: number, fromS: number, toS: number) => number;

/**
 * Backfill jobs and their done chunks (tables `backfill_jobs`, `backfill_chunks`). A command's
 * jobs continue the unfinished jobs of their device, resource and values that they overlap
 * ({@link queue}, by the rule of {@link matchPlan}), so the same command again never starts over.
 * A job whose chunks keep failing waits longer before each attempt and is parked after the last.
 */
export class JobStore {
  private readonly sql;
  private readonly createOrResumeTx;
  private readonly queueTx;
  private readonly recordChunkTx;
  private readonly claimTx;

  constructor(db: Database.Database) {
    const sql = {
      byKey: db.prepare<[string]>(
        `SELECT * FROM backfill_jobs WHERE key = ? AND status IN ${UNFINISHED} ORDER BY id DESC LIMIT 1`,
      ),
      insert: db.prepare<{
        key: string;
        deviceId: string;
        resourceId: string;
        valueIds: string;
        fromS: number;
        toS: number;
        reason: string;
        status: BackfillStatus;
        chunksTotal: number;
        now: string;
      }>(
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
      extend: db.prepare<{ id: number; toS: number; key: string; now: string }>(
        "UPDATE backfill_jobs SET to_s = @toS, key = @key, updated_at = @now WHERE id = @id",
      ),
      unpark: db.prepare<{ id: number; now: string }>(
        `UPDATE backfill_jobs SET status = 'pending', attempts = 0, next_attempt_at = NULL,
           updated_at = @now
         WHERE id = @id AND status IN ('parked', 'failed')`,
      ),
      get: db.prepare<[number]>("SELECT * FROM backfill_jobs WHERE id = ?"),
      unfinishedOf: db.prepare<[string, string]>(
        `SELECT * FROM backfill_jobs
         WHERE device_id = ? AND resource_id = ? AND status IN ${UNFINISHED} ORDER BY id`,
      ),
      doneSince: db.prepare<[string, string, string]>(
        `SELECT * FROM backfill_jobs
         WHERE device_id = ? AND resource_id = ? AND status = 'done' AND updated_at >= ?
         ORDER BY id`,
      ),
      unfinished: db.prepare<[]>(
        `SELECT * FROM backfill_jobs WHERE status IN ${UNFINISHED} ORDER BY id`,
      ),
      due: db.prepare<{ nowS: number; nowMs: number; owner: string }>(
        `SELECT * FROM backfill_jobs
         WHERE status IN ('pending', 'running', 'failed')
           AND (next_attempt_at IS NULL OR next_attempt_at <= @nowS)
           AND (lease_owner IS NULL OR lease_owner = @owner OR lease_until < @nowMs)
         ORDER BY id`,
      ),
      parked: db.prepare<[]>("SELECT * FROM backfill_jobs WHERE status = 'parked' ORDER BY id"),
      recent: db.prepare<[number]>("SELECT * FROM backfill_jobs ORDER BY id DESC LIMIT ?"),
      setStatus: db.prepare<{ id: number; status: BackfillStatus; now: string }>(
        "UPDATE backfill_jobs SET status = @status, updated_at = @now WHERE id = @id",
      ),
      setStatusAndError: db.prepare<{
        id: number;
        status: BackfillStatus;
        lastError: string | null;
        now: string;
      }>(
        `UPDATE backfill_jobs SET status = @status, last_error = @lastError, updated_at = @now
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
      lease: db.prepare<{ id: number; owner: string; untilMs: number }>(
        "UPDATE backfill_jobs SET lease_owner = @owner, lease_until = @untilMs WHERE id = @id",
      ),
      renewLease: db.prepare<{ id: number; owner: string; untilMs: number }>(
        "UPDATE backfill_jobs SET lease_until = @untilMs WHERE id = @id AND lease_owner = @owner",
      ),
      releaseLease: db.prepare<{ id: number; owner: string }>(
        `UPDATE backfill_jobs SET lease_owner = NULL, lease_until = NULL
         WHERE id = @id AND lease_owner = @owner`,
      ),
      chunksDelete: db.prepare<[number]>("DELETE FROM backfill_chunks WHERE job_id = ?"),
      chunksOf: db
        .prepare<[number]>("SELECT chunk_index FROM backfill_chunks WHERE job_id = ?")
        .pluck(),
      chunkInsert: db.prepare<{ id: number; chunkIndex: number; points: number; now: string }>(
        `INSERT INTO backfill_chunks (job_id, chunk_index, points, done_at)
         VALUES (@id, @chunkIndex, @points, @now)
         ON CONFLICT (job_id, chunk_index) DO NOTHING`,
      ),
    };
    this.sql = sql;

    const resume = (
      job: BackfillJob,
      chunksTotal: number,
      status: BackfillStatus,
      now: string,
    ): QueuedJob => {
      if (job.chunksTotal !== chunksTotal) {
        // The chunking changed (e.g. another chunk size): done chunk numbers mean other
        // windows now, so the job restarts from its first chunk (rewriting is harmless).
        sql.chunksDelete.run(job.id);
        sql.restart.run({ id: job.id, chunksTotal, now });
      } else if (status !== "parked") {
        // asked for again: a parked or waiting job gets a fresh set of attempts
        sql.unpark.run({ id: job.id, now });
      }
      return { job: this.require(job.id), resumed: true };
    };

    this.createOrResumeTx = db.transaction(
      (spec: BackfillSpec, chunksTotal: number, status: BackfillStatus, now: string) => {
        const key = JobStore.key(spec);
        const existing = sql.byKey.get(key);
        if (existing !== undefined) {
          return resume(parseRow(jobRow, existing, "backfill job"), chunksTotal, status, now);
        }
        const inserted = sql.insert.get({
          key,
          deviceId: spec.deviceId,
          resourceId: spec.resourceId,
          valueIds: JSON.stringify(sortedIds(spec.valueIds)),
          fromS: spec.fromS,
          toS: spec.toS,
          reason: spec.reason,
          status,
          chunksTotal,
          now,
        });
        return { job: parseRow(jobRow, inserted, "backfill job"), resumed: false };
      },
    );

    this.queueTx = db.transaction(
      (
        specs: readonly BackfillSpec[],
        chunksOf: ChunkCounter,
        status: BackfillStatus,
        now: string,
      ): QueuedBackfill => {
        const jobs = new Map<number, QueuedJob>();
        const finished = new Map<number, BackfillJob>();
        const matches = this.match(specs, chunksOf, status === "parked" ? "parked" : "pending");
        for (const { continued, created, finished: done } of matches) {
          const queued = [
            ...continued.map((job) => {
              if (job.toS !== this.require(job.id).toS) {
                sql.extend.run({ id: job.id, toS: job.toS, key: JobStore.key(job), now });
              }
              const chunks = chunksOf(job.valueIds.length, job.fromS, job.toS);
              return resume(this.require(job.id), chunks, status, now);
            }),
            ...created.map((part) =>
              this.createOrResumeTx(
                part,
                chunksOf(part.valueIds.length, part.fromS, part.toS),
                status,
                now,
              ),
            ),
          ];
          queued.sort((a, b) => a.job.fromS - b.job.fromS);
          for (const q of queued) if (!jobs.has(q.job.id)) jobs.set(q.job.id, q);
          for (const job of done) finished.set(job.id, job);
        }
        return { jobs: [...jobs.values()], finished: [...finished.values()] };
      },
    );

    this.claimTx = db.transaction(
      (id: number, owner: Owner, leaseMs: number, nowMs: number): boolean => {
        const job = this.get(id);
        if (job === undefined || job.status === "done") return false;
        const held = job.leaseOwner;
        const holder = held === undefined ? undefined : holderOf(held);
        const free =
          held === undefined ||
          held === owner.id ||
          (job.leaseUntilMs ?? 0) < nowMs ||
          (holder !== undefined && isGone(holder, owner));
        if (!free) return false;
        sql.lease.run({ id, owner: owner.id, untilMs: nowMs + leaseMs });
        return true;
      },
    );

    this.recordChunkTx = db.transaction(
      (jobId: number, chunkIndex: number, done: ChunkDone, now: string) => {
        const job = this.require(jobId);
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

  /**
   * Key of a spec: sha256 hex of JSON `[deviceId, resourceId, sorted valueIds, fromS, toS]`
   * (duplicate value ids count once; the reason is not part of it).
   */
  static key(spec: BackfillSpec): string {
    const identity = [
      spec.deviceId,
      spec.resourceId,
      sortedIds(spec.valueIds),
      spec.fromS,
      spec.toS,
    ];
    return createHash("sha256").update(JSON.stringify(identity)).digest("hex");
  }

  /**
   * Queues the jobs one command asks for ({@link matchPlan}): the unfinished jobs they overlap are
   * continued, the jobs of the continued backfill done already are left alone (`finished`), and
   * jobs are inserted for the rest of their ranges (`pending`, or `parked` for a sync window handed
   * over after its last attempt). A continued job keeps its start, its chunks and their windows;
   * the time right after it (the seconds a relative start moved on) goes into its last window when
   * none of that window's chunks is done, no process holds the job, and the window stays within
   * the API's limit (same chunk count under `chunksOf`); otherwise it is a new job. Asked for as
   * `pending`, a parked or waiting job gets a fresh set of attempts; one whose chunk count under
   * `chunksOf` changed restarts its chunks. A job another process holds is returned as it is (its
   * lease is not touched). One immediate transaction.
   */
  queue(
    specs: readonly BackfillSpec[],
    chunksOf: ChunkCounter,
    now: Date,
    status: "pending" | "parked" = "pending",
  ): QueuedBackfill {
    for (const spec of specs) checkSpec(spec);
    return this.queueTx.immediate(specs, chunksOf, status, now.toISOString());
  }

  /**
   * What {@link queue} would do with a command's jobs now, per spec: the unfinished jobs it would
   * continue (with the end they would get), the done ones it would leave, and the parts it would
   * insert. Reads only (a dry run).
   */
  match(
    specs: readonly BackfillSpec[],
    chunksOf: ChunkCounter,
    status: "pending" | "parked" = "pending",
  ): JobMatch[] {
    const read = (rows: unknown[]) => parseRows(jobRow, rows, "backfill job");
    const lookup: JobLookup = {
      unfinished: (deviceId, resourceId) => read(this.sql.unfinishedOf.all(deviceId, resourceId)),
      // a sync hands a window over to be read again, whatever was fetched before
      ...(status === "pending" && {
        doneSince: (deviceId: string, resourceId: string, since: string) =>
          read(this.sql.doneSince.all(deviceId, resourceId, since)),
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

  /**
   * Exactly this spec: the unfinished job with the same key if there is one (continued as
   * {@link queue} continues), else a new job. Requests go through {@link queue}, which also
   * continues jobs of a different range. One immediate transaction.
   */
  createOrResume(
    spec: BackfillSpec,
    chunksTotal: number,
    now: Date,
    status: "pending" | "parked" = "pending",
  ): QueuedJob {
    checkSpec(spec);
    requireInteger("chunksTotal", chunksTotal);
    return this.createOrResumeTx.immediate(spec, chunksTotal, status, now.toISOString());
  }

  /** The job with this id, or undefined. */
  get(id: number): BackfillJob | undefined {
    const row = this.sql.get.get(id);
    return row === undefined ? undefined : parseRow(jobRow, row, "backfill job");
  }

  /** Jobs not done (pending, running, failed, parked), oldest first. */
  unfinished(): BackfillJob[] {
    return parseRows(jobRow, this.sql.unfinished.all(), "backfill job");
  }

  /**
   * Jobs to work on at `nowS`: not done, not parked, not waiting for a later attempt, and not
   * held by another owner's lease that is still running (`nowMs`; a holder that is gone is found
   * by {@link claim}).
   */
  due(nowS: number, owner?: Owner, nowMs = nowS * 1000): BackfillJob[] {
    const rows = this.sql.due.all({ nowS, nowMs, owner: owner?.id ?? "" });
    return parseRows(jobRow, rows, "backfill job");
  }

  /** Parked jobs, oldest first. */
  parked(): BackfillJob[] {
    return parseRows(jobRow, this.sql.parked.all(), "backfill job");
  }

  /** Recent jobs of any status (newest first), for status output. */
  recent(limit: number): BackfillJob[] {
    requireInteger("limit", limit);
    return parseRows(jobRow, this.sql.recent.all(limit), "backfill job");
  }

  /**
   * Sets a job's status. `lastError`: a message to record, null to clear it, or omitted to keep
   * the one recorded. Throws for an unknown job.
   */
  setStatus(id: number, status: BackfillStatus, now: Date, lastError?: string | null): void {
    const parsed = parseRow(backfillStatus, status, "backfill status");
    const at = now.toISOString();
    const result =
      lastError === undefined
        ? this.sql.setStatus.run({ id, status: parsed, now: at })
        : this.sql.setStatusAndError.run({
            id,
            status: parsed,
            lastError: lastError === null ? null : storedText(lastError),
            now: at,
          });
    if (result.changes === 0) throw new RangeError(`no backfill job ${id}`);
  }

  /** The job is done: its error and attempts are cleared. */
  finish(id: number, now: Date): void {
    if (this.sql.finish.run({ id, now: now.toISOString() }).changes === 0) {
      throw new RangeError(`no backfill job ${id}`);
    }
  }

  /**
   * An attempt ended with a failed chunk: `failed` until `nextAttemptS`, or `parked` once this was
   * attempt number `maxAttempts`. Returns the job as stored.
   */
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
    return this.require(id);
  }

  /** Puts parked (or waiting) jobs back to pending with a fresh set of attempts; returns how many. */
  unpark(ids: readonly number[], now: Date): number {
    let changed = 0;
    for (const id of ids) changed += this.sql.unpark.run({ id, now: now.toISOString() }).changes;
    return changed;
  }

  /**
   * Claims a job for `owner` for `leaseMs`: true unless another process holds a lease on it that
   * has not expired (a holder of this host whose process died holds nothing). One immediate
   * transaction, so two processes never both get it.
   */
  claim(id: number, owner: Owner, leaseMs: number, nowMs: number): boolean {
    return this.claimTx.immediate(id, owner, leaseMs, nowMs);
  }

  /** Extends `owner`'s lease; false when the job is no longer its (the lease expired and was taken). */
  renewLease(id: number, owner: Owner, leaseMs: number, nowMs: number): boolean {
    return this.sql.renewLease.run({ id, owner: owner.id, untilMs: nowMs + leaseMs }).changes === 1;
  }

  /** Gives the job up (a no-op when the lease is not `owner`'s). */
  releaseLease(id: number, owner: Owner): void {
    this.sql.releaseLease.run({ id, owner: owner.id });
  }

  /** Indexes of the chunks of a job that are done. */
  completedChunks(jobId: number): Set<number> {
    return new Set(parseRows(integer, this.sql.chunksOf.all(jobId), "chunk index"));
  }

  /**
   * In one transaction: inserts the chunk (ignored if already there), chunks_done = count of chunk
   * rows, points and requests added (only when the chunk is new, so recording a chunk twice is
   * harmless), the newest record raised. Throws for an unknown job or an index out of range.
   */
  recordChunkDone(jobId: number, chunkIndex: number, done: ChunkDone, now: Date): void {
    requireInteger("chunkIndex", chunkIndex);
    requireInteger("points", done.points);
    requireInteger("requests", done.requests);
    this.recordChunkTx.immediate(jobId, chunkIndex, done, now.toISOString());
  }

  private require(id: number): BackfillJob {
    const job = this.get(id);
    if (job === undefined) throw new RangeError(`no backfill job ${id}`);
    return job;
  }
}

/** A spec's fields are what a job can hold (throws a RangeError naming the first that is not). */
function checkSpec(spec: BackfillSpec): void {
  requireText("deviceId", spec.deviceId);
  requireText("resourceId", spec.resourceId);
  for (const id of spec.valueIds) {
    requireText("value id", id);
    if (id === "values_id") throw new RangeError("values_id is a tag, not a value to backfill");
  }
  requireInteger("fromS", spec.fromS);
  requireInteger("toS", spec.toS);
  if (spec.fromS > spec.toS) {
    throw new RangeError(`backfill window is empty: fromS ${spec.fromS} > toS ${spec.toS}`);
  }
}
