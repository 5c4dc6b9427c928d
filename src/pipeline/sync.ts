import { resolveSyncStart } from "../config.js";
import { RecordEncoder } from "../transform/record-encoder.js";
import { subtractDuration } from "../util/iso-duration.js";
import { runBackfillJob } from "./backfill.js";
import { refreshCatalog } from "./catalog.js";
import { isFatal, messageOf } from "./errors.js";
import { chunkContext, fetchChunk } from "./fetch-chunk.js";
import type { Pipeline } from "./pipeline.js";
import { planChunks, timeWindows } from "./plan-chunks.js";
import { reportRun } from "./run-report.js";
import { inShard } from "./shard.js";

/** What one device's part of a sync did. */
export interface DeviceSyncResult {
  readonly deviceId: string;
  readonly resources: number;
  readonly chunks: number;
  readonly points: number;
  /** Value ids seen for the first time on a device that already had a watermark. */
  readonly newValues: number;
  /** The first error, when the device (or one of its chunks) failed. */
  readonly error?: string;
}

/** What a whole sync cycle did; also recorded in the runs table. */
export interface SyncResult {
  readonly runId: number;
  /** `interrupted`: stopped by a signal; windows not fetched keep their watermark. */
  readonly status: "ok" | "partial" | "failed" | "interrupted";
  readonly devices: readonly DeviceSyncResult[];
  readonly requests: number;
  readonly points: number;
  readonly errors: number;
  readonly durationMs: number;
}

/** Options of {@link runSync}. */
export interface SyncOptions {
  /** Only these devices (`sync --device`); default: every device of this shard. */
  readonly deviceIds?: readonly string[];
}

/** Seconds since the epoch of a Date. */
const seconds = (date: Date): number => Math.floor(date.getTime() / 1000);

/**
 * One incremental sync cycle: lists devices, resources and values (refreshing the catalog), fetches
 * [watermark - SYNC_LOOKBACK, now] of every resource (from SYNC_START for one never seen), writes,
 * and moves the watermark only over time windows whose every chunk the sink has accepted. One
 * failing device does not stop the others. A value that is new on a device with a watermark gets
 * a backfill job from SYNC_START up to the watermark, run at the end of the cycle.
 */
export async function runSync(pipeline: Pipeline, options: SyncOptions = {}): Promise<SyncResult> {
  const { store, logger, counters } = pipeline;
  const started = pipeline.now();
  const runId = store.startRun("sync", started);
  const before = { requests: counters.requests, points: counters.points };
  const log = logger.child({ run: runId, kind: "sync" });
  log.info("sync started");
  let results: DeviceSyncResult[] = [];
  let fatal: unknown;
  try {
    const deviceIds = await selectDevices(pipeline, options.deviceIds);
    // every device's work settles before the run ends, even when one of them hit a fatal error
    const settled = await Promise.allSettled(
      deviceIds.map((id) => syncDevice(pipeline, id, runId)),
    );
    results = settled.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
    const failed = settled.find((s) => s.status === "rejected");
    if (failed) throw failed.reason;
    await runNewValueJobs(pipeline, deviceIds);
  } catch (error) {
    fatal = error;
  }
  const errors = results.filter((r) => r.error !== undefined).length + (fatal ? 1 : 0);
  const status =
    fatal !== undefined || (results.length > 0 && errors === results.length)
      ? "failed"
      : errors > 0
        ? "partial"
        : pipeline.isStopping
          ? "interrupted"
          : "ok";
  const result: SyncResult = {
    runId,
    status,
    devices: results,
    requests: counters.requests - before.requests,
    points: counters.points - before.points,
    errors,
    durationMs: pipeline.now().getTime() - started.getTime(),
  };
  const failures = results
    .filter((r) => r.error)
    .map((r) => ({ device: r.deviceId, error: r.error }));
  if (fatal !== undefined) failures.push({ device: "*", error: messageOf(fatal) });
  const summary = {
    status,
    devices: results.length,
    requests: result.requests,
    points: result.points,
    errors,
    detail: failures.length > 0 ? JSON.stringify(failures) : null,
  } as const;
  store.finishRun(runId, summary, pipeline.now());
  if (!isFatal(fatal)) {
    await reportRun(
      pipeline,
      "sync",
      summary,
      result.durationMs,
      new Set(results.map((r) => r.deviceId)),
    );
  }
  log.info(
    {
      status,
      devices: results.length,
      requests: result.requests,
      points: result.points,
      errors,
      ms: result.durationMs,
    },
    "sync finished",
  );
  if (fatal !== undefined) throw fatal;
  return result;
}

