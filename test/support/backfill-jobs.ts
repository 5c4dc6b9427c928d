/**
 * Backfill jobs in tests, through the store's public surface: one spec queued as a command queues
 * its jobs, and every stored job read as the pipeline reads a job.
 */
import Database from "better-sqlite3";
import type { JobStore, QueuedJob } from "../../src/state/job-store.js";
import { StateStore } from "../../src/state/state-store.js";
import type { BackfillJob, BackfillSpec } from "../../src/state/types.js";

/**
 * Queues `spec` alone (JobStore.queue) as a job of `chunks` chunks: a new job, or the unfinished
 * one it continues. Throws unless that comes to exactly one job.
 */
export function queueJob(
  jobs: JobStore,
  spec: BackfillSpec,
  chunks: number,
  now: Date,
  status: "pending" | "parked" = "pending",
): QueuedJob {
  const queued = jobs.queue([spec], () => chunks, now, status).jobs;
  const [only, ...more] = queued;
  if (only === undefined || more.length > 0) {
    throw new Error(`queueing one spec came to ${queued.length} jobs`);
  }
  return only;
}

/**
 * Every job the store holds, of any status, oldest first, each read through JobStore.get. No
 * command lists done jobs, so their ids are read from the table (a read-only connection).
 */
export function storedJobs(store: StateStore): BackfillJob[] {
  const db = new Database(store.path, { readonly: true, fileMustExist: true });
  try {
    const ids = db.prepare("SELECT id FROM backfill_jobs ORDER BY id").pluck().all();
    return ids.map((id) => {
      const job = store.jobs.get(Number(id));
      if (job === undefined) throw new Error(`backfill job ${String(id)} vanished`);
      return job;
    });
  } finally {
    db.close();
  }
}

/** What a state file holds: every job, and the done chunk indexes of each. */
export function readJobs(state: string): { jobs: BackfillJob[]; done: Map<number, Set<number>> } {
  const store = StateStore.open(state, { migrate: false });
  try {
    const jobs = storedJobs(store);
    return { jobs, done: new Map(jobs.map((j) => [j.id, store.jobs.completedChunks(j.id)])) };
  } finally {
    store.close();
  }
}
