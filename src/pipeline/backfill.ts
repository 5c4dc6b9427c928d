import { type RollupResult, RollupsAlong, rollupFailures } from "../rollups/rollup-run.js";
import type { BackfillJob } from "../state/types.js";
import { type BackfillProgress, type JobParts, runBackfillJob } from "./backfill-job.js";
import type { Pipeline } from "./pipeline.js";
import { planChunks } from "./plan-chunks.js";
import { type RecordedRunParts, type RunResult, recordedRun, runResult } from "./recorded-run.js";

/** What a backfill run needs: what its jobs, its run and its rollups need. */
export type BackfillRunParts = JobParts & RecordedRunParts & Pick<Pipeline, "rollups" | "gate">;

/** What a backfill run did (recorded in the runs table and as an `etl_run` point). */
export interface BackfillRunResult extends RunResult {
  readonly jobs: readonly BackfillJob[];
  /** What its rollups did (undefined: none, or the run stopped first). */
  readonly rollups?: RollupResult;
}

/** Runs jobs one after the other as one run of kind `backfill`, recomputing rollups as it goes. */
export async function runBackfillJobs(
  pipeline: BackfillRunParts,
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
      const along = new RollupsAlong(
        pipeline.rollups,
        run,
        () => pipeline.isStopping,
        () => (pipeline.gate?.waiting ?? 0) > 0,
      );
      try {
        for (const job of jobs) {
          if (pipeline.isStopping) break;
          const kick = kicking(pipeline, job, along, progress);
          finished.push(await runBackfillJob(pipeline, run, job, kick));
        }
      } finally {
        // a pass along the run never outlives it (a fatal error, a stop)
        await along.settled();
      }
      rollups = await along.finish([...devices]);
    },
    () => ({
      // rollups not written are a failed part of their own (the run is partial, not ok)
      parts: jobs.length + rollupFailures(rollups).length,
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
  const { run, status, errors, durationMs } = recorded;
  const { chunks, chunkErrors, ...counted } = run.counters;
  run.logger.info(
    { status, jobs: jobs.length, ...counted, errors, ms: durationMs },
    "backfill finished",
  );
  return {
    ...runResult(recorded),
    jobs: finished,
    ...(rollups === undefined ? {} : { rollups }),
  };
}

/** A job's progress that also kicks a window's rollups once all its chunks left are written. */
function kicking(
  pipeline: BackfillRunParts,
  job: BackfillJob,
  along: RollupsAlong,
  progress: BackfillProgress | undefined,
): BackfillProgress {
  const done = pipeline.store.jobs.completedChunks(job.id);
  // per window of the job (its start), the chunks not done yet
  const left = new Map<number, number>();
  for (const chunk of planChunks(job.valueIds, job.fromS, job.toS)) {
    if (!done.has(chunk.index)) left.set(chunk.fromS, (left.get(chunk.fromS) ?? 0) + 1);
  }
  return {
    chunkDone: (result, chunk) => {
      progress?.chunkDone(result, chunk);
      // a window's rollups once all its value groups are written, not once per group
      const remaining = (left.get(chunk.fromS) ?? 1) - 1;
      left.set(chunk.fromS, remaining);
      if (remaining === 0) along.kick(job.deviceId);
    },
  };
}
