import { rollupsAfterRun } from "../rollups/rollup-run.js";
import type { BackfillJob } from "../state/types.js";
import { type BackfillProgress, runBackfillJob } from "./backfill-job.js";
import type { Pipeline } from "./pipeline.js";
import { type RunResult, recordedRun, runResult } from "./recorded-run.js";

/** What a backfill run did (recorded in the runs table and as an `etl_run` point). */
export interface BackfillRunResult extends RunResult {
  readonly jobs: readonly BackfillJob[];
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
  const recorded = await recordedRun(
    pipeline,
    "backfill",
    async (run) => {
      for (const job of jobs) {
        if (pipeline.isStopping) break;
        finished.push(await runBackfillJob(pipeline, run, job, progress));
      }
      await rollupsAfterRun(pipeline.rollups, run, [...devices], () => pipeline.isStopping);
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
  return { ...runResult(recorded), jobs: finished };
}
