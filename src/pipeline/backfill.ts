import type { CallOptions } from "../api/client.js";
import { VALUES_ID } from "../api/limits.js";
import type { QueuedBackfill } from "../state/job-store.js";
import type { BackfillJob, BackfillSpec } from "../state/types.js";
import { messageOf } from "../util/errors.js";
import { didYouMean } from "../util/suggest.js";
import { epochSeconds } from "../util/utc-time.js";
import { type CatalogResource, deviceCatalog } from "./catalog.js";
import { cutByShutdown, isFatal } from "./errors.js";
import { type ChunkResult, chunkContext, fetchChunk } from "./fetch-chunk.js";
import type { Pipeline } from "./pipeline.js";
import { countChunks, planChunks } from "./plan-chunks.js";
import { backoffS, secondsBefore } from "./plan-sync.js";
import { RunContext, type RunCounters } from "./run-context.js";
import { reportRun } from "./run-report.js";
import { selectDevices } from "./select-devices.js";

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
  /**
   * The stored job this is ({@link remainingBackfill}): `chunks` is what it has left (none when it
   * is done: a job of the backfill being continued).
   */
  readonly continues?: { readonly id: number; readonly chunksDone: number; readonly done: boolean };
}

/** Reports a job's progress (a progress bar on a terminal, log lines otherwise). */
export interface BackfillProgress {
  chunkDone(result: ChunkResult): void;
}

/** How long a claim on a job lasts without a heartbeat; it is renewed every third of it. */
export const JOB_LEASE_MS = 60_000;

/**
 * Plans a backfill: one job per device and resource over [fromS, toS], with the value ids of the
 * resource (or the requested ones, which must exist). Reads the catalog; never the data endpoint.
 */
