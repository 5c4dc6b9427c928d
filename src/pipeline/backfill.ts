import { type RollupResult, RollupsAlong, rollupFailures } from "../rollups/rollup-run.js";
import type { BackfillJob } from "../state/types.js";
import { type BackfillProgress, runBackfillJob } from "./backfill-job.js";
import type { Pipeline } from "./pipeline.js";
import { type RunResult, recordedRun, runResult } from "./recorded-run.js";

/** What a backfill run did (recorded in the runs table and as an `etl_run` point). */
export interface BackfillRunResult extends RunResult {
  readonly jobs: readonly BackfillJob[];
  /** What its rollups did (undefined: none, or the run stopped first). */
  readonly rollups?: RollupResult;
}

/**
 * Runs jobs one after the other (each one's chunks as many at once as the queue allows) as one
 * recorded run of kind `backfill`: failed when every job failed, partial when some did (or its
 * rollups were not written). The rollups of what is written are recomputed along the way, while
 * the API's rate limit holds the fetching (RollupsAlong), the last ones at the end.
 */
export async function runBackfillJobs(
  pipeline: Pipeline,
  jobs: readonly BackfillJob[],
  progress?: BackfillProgress,
): Promise<BackfillRunResult> {
  const finished: BackfillJob[] = [];
  const devices = new Set(jobs.map((j) => j.deviceId));
  let rollups: RollupResult | undefined;
  const recorded = await recordedRun(
    pipeline,
    "backfill",
    async (run) => {
      const along = new RollupsAlong(pipeline.rollups, run, () => pipeline.isStopping);
      for (const job of jobs) {
        if (pipeline.isStopping) break;
        const kick: BackfillProgress = {
          chunkDone: (result) => {
            progress?.chunkDone(result);
            along.kick(job.deviceId);
          },
        };
        finished.push(await runBackfillJob(pipeline, run, job, kick));
      }
      rollups = await along.finish([...devices]);
    },
    () => ({
      parts: jobs.length + (rollups === undefined ? 0 : 1),
      failures: [
        ...finished
          .filter((j) => j.status === "failed" || j.status === "parked")
          .map((j) => ({ part: { job: j.id }, error: j.lastError ?? "" })),
        ...rollupFailures(rollups),
      ],
      devices: devices.size,
      reportDevices: devices,
    }),
  );
  return {
    ...runResult(recorded),
    jobs: finished,
    ...(rollups === undefined ? {} : { rollups }),
  };
}
