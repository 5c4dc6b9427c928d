import { VALUES_ID } from "../api/limits.js";
import type { BackfillJob, BackfillSpec } from "../state/types.js";
import { RecordEncoder } from "../transform/record-encoder.js";
import { refreshCatalog } from "./catalog.js";
import { isFatal, messageOf } from "./errors.js";
import { type ChunkResult, chunkContext, fetchChunk } from "./fetch-chunk.js";
import type { Pipeline } from "./pipeline.js";
import { countChunks, planChunks } from "./plan-chunks.js";
import { reportRun } from "./run-report.js";
import { inShard } from "./shard.js";

/** What `energy-etl backfill` asks for. */
export interface BackfillRequest {
  /** Device ids, or every device of this shard. */
  readonly devices: readonly string[] | "all";
  readonly fromS: number;
  readonly toS: number;
  /** Only these value ids (default: every value of each resource). */
  readonly values?: readonly string[];
  /** Plan only: leave the value catalog untouched. */
  readonly dryRun?: boolean;
}

/** One planned job: what it covers and how many requests it takes. */
export interface PlannedBackfill {
  readonly spec: BackfillSpec;
  readonly chunks: number;
}

/** Reports a job's progress (a progress bar on a terminal, log lines otherwise). */
export interface BackfillProgress {
  chunkDone(result: ChunkResult): void;
}

/**
 * Plans a backfill: one job per device and resource over [fromS, toS], with the value ids of the
 * resource (or the requested ones, which must exist). Reads the catalog; never the data endpoint.
 */
export async function planBackfill(
  pipeline: Pipeline,
  request: BackfillRequest,
): Promise<PlannedBackfill[]> {
  const { client, queue } = pipeline;
  let deviceIds: readonly string[];
  if (request.devices === "all") {
    const { device_ids } = await queue.add(() => client.listDevices());
    const { count, index } = pipeline.config.shard;
    deviceIds = device_ids.filter((id) => inShard(id, count, index));
  } else {
    deviceIds = request.devices;
  }
  const planned: PlannedBackfill[] = [];
  for (const deviceId of deviceIds) {
    const { resource_ids } = await queue.add(() => client.listResources(deviceId));
    for (const resourceId of resource_ids) {
      const { values } = await queue.add(() => client.listValues(deviceId, resourceId));
      // as sync does: a value new on a synced resource also gets its history job
      if (!request.dryRun) refreshCatalog(pipeline, deviceId, resourceId, values);
      let valueIds = values.filter((v) => v !== VALUES_ID);
      if (request.values) {
        const unknown = request.values.filter((v) => !values.includes(v));
        if (unknown.length === request.values.length) continue;
        valueIds = request.values.filter((v) => values.includes(v) && v !== VALUES_ID);
      }
      const spec: BackfillSpec = {
        deviceId,
        resourceId,
        valueIds: [...new Set(valueIds)].sort(),
        fromS: request.fromS,
        toS: request.toS,
        reason: "manual",
      };
      planned.push({ spec, chunks: countChunks(spec.valueIds.length, spec.fromS, spec.toS) });
    }
  }
  if (request.values) {
    const seen = new Set(planned.flatMap((p) => p.spec.valueIds));
    const missing = request.values.filter((v) => !seen.has(v));
    if (missing.length > 0)
      throw new Error(`unknown value id for these devices: ${missing.join(", ")}`);
  }
  return planned;
}

/**
 * Runs (or continues) a backfill job: every chunk not yet recorded as done is fetched and written,
 * and recorded done only after the sink accepted it, so a killed process repeats at most the
 * chunks that were in flight. A finished manual backfill of every value moves the watermark
 * forward to its end when it reaches back to the watermark; it never moves it backwards.
 */
