import type { BackfillJob } from "../state/types.js";
import { type BackfillProgress, runBackfillJob } from "./backfill-job.js";
import type { Pipeline } from "./pipeline.js";
import { recordedRun } from "./recorded-run.js";
import type { RunCounters } from "./run-context.js";

/** What a backfill run did (recorded in the runs table and as an `etl_run` point). */
export interface BackfillRunResult {
  readonly runId: number;
  readonly status: "ok" | "partial" | "failed" | "interrupted";
  readonly jobs: readonly BackfillJob[];
  /** HTTP attempts of the run. */
  readonly requests: number;
  readonly points: number;
  readonly deadLetters: number;
  /** Everything the run counted. */
  readonly counters: Readonly<RunCounters>;
}

/**
 * Runs jobs one after the other (each one's chunks as many at once as the queue allows) as one
 * recorded run of kind `backfill`: failed when every job failed, partial when some did.
 */
export async function runBackfillJobs(
  pipeline: Pipeline,
  jobs: readonly BackfillJob[],
  progress?: BackfillProgress,
): Promise<BackfillRunResult> {
  const finished: BackfillJob[] = [];
  const devices = new Set(jobs.map((j) => j.deviceId));
  const { run, status } = await recordedRun(
    pipeline,
    "backfill",
    async (run) => {
      for (const job of jobs) {
        if (pipeline.isStopping) break;
        finished.push(await runBackfillJob(pipeline, run, job, progress));
      }
    },
    () => ({
      parts: jobs.length,
      failures: finished
        .filter((j) => j.status === "failed" || j.status === "parked")
        .map((j) => ({ part: { job: j.id }, error: j.lastError ?? "" })),
      devices: devices.size,
      reportDevices: devices,
    }),
  );
  const { counters } = run;
  return {
    runId: run.id,
    status,
    jobs: finished,
    requests: counters.requests,
    points: counters.points,
    deadLetters: counters.deadLetters,
    counters: { ...counters },
  };
}