/** Devices of this shard, or the ones asked for (which must exist). */
async function selectDevices(
  pipeline: Pipeline,
  wanted: readonly string[] | undefined,
): Promise<string[]> {
  const { device_ids: all } = await pipeline.queue.add(() => pipeline.client.listDevices());
  if (wanted && wanted.length > 0) {
    const unknown = wanted.filter((id) => !all.includes(id));
    if (unknown.length > 0)
      throw new Error(`unknown device: ${unknown.join(", ")} (see energy-etl devices)`);
    return [...wanted];
  }
  const { count, index } = pipeline.config.shard;
  return all.filter((id) => inShard(id, count, index));
}

async function syncDevice(
  pipeline: Pipeline,
  deviceId: string,
  runId: number,
): Promise<DeviceSyncResult> {
  const log = pipeline.logger.child({ run: runId, device: deviceId });
  const totals = { resources: 0, chunks: 0, points: 0, newValues: 0 };
  try {
    const { resource_ids } = await pipeline.queue.add(() =>
      pipeline.client.listResources(deviceId),
    );
    let firstError: unknown;
    for (const resourceId of resource_ids) {
      const outcome = await syncResource(pipeline, deviceId, resourceId, log);
      totals.resources++;
      totals.chunks += outcome.chunks;
      totals.points += outcome.points;
      totals.newValues += outcome.newValues;
      firstError ??= outcome.error;
      if (isFatal(outcome.error)) throw outcome.error;
    }
    if (firstError !== undefined) return { deviceId, ...totals, error: messageOf(firstError) };
    log.debug(totals, "device synced");
    return { deviceId, ...totals };
  } catch (error) {
    if (isFatal(error)) throw error;
    log.error({ error: messageOf(error) }, "device sync failed");
    return { deviceId, ...totals, error: messageOf(error) };
  }
}

interface ResourceOutcome {
  chunks: number;
  points: number;
  newValues: number;
  error?: unknown;
}

async function syncResource(
  pipeline: Pipeline,
  deviceId: string,
  resourceId: string,
  log: Pipeline["logger"],
): Promise<ResourceOutcome> {
  const { client, store, config } = pipeline;
  const { values } = await pipeline.queue.add(() => client.listValues(deviceId, resourceId));
  const now = pipeline.now();
  const nowS = seconds(now);
  const newValues = refreshCatalog(pipeline, deviceId, resourceId, values, log);
  const outcome: ResourceOutcome = { chunks: 0, points: 0, newValues };
  const watermark = store.getWatermark(deviceId, resourceId);
  const fromS =
    watermark === undefined
      ? seconds(resolveSyncStart(config.sync.start, now))
      : seconds(subtractDuration(new Date((watermark + 1) * 1000), config.sync.lookback));
  const chunks = planChunks(values, fromS, nowS);
  if (chunks.length === 0) return outcome;
  const windows = timeWindows(fromS, nowS);
  const groups = chunks.length / windows.length;
  const remaining = windows.map(() => groups);
  let windowsDone = 0;
  const encoder = new RecordEncoder(pipeline.decoder, deviceId, resourceId);

  await Promise.all(
    chunks.map((chunk) =>
      pipeline.queue.add(async () => {
        if (pipeline.isStopping || isFatal(outcome.error)) return;
        try {
          const result = await fetchChunk(pipeline, deviceId, resourceId, chunk, encoder);
          outcome.chunks++;
          outcome.points += result.points;
          const w = Math.floor(chunk.index / groups);
          remaining[w] = (remaining[w] ?? 0) - 1;
          let advanced = false;
          while (windowsDone < windows.length && remaining[windowsDone] === 0) {
            windowsDone++;
            advanced = true;
          }
          const window = windows[windowsDone - 1];
          if (advanced && window) {
            await pipeline.sink.flush();
            store.advanceWatermark(deviceId, resourceId, window.toS, pipeline.now());
          }
        } catch (error) {
          outcome.error ??= error;
          log.error(
            { ...chunkContext(deviceId, resourceId, chunk), error: messageOf(error) },
            "chunk failed",
          );
        }
      }),
    ),
  );
  return outcome;
}

/**
 * Backfill jobs queued for new values of the synced devices (manual backfills are left to
 * `run`/`backfill`).
 */
async function runNewValueJobs(pipeline: Pipeline, deviceIds: readonly string[]): Promise<void> {
  for (const job of pipeline.store.unfinishedBackfillJobs()) {
    if (job.reason !== "new_value" || !deviceIds.includes(job.deviceId) || pipeline.isStopping)
      continue;
    const done = await runBackfillJob(pipeline, job);
    if (done.status !== "done") {
      pipeline.logger.warn(
        { job: job.id, device: job.deviceId, error: done.lastError },
        "new-value backfill unfinished",
      );
    }
  }
}