export async function runBackfillJob(
  pipeline: Pipeline,
  job: BackfillJob,
  progress?: BackfillProgress,
): Promise<BackfillJob> {
  const { store, queue } = pipeline;
  const log = pipeline.logger.child({
    job: job.id,
    device: job.deviceId,
    resource: job.resourceId,
  });
  const done = store.completedChunks(job.id);
  const todo = planChunks(job.valueIds, job.fromS, job.toS).filter((c) => !done.has(c.index));
  store.setBackfillStatus(job.id, "running", null, pipeline.now());
  log.info(
    { chunks: job.chunksTotal, remaining: todo.length, reason: job.reason },
    "backfill job started",
  );
  const encoder = new RecordEncoder(pipeline.decoder, job.deviceId, job.resourceId);
  let firstError: unknown;
  await Promise.all(
    todo.map((chunk) =>
      queue.add(async () => {
        if (pipeline.isStopping || isFatal(firstError)) return;
        try {
          const result = await fetchChunk(pipeline, job.deviceId, job.resourceId, chunk, encoder);
          store.recordChunkDone(job.id, chunk.index, result.points, 1, pipeline.now());
          progress?.chunkDone(result);
        } catch (error) {
          firstError ??= error;
          log.error(
            { ...chunkContext(job.deviceId, job.resourceId, chunk), error: messageOf(error) },
            "chunk failed",
          );
        }
      }),
    ),
  );
  const after = store.getBackfillJob(job.id) ?? job;
  if (after.chunksDone >= after.chunksTotal) {
    store.setBackfillStatus(job.id, "done", null, pipeline.now());
    moveWatermarkAfter(pipeline, after);
    log.info({ points: after.points, requests: after.requests }, "backfill job done");
  } else if (firstError !== undefined) {
    store.setBackfillStatus(job.id, "failed", messageOf(firstError), pipeline.now());
    log.warn(
      { done: after.chunksDone, total: after.chunksTotal, error: messageOf(firstError) },
      "backfill job unfinished",
    );
  } else {
    store.setBackfillStatus(job.id, "pending", null, pipeline.now());
    log.info({ done: after.chunksDone, total: after.chunksTotal }, "backfill job paused");
  }
  if (isFatal(firstError)) throw firstError;
  return store.getBackfillJob(job.id) ?? after;
}

function moveWatermarkAfter(pipeline: Pipeline, job: BackfillJob): void {
  if (job.reason !== "manual") return;
  const { store } = pipeline;
  const all = store.catalog(job.deviceId, job.resourceId).filter((v) => v !== VALUES_ID);
  const coversAll = all.every((v) => job.valueIds.includes(v));
  const watermark = store.getWatermark(job.deviceId, job.resourceId);
  const reachesBack = watermark === undefined || job.fromS <= watermark + 1;
  const untilS = Math.min(job.toS, Math.floor(pipeline.now().getTime() / 1000));
  if (coversAll && reachesBack && (watermark === undefined || untilS > watermark)) {
    store.advanceWatermark(job.deviceId, job.resourceId, untilS, pipeline.now());
  }
}

/** What a backfill run did (recorded in the runs table and as an `etl_run` point). */
export interface BackfillRunResult {
  readonly runId: number;
  readonly status: "ok" | "partial" | "failed" | "interrupted";
  readonly jobs: readonly BackfillJob[];
}

/** Runs jobs one after the other as one recorded run of kind `backfill`. */
export async function runBackfillJobs(
  pipeline: Pipeline,
  jobs: readonly BackfillJob[],
  progress?: BackfillProgress,
): Promise<BackfillRunResult> {
  const { store, counters } = pipeline;
  const started = pipeline.now();
  const runId = store.startRun("backfill", started);
  const before = { requests: counters.requests, points: counters.points };
  const finished: BackfillJob[] = [];
  let fatal: unknown;
  try {
    for (const job of jobs) {
      if (pipeline.isStopping) break;
      finished.push(await runBackfillJob(pipeline, job, progress));
    }
  } catch (error) {
    fatal = error;
  }
  const failed = finished.filter((j) => j.status === "failed");
  const errors = failed.length + (fatal === undefined ? 0 : 1);
  const status =
    fatal !== undefined || (jobs.length > 0 && failed.length === jobs.length)
      ? "failed"
      : pipeline.isStopping
        ? "interrupted"
        : errors > 0
          ? "partial"
          : "ok";
  const summary = {
    status,
    devices: new Set(jobs.map((j) => j.deviceId)).size,
    requests: counters.requests - before.requests,
    points: counters.points - before.points,
    errors,
    detail:
      errors > 0
        ? JSON.stringify([
            ...failed.map((j) => ({ job: j.id, error: j.lastError })),
            ...(fatal ? [{ error: messageOf(fatal) }] : []),
          ])
        : null,
  } as const;
  store.finishRun(runId, summary, pipeline.now());
  if (!isFatal(fatal)) {
    await reportRun(
      pipeline,
      "backfill",
      summary,
      pipeline.now().getTime() - started.getTime(),
      new Set(jobs.map((j) => j.deviceId)),
    );
  }
  if (fatal !== undefined) throw fatal;
  return { runId, status, jobs: finished };
}