export async function planBackfill(
  pipeline: Pipeline,
  request: BackfillRequest,
  calls: CallOptions = {},
): Promise<PlannedBackfill[]> {
  const deviceIds = await selectDevices(pipeline, request.devices, calls);
  const planned: PlannedBackfill[] = [];
  const known = new Set<string>();
  for (const deviceId of deviceIds) {
    // the stored catalog while fresh (read and recorded when due, with the history jobs of new
    // values, as sync does); a dry run reads the API and records nothing
    const resources = request.dryRun
      ? await readCatalog(pipeline, deviceId, calls)
      : (
          await deviceCatalog(
            pipeline,
            deviceId,
            "refresh-due",
            calls,
            pipeline.logger.child({ device: deviceId }),
          )
        ).resources;
    for (const { resourceId, values } of resources) {
      for (const v of values) known.add(v);
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
    if (missing.length > 0) {
      const hint = missing.length === 1 ? didYouMean(missing[0] ?? "", known) : "";
      throw new Error(
        `unknown value id for these devices: ${missing.join(", ")}${hint} (see energy-etl values DEVICE)`,
      );
    }
  }
  return planned;
}

/**
 * Stores a plan as jobs (`JobStore.queue`): its jobs continue the unfinished jobs of their device,
 * resource and values that they overlap (and leave those of that backfill done already), and new
 * jobs cover the rest of their ranges.
 */
export function queueBackfill(
  pipeline: Pick<Pipeline, "store" | "now">,
  plan: readonly Pick<PlannedBackfill, "spec">[],
): QueuedBackfill {
  const specs = plan.map((p) => p.spec);
  return pipeline.store.jobs.queue(specs, countChunks, pipeline.now());
}

/**
 * What {@link queueBackfill} would make of a plan, storing nothing (a dry run): per planned job,
 * by start, the jobs it would continue with the chunks they have left, those done already, and
 * the new parts.
 */
export function remainingBackfill(
  pipeline: Pick<Pipeline, "store">,
  plan: readonly Pick<PlannedBackfill, "spec">[],
): PlannedBackfill[] {
  const matches = pipeline.store.jobs.match(
    plan.map((p) => p.spec),
    countChunks,
  );
  return matches.flatMap(({ continued, finished, created }) => {
    const stored = [...continued, ...finished].map((job): PlannedBackfill => {
      const { deviceId, resourceId, valueIds, fromS, toS, reason } = job;
      const chunks = countChunks(valueIds.length, fromS, toS);
      // a job whose chunking changed starts over (JobStore.queue)
      const chunksDone = chunks === job.chunksTotal ? job.chunksDone : 0;
      const done = job.status === "done";
      return {
        spec: { deviceId, resourceId, valueIds, fromS, toS, reason },
        chunks: done ? 0 : chunks - chunksDone,
        continues: { id: job.id, chunksDone, done },
      };
    });
    const added = created.map((part) => ({
      spec: part,
      chunks: countChunks(part.valueIds.length, part.fromS, part.toS),
    }));
    return [...stored, ...added].sort((a, b) => a.spec.fromS - b.spec.fromS);
  });
}

/** A device's resources and value lists read from the API, recorded nowhere (a dry run). */
async function readCatalog(
  pipeline: Pick<Pipeline, "client" | "forDevice">,
  deviceId: string,
  calls: CallOptions,
): Promise<CatalogResource[]> {
  const ask = <T>(task: () => Promise<T>) => pipeline.forDevice(deviceId, task);
  const { resource_ids } = await ask(() => pipeline.client.listResources(deviceId, calls));
  return Promise.all(
    resource_ids.map(async (resourceId) => ({
      resourceId,
      values: (await ask(() => pipeline.client.listValues(deviceId, resourceId, calls))).values,
    })),
  );
}

/**
 * Runs (or continues) a backfill job: every chunk not yet recorded as done is fetched and written,
 * and recorded done only after the sink stored it, so a killed process repeats at most the chunks
 * that were in flight. A job with a failed chunk waits FAILURE_BACKOFF (doubled per attempt)
 * before its next attempt and is parked after PARK_AFTER attempts. A finished manual or audit job
 * of every value of a resource that reaches back to its cursor moves the cursor forward to its
 * end; a cursor never moves backwards.
 */
export async function runBackfillJob(
  pipeline: Pipeline,
  run: RunContext,
  job: BackfillJob,
  progress?: BackfillProgress,
): Promise<BackfillJob> {
  const { store, owner } = pipeline;
  const log = run.logger.child({ job: job.id, device: job.deviceId, resource: job.resourceId });
  // claimed atomically before any chunk runs: another process (or another part of this one)
  // never works on the same job
  const claimed =
    !pipeline.activeJobs.has(job.id) &&
    // leases are a contract between processes: always the real clock, never an injected one
    store.jobs.claim(job.id, owner, JOB_LEASE_MS, Date.now());
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
  pipeline.activeJobs.add(job.id);
  try {
    // as stored when claimed: a request may have moved its end while it waited (JobStore.queue)
    const current = store.jobs.get(job.id) ?? job;
    return await workOnJob(pipeline, run, current, log, () => lost, progress);
  } finally {
    pipeline.activeJobs.delete(job.id);
    clearInterval(heartbeat);
    if (store.isOpen) store.jobs.releaseLease(job.id, owner);
  }
}

/** The chunks of a claimed job, and what its end means for the job and the cursor. */
async function workOnJob(
  pipeline: Pipeline,
  run: RunContext,
  job: BackfillJob,
  log: RunContext["logger"],
  leaseLost: () => boolean,
  progress?: BackfillProgress,
): Promise<BackfillJob> {
  const { store, config } = pipeline;
  const done = store.jobs.completedChunks(job.id);
  const todo = planChunks(job.valueIds, job.fromS, job.toS).filter((c) => !done.has(c.index));
  store.jobs.setStatus(job.id, "running", pipeline.now());
  log.info(
    { chunks: job.chunksTotal, remaining: todo.length, reason: job.reason },
    "backfill job started",
  );
  const deps = pipeline.chunkDeps;
  let firstError: unknown;
  await Promise.all(
    todo.map((chunk) =>
      pipeline.forDevice(job.deviceId, async () => {
        if (pipeline.isStopping || leaseLost() || isFatal(firstError)) return;
        const startedMs = Date.now();
        try {
          const result = await fetchChunk(deps, run, job.deviceId, job.resourceId, chunk);
          pipeline.observer?.chunkDone((Date.now() - startedMs) / 1000, result);
          store.jobs.recordChunkDone(
            job.id,
            chunk.index,
            {
              points: result.points,
              requests: result.requests,
              ...(result.newestRecordS === undefined
                ? {}
                : { newestRecordS: result.newestRecordS }),
            },
            pipeline.now(),
          );
          progress?.chunkDone(result);
        } catch (error) {
          // a chunk cut short by our own shutdown is no failure of the job
          if (cutByShutdown(error, pipeline.isStopping)) return;
          run.counters.chunkErrors++;
          pipeline.observer?.chunkFailed(error);
          firstError ??= error;
          run.chunkFailed(
            { job: job.id, ...chunkContext(job.deviceId, job.resourceId, chunk) },
            error,
          );
        }
      }),
    ),
  );
  const after = store.jobs.get(job.id) ?? job;
  if (leaseLost()) {
    // another process owns the job now: its status is that process's to write
    log.warn({ done: after.chunksDone, total: after.chunksTotal }, "backfill job handed over");
    return after;
  }
  if (after.chunksDone >= after.chunksTotal) {
    store.transaction(() => {
      store.jobs.finish(job.id, pipeline.now());
      moveCursorAfter(pipeline, after);
    });
    log.info({ points: after.points, requests: after.requests }, "backfill job done");
  } else if (firstError !== undefined && !isFatal(firstError)) {
    const nowS = epochSeconds(pipeline.now());
    const waitS = backoffS(
      after.attempts + 1,
      secondsBefore(nowS, config.failures.backoff),
      secondsBefore(nowS, config.failures.backoffMax),
    );
    const failed = store.jobs.recordFailure(
      job.id,
      messageOf(firstError),
      nowS + waitS,
      config.failures.parkAfter,
      pipeline.now(),
    );
    log.warn(
      {
        done: after.chunksDone,
        total: after.chunksTotal,
        attempts: failed.attempts,
        status: failed.status,
        error: messageOf(firstError),
      },
      failed.status === "parked"
        ? "backfill job parked after failing too often (energy-etl backfill --retry-parked)"
        : "backfill job unfinished; it is tried again later",
    );
  } else {
    const error = firstError === undefined ? null : messageOf(firstError);
    store.jobs.setStatus(job.id, "pending", pipeline.now(), error);
    log.info({ done: after.chunksDone, total: after.chunksTotal }, "backfill job paused");
  }
  if (isFatal(firstError)) throw firstError;
  return store.jobs.get(job.id) ?? after;
}

/**
 * A finished manual or audit job of every value of a resource, reaching back to where its cursor
 * stands, moves the cursor to what the job read (never backwards).
 */
function moveCursorAfter(pipeline: Pipeline, job: BackfillJob): void {
  if (job.reason !== "manual" && job.reason !== "audit") return;
  const { store } = pipeline;
  const all = store.catalog.list(job.deviceId, job.resourceId).filter((v) => v !== VALUES_ID);
  if (!all.every((v) => job.valueIds.includes(v))) return;
  const cursor = store.cursors.get(job.deviceId, job.resourceId);
  const reached = cursor === undefined ? undefined : (cursor.newestRecordS ?? cursor.startedS - 1);
  if (reached !== undefined && job.fromS > reached + 1) return;
  const now = pipeline.now();
  store.cursors.begin(job.deviceId, job.resourceId, job.fromS, now);
  store.cursors.commit(
    job.deviceId,
    job.resourceId,
    {
      fetchedUntilS: Math.min(job.toS, epochSeconds(pipeline.apiNow())),
      ...(job.newestRecordS === undefined ? {} : { newestRecordS: job.newestRecordS }),
    },
    now,
  );
}

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

/** Runs jobs one after the other as one recorded run of kind `backfill`. */
export async function runBackfillJobs(
  pipeline: Pipeline,
  jobs: readonly BackfillJob[],
  progress?: BackfillProgress,
): Promise<BackfillRunResult> {
  const { store } = pipeline;
  const started = pipeline.now();
  const run = RunContext.create(
    store.runs.start("backfill", started, pipeline.owner),
    "backfill",
    pipeline.logger,
  );
  const finished: BackfillJob[] = [];
  let fatal: unknown;
  try {
    for (const job of jobs) {
      if (pipeline.isStopping) break;
      finished.push(await runBackfillJob(pipeline, run, job, progress));
    }
  } catch (error) {
    if (!cutByShutdown(error, pipeline.isStopping)) fatal = error;
  }
  const failed = finished.filter((j) => j.status === "failed" || j.status === "parked");
  const errors = failed.length + (fatal === undefined ? 0 : 1);
  const status =
    fatal !== undefined || (jobs.length > 0 && failed.length === jobs.length)
      ? "failed"
      : pipeline.isStopping
        ? "interrupted"
        : errors > 0
          ? "partial"
          : "ok";
  const { counters } = run;
  const summary = {
    status,
    devices: new Set(jobs.map((j) => j.deviceId)).size,
    requests: counters.requests,
    points: counters.points,
    errors,
    detail:
      errors > 0
        ? JSON.stringify([
            ...failed.map((j) => ({ job: j.id, error: j.lastError })),
            ...(fatal ? [{ error: messageOf(fatal) }] : []),
          ])
        : null,
  } as const;
  run.reportFailures();
  if (!isFatal(fatal)) {
    await reportRun(
      pipeline,
      run,
      summary,
      pipeline.now().getTime() - started.getTime(),
      new Set(jobs.map((j) => j.deviceId)),
    );
  }
  // the run ends last, once all of it (its report included) is done
  store.runs.finish(run.id, summary, pipeline.now());
  if (fatal !== undefined) throw fatal;
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
