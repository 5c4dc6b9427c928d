import type { Logger } from "pino";
import { VALUES_ID } from "../api/limits.js";
import type { Config } from "../config.js";
import type { StateStore } from "../state/state-store.js";
import type { BackfillJob } from "../state/types.js";
import { messageOf } from "../util/errors.js";
import { epochSeconds } from "../util/utc-time.js";
import type { ChunkResult } from "./chunk-writer.js";
import { afterCommit, cursorAfterJob, failureWaitS } from "./cursor.js";
import { isFatal } from "./errors.js";
import type { Pipeline } from "./pipeline.js";
import { type Chunk, planChunks } from "./plan-chunks.js";
import type { RunContext } from "./run-context.js";

/** Reports a job's progress (a progress bar on a terminal, log lines otherwise). */
export interface BackfillProgress {
  chunkDone(result: ChunkResult, chunk: Chunk): void;
}

/** How long a claim on a job lasts without a heartbeat; it is renewed every third of it. */
export const JOB_LEASE_MS = 60_000;

export interface JobParts
  extends Pick<Pipeline, "chunks" | "now" | "apiNow" | "owner" | "activeJobs"> {
  readonly store: Pick<StateStore, "jobs" | "catalog" | "cursors" | "transaction" | "isOpen">;
  readonly config: Pick<Config, "failures">;
}

/**
 * Runs (or continues) a backfill job, claimed first (a lease): each chunk is recorded done only
 * after the sink stored it, so a killed process repeats at most the chunks in flight.
 */
export async function runBackfillJob(
  parts: JobParts,
  run: RunContext,
  job: BackfillJob,
  progress?: BackfillProgress,
): Promise<BackfillJob> {
  const { store, owner } = parts;
  const log = run.logger.child({ job: job.id, device: job.deviceId, resource: job.resourceId });
  // leases are a contract between processes: always the real clock, never an injected one
  const claimed =
    !parts.activeJobs.has(job.id) && store.jobs.claim(job.id, owner, JOB_LEASE_MS, Date.now());
  if (!claimed) {
    const held = store.jobs.get(job.id) ?? job;
    log.info(
      { leaseOwner: held.leaseOwner, status: held.status },
      "backfill job is worked on by another process: skipped (it goes on there)",
    );
    return held;
  }
  let lost = false;
  const heartbeat = setInterval(() => {
    try {
      if (!store.jobs.renewLease(job.id, owner, JOB_LEASE_MS, Date.now())) {
        lost = true;
        log.warn("lost the lease on the backfill job (another process took it over): stopping");
      }
    } catch {
      lost = true;
    }
  }, JOB_LEASE_MS / 3);
  heartbeat.unref();
  parts.activeJobs.add(job.id);
  try {
    // as stored when claimed: a request may have moved its end while it waited (JobStore.queue)
    const current = store.jobs.get(job.id) ?? job;
    return await workOnJob(parts, run, current, log, () => lost, progress);
  } finally {
    parts.activeJobs.delete(job.id);
    clearInterval(heartbeat);
    if (store.isOpen) store.jobs.releaseLease(job.id, owner);
  }
}

/** The chunks of a claimed job, and what its end means for the job and the cursor. */
async function workOnJob(
  parts: JobParts,
  run: RunContext,
  job: BackfillJob,
  log: Logger,
  leaseLost: () => boolean,
  progress?: BackfillProgress,
): Promise<BackfillJob> {
  const { store } = parts;
  const done = store.jobs.completedChunks(job.id);
  const todo = planChunks(job.valueIds, job.fromS, job.toS).filter((c) => !done.has(c.index));
  store.jobs.setStatus(job.id, "running", parts.now());
  log.info(
    { chunks: job.chunksTotal, remaining: todo.length, reason: job.reason },
    "backfill job started",
  );
  let firstError: unknown;
  // a chunk stored is recorded done in the job (with its counts)
  const commit = (chunk: Chunk, { points, requests, newestRecordS }: ChunkResult) => {
    const stored = { points, requests, ...(newestRecordS === undefined ? {} : { newestRecordS }) };
    store.jobs.recordChunkDone(job.id, chunk.index, stored, parts.now());
  };
  const context = { job: job.id };
  for await (const outcome of parts.chunks.run(run, job, todo, {
    stop: leaseLost,
    context,
    commit,
  })) {
    if ("error" in outcome) firstError ??= outcome.error;
    else progress?.chunkDone(outcome.result, outcome.chunk);
  }
  const after = store.jobs.get(job.id) ?? job;
  if (leaseLost()) {
    // another process owns the job now: its status is that process's to write
    log.warn({ done: after.chunksDone, total: after.chunksTotal }, "backfill job handed over");
    return after;
  }
  if (after.chunksDone >= after.chunksTotal) finishJob(parts, after, log);
  else if (firstError !== undefined && !isFatal(firstError))
    jobFailed(parts, after, firstError, log);
  else {
    const error = firstError === undefined ? null : messageOf(firstError);
    store.jobs.setStatus(job.id, "pending", parts.now(), error);
    log.info({ done: after.chunksDone, total: after.chunksTotal }, "backfill job paused");
  }
  if (isFatal(firstError)) throw firstError;
  return store.jobs.get(job.id) ?? after;
}

/** A job whose every chunk is done: finished, and its cursor moved, in one transaction. */
function finishJob(parts: JobParts, job: BackfillJob, log: Logger): void {
  const { store } = parts;
  store.transaction(() => {
    store.jobs.finish(job.id, parts.now());
    const values = store.catalog.list(job.deviceId, job.resourceId).filter((v) => v !== VALUES_ID);
    const cursor = store.cursors.get(job.deviceId, job.resourceId);
    const commit = cursorAfterJob(job, cursor, values, epochSeconds(parts.apiNow()));
    if (commit === undefined) return;
    store.cursors.begin(job.deviceId, job.resourceId, job.fromS, parts.now());
    store.cursors.update(job.deviceId, job.resourceId, (c) => afterCommit(c, commit), parts.now());
  });
  log.info({ points: job.points, requests: job.requests }, "backfill job done");
}

/** A job with a failed chunk: waits before its next attempt, or is parked after too many. */
function jobFailed(parts: JobParts, job: BackfillJob, error: unknown, log: Logger): void {
  const { store, config } = parts;
  const nowS = epochSeconds(parts.now());
  const waitS = failureWaitS(config, nowS, job.attempts + 1);
  const failed = store.jobs.recordFailure(
    job.id,
    messageOf(error),
    nowS + waitS,
    config.failures.parkAfter,
    parts.now(),
  );
  const { attempts, status } = failed;
  log.warn(
    { done: job.chunksDone, total: job.chunksTotal, attempts, status, error: messageOf(error) },
    status === "parked"
      ? "backfill job parked after failing too often (energy-etl backfill --retry-parked)"
      : "backfill job unfinished; it is tried again later",
  );
}
