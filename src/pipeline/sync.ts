import type { Logger } from "pino";
import { COMMON_VALUE_IDS } from "../api/common-values.js";
import { ApiError } from "../api/errors.js";
import { messageOf } from "../util/errors.js";
import { epochSeconds } from "../util/utc-time.js";
import { runBackfillJob } from "./backfill.js";
import { type CatalogPolicy, deviceCatalog, readDeviceCatalog } from "./catalog.js";
import { cutByShutdown, failsOnItsOwn, isFatal } from "./errors.js";
import { type ChunkResult, chunkContext, fetchChunk } from "./fetch-chunk.js";
import type { Pipeline } from "./pipeline.js";
import { type Chunk, countChunks, planChunks, timeWindows, valueGroups } from "./plan-chunks.js";
import {
  backoffS,
  fetchWindow,
  planSync,
  secondsBefore,
  syncRules,
  type Window,
} from "./plan-sync.js";
import { RunContext, type RunCounters, runStatus } from "./run-context.js";
import { reportRun } from "./run-report.js";
import { selectDevices } from "./select-devices.js";

/** What one device's part of a sync did. */
export interface DeviceSyncResult {
  readonly deviceId: string;
  readonly resources: number;
  readonly chunks: number;
  readonly points: number;
  /** Value ids seen for the first time on a device that already had a cursor. */
  readonly newValues: number;
  /** Rows, members and lines kept as dead letters. */
  readonly deadLetters: number;
  /** The earliest "silent since" of its resources (epoch s), when one is silent. */
  readonly silentSinceS?: number;
  /** Resources that waited for a retry after earlier failures. */
  readonly waiting: number;
  /** The first error, when the device (or one of its chunks) failed. */
  readonly error?: string;
}

/** What a whole sync cycle did; also recorded in the runs table. */
export interface SyncResult {
  readonly runId: number;
  /** `interrupted`: stopped by a signal; windows not fetched keep their cursor. */
  readonly status: "ok" | "partial" | "failed" | "interrupted";
  readonly devices: readonly DeviceSyncResult[];
  readonly requests: number;
  readonly points: number;
  readonly errors: number;
  readonly deadLetters: number;
  readonly durationMs: number;
  /** Everything the run counted. */
  readonly counters: Readonly<RunCounters>;
}

/** Options of {@link runSync}. */
export interface SyncOptions {
  /** Only these devices (`sync --device`); default: every device of this shard. */
  readonly deviceIds?: readonly string[];
  /** Whether catalogs due for a refresh are read first (default) or used as stored. */
  readonly catalog?: CatalogPolicy;
}

/**
 * One incremental sync cycle, a run of kind `sync` recorded as ended only once all of it is done
 * (its report to the sink included). It takes the devices, resources and value lists from the
 * stored catalog (reading the API's where never read, marked stale, or, by `options.catalog`, due after
 * CATALOG_REFRESH), and reads each resource by the cursor rules (README "Cursors"): from its newest record minus
 * SYNC_LOOKBACK up to now, never beyond LATE_DATA_HORIZON; a silent resource is only probed. A
 * cursor moves over a window only once its every chunk is written, and only as far as the data
 * and the API's clock say. One failing device does not stop the others; a failing resource waits
 * longer before each retry. A value new on a device with a cursor gets a history job, run at the
 * end of the cycle.
 */
export async function runSync(pipeline: Pipeline, options: SyncOptions = {}): Promise<SyncResult> {
  const { store, logger } = pipeline;
  const started = pipeline.now();
  const run = RunContext.create(store.runs.start("sync", started, pipeline.owner), "sync", logger);
  run.logger.info("sync started");
  let results: DeviceSyncResult[] = [];
  let fatal: unknown;
  try {
    const wanted = options.deviceIds && options.deviceIds.length > 0 ? options.deviceIds : "all";
    const policy = options.catalog ?? "refresh-due";
    const deviceIds = await selectDevices(pipeline, wanted, run.calls, policy);
    // a token (when none is held) also tells the API's clock before the first plan is made
    await pipeline.client.accessToken();
    // every device's work settles before the run ends, even when one of them hit a fatal error
    const settled = await Promise.allSettled(
      deviceIds.map((id) => syncDevice(pipeline, run, id, policy)),
    );
    results = settled.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
    const failed = settled.find((s) => s.status === "rejected");
    if (failed) throw failed.reason;
    await runNewValueJobs(pipeline, run, deviceIds);
  } catch (error) {
    // cut short by our own shutdown: the run is interrupted, not failed
    if (!cutByShutdown(error, pipeline.isStopping)) fatal = error;
  }
  const errors = results.filter((r) => r.error !== undefined).length + (fatal ? 1 : 0);
  const status = runStatus({
    fatal: fatal !== undefined,
    stopping: pipeline.isStopping,
    parts: results.length,
    failed: errors,
  });
  const { counters } = run;
  const result: SyncResult = {
    runId: run.id,
    status,
    devices: results,
    requests: counters.requests,
    points: counters.points,
    errors,
    deadLetters: counters.deadLetters,
    durationMs: pipeline.now().getTime() - started.getTime(),
    counters: { ...counters },
  };
  const failures = results
    .filter((r) => r.error)
    .map((r) => ({ device: r.deviceId, error: r.error }));
  if (fatal !== undefined) failures.push({ device: "*", error: messageOf(fatal) });
  const summary = {
    status,
    devices: results.length,
    requests: counters.requests,
    points: counters.points,
    errors,
    detail: failures.length > 0 ? JSON.stringify(failures) : null,
  } as const;
  run.reportFailures();
  if (!isFatal(fatal)) await reportRun(pipeline, run, summary, result.durationMs);
  // the run ends last, once all of it is done: `status` and the service's next tick read this
  store.runs.finish(run.id, summary, pipeline.now());
  run.logger.info(
    {
      status,
      devices: results.length,
      requests: counters.requests,
      dataRequests: counters.dataRequests,
      catalogReads: counters.catalogReads,
      points: counters.points,
      errors,
      deadLetters: counters.deadLetters,
      droppedMembers: counters.droppedMembers,
      droppedRows: counters.droppedRows,
      duplicateRows: counters.duplicateRows,
      ms: result.durationMs,
    },
    "sync finished",
  );
  if (fatal !== undefined) throw fatal;
  return result;
}

async function syncDevice(
  pipeline: Pipeline,
  run: RunContext,
  deviceId: string,
  policy: CatalogPolicy,
): Promise<DeviceSyncResult> {
  const log = run.logger.child({ device: deviceId });
  const totals = { resources: 0, chunks: 0, points: 0, newValues: 0, deadLetters: 0, waiting: 0 };
  let silentSinceS: number | undefined;
  const result = (error?: unknown): DeviceSyncResult => ({
    deviceId,
    ...totals,
    ...(silentSinceS === undefined ? {} : { silentSinceS }),
    ...(error === undefined ? {} : { error: messageOf(error) }),
  });
  const add = (outcome: ResourceOutcome): void => {
    totals.chunks += outcome.chunks;
    totals.points += outcome.points;
    totals.deadLetters += outcome.deadLetters;
    if (outcome.waiting) totals.waiting++;
    if (outcome.silentSinceS !== undefined) {
      silentSinceS = Math.min(silentSinceS ?? outcome.silentSinceS, outcome.silentSinceS);
    }
  };
  try {
    let catalog = await deviceCatalog(pipeline, deviceId, policy, run.calls, log);
    if (catalog.read) run.counters.catalogReads++;
    totals.newValues += catalog.newValues;
    let firstError: unknown;
    let unknown: string[] = [];
    for (const { resourceId, values } of catalog.resources) {
      const outcome = await syncResource(pipeline, run, deviceId, resourceId, values, log);
      totals.resources++;
      add(outcome);
      if (outcome.unknown) unknown.push(resourceId);
      else firstError ??= outcome.error;
      if (isFatal(outcome.error)) throw outcome.error;
    }
    if (unknown.length > 0 && !catalog.read) {
      // the API says a value (or the device) is unknown: the stored catalog is out of date
      log.info({ resources: unknown }, "catalog out of date (HTTP 404 on data): reading it again");
      catalog = await readDeviceCatalog(pipeline, deviceId, run.calls, log);
      run.counters.catalogReads++;
      totals.newValues += catalog.newValues;
      const again = unknown;
      unknown = [];
      for (const { resourceId, values } of catalog.resources) {
        if (!again.includes(resourceId)) continue;
        const outcome = await syncResource(pipeline, run, deviceId, resourceId, values, log, true);
        add(outcome);
        firstError ??= outcome.error;
        if (isFatal(outcome.error)) throw outcome.error;
      }
    }
    log.info({ ...totals, catalogRead: catalog.read }, "device synced");
    return result(firstError);
  } catch (error) {
    if (cutByShutdown(error, pipeline.isStopping)) return result();
    if (isFatal(error)) throw error;
    log.error({ error: messageOf(error) }, "device sync failed");
    return result(error);
  }
}

interface ResourceOutcome {
  chunks: number;
  points: number;
  deadLetters: number;
  waiting: boolean;
  silentSinceS?: number;
  error?: unknown;
  /** The API answered 404 for a data request: the stored catalog may be out of date. */
  unknown?: boolean;
}

/**
 * Syncs one resource by its cursor. `final`: the catalog was just read, so a 404 is a failure
 * like any other (otherwise it is reported as `unknown` and nothing is recorded against the
 * cursor: the caller reads the catalog again first).
 */
async function syncResource(
  pipeline: Pipeline,
  run: RunContext,
  deviceId: string,
  resourceId: string,
  values: readonly string[],
  log: Logger,
  final = false,
): Promise<ResourceOutcome> {
  const { store, config } = pipeline;
  const outcome: ResourceOutcome = { chunks: 0, points: 0, deadLetters: 0, waiting: false };
  const failure: FailureHandling = { outcome, final };
  // each resource plans by the API's clock at that moment (a local clock ahead reads no future)
  const nowS = epochSeconds(pipeline.apiNow());
  const rules = syncRules(config, nowS);
  const cursor = repairFuture(pipeline, deviceId, resourceId, nowS, rules.horizonS, log);
  const plan = planSync(cursor, nowS, rules);
  const context = { resource: resourceId };
  switch (plan.kind) {
    case "none":
      return outcome;
    case "wait":
      outcome.waiting = true;
      log.debug(
        { ...context, retryAt: new Date(plan.retryAtS * 1000).toISOString() },
        "resource waits after failures",
      );
      return outcome;
    case "quiet":
      outcome.silentSinceS = plan.silentSinceS;
      return outcome;
    case "probe": {
      const found = await probe(pipeline, run, deviceId, resourceId, values, plan.windows, failure);
      const since = plan.silentSinceS;
      if (outcome.error !== undefined) return outcome;
      if (!found) {
        outcome.silentSinceS = since;
        if (cursor?.nextProbeS === undefined) {
          log.warn(
            { ...context, silentSince: new Date(since * 1000).toISOString() },
            "resource is silent: probing it instead of fetching",
          );
        }
        store.cursors.setNextProbe(
          deviceId,
          resourceId,
          nowS + rules.probeIntervalS,
          pipeline.now(),
        );
        return outcome;
      }
      log.info(
        { ...context, silentSince: new Date(since * 1000).toISOString() },
        "silent resource has new data: fetching",
      );
      const fetch = fetchWindow(store.cursors.get(deviceId, resourceId), nowS, rules);
      if (fetch === undefined) return outcome;
      return fetchResource(pipeline, run, deviceId, resourceId, values, fetch, failure, log);
    }
    case "fetch":
      return fetchResource(pipeline, run, deviceId, resourceId, values, plan, failure, log);
  }
}

/** Where a resource's sync counts, and whether a 404 is final (see {@link syncResource}). */
interface FailureHandling {
  readonly outcome: ResourceOutcome;
  readonly final: boolean;
}

/** True when a 404 on data means the catalog should be read again rather than a failure counted. */
function catalogMayBeStale(error: unknown, failure: FailureHandling): boolean {
  if (failure.final || !(error instanceof ApiError) || error.code !== "not_found") return false;
  failure.outcome.unknown = true;
  return true;
}

/** Slack before a cursor counts as ahead of the API's clock (clocks disagree by seconds). */
const FUTURE_SLACK_S = 300;

/**
 * The cursor of a resource, repaired when it is ahead of the API's clock: only a watermark that a
 * local clock running ahead had set before migration 002 can be. Nothing after the clock exists,
 * so the horizon is read once again; nothing is skipped.
 */
function repairFuture(
  pipeline: Pipeline,
  deviceId: string,
  resourceId: string,
  nowS: number,
  horizonS: number,
  log: Logger,
) {
  const { store } = pipeline;
  const cursor = store.cursors.get(deviceId, resourceId);
  if (cursor?.newestRecordS === undefined || cursor.newestRecordS <= nowS + FUTURE_SLACK_S) {
    return cursor;
  }
  log.warn(
    {
      resource: resourceId,
      newestRecord: new Date(cursor.newestRecordS * 1000).toISOString(),
      apiClock: new Date(nowS * 1000).toISOString(),
    },
    "cursor ahead of the API's clock (set by a clock running ahead): reading the horizon again",
  );
  store.cursors.repair(deviceId, resourceId, nowS - horizonS, pipeline.now());
  return store.cursors.get(deviceId, resourceId);
}

/**
 * Probes a silent resource: one value group (the one with the most of the values every device
 * has) over each window. True when a record newer than the resource's newest came.
 */
async function probe(
  pipeline: Pipeline,
  run: RunContext,
  deviceId: string,
  resourceId: string,
  values: readonly string[],
  windows: readonly Window[],
  failure: FailureHandling,
): Promise<boolean> {
  const { outcome } = failure;
  const group = probeGroup(values);
  if (group === undefined) return false;
  const before = pipeline.store.cursors.get(deviceId, resourceId)?.newestRecordS ?? -1;
  let found = false;
  for (const window of windows) {
    const chunk: Chunk = { index: 0, values: group, fromS: window.fromS, toS: window.toS };
    try {
      const result = await pipeline.forDevice(deviceId, () =>
        fetchChunk(pipeline.chunkDeps, run, deviceId, resourceId, chunk),
      );
      outcome.chunks++;
      outcome.points += result.points;
      outcome.deadLetters += result.deadLetters;
      if ((result.newestRecordS ?? -1) > before) found = true;
    } catch (error) {
      if (cutByShutdown(error, pipeline.isStopping)) return false;
      outcome.error ??= error;
      if (!catalogMayBeStale(error, failure)) {
        recordFailure(pipeline, run, deviceId, resourceId, error);
      }
      return false;
    }
  }
  return found;
}

/** The value group a probe reads: the one holding the most values every device has. */
export function probeGroup(values: readonly string[]): readonly string[] | undefined {
  const common = new Set(COMMON_VALUE_IDS);
  let best: readonly string[] | undefined;
  let bestScore = -1;
  for (const group of valueGroups(values)) {
    const score = group.filter((v) => common.has(v)).length;
    if (score > bestScore) {
      best = group;
      bestScore = score;
    }
  }
  return best;
}

/** Per time window of a fetch: chunks still out, chunks failed, and what the done ones said. */
interface WindowProgress {
  readonly window: Window;
  remaining: number;
  failed: Chunk[];
  newestS?: number;
  serverTimeS: number;
}

async function fetchResource(
  pipeline: Pipeline,
  run: RunContext,
  deviceId: string,
  resourceId: string,
  values: readonly string[],
  plan: { readonly window: Window; readonly beyondHorizonS?: number },
  failure: FailureHandling,
  log: Logger,
): Promise<ResourceOutcome> {
  const { store } = pipeline;
  const { outcome } = failure;
  const { fromS, toS } = plan.window;
  if (plan.beyondHorizonS !== undefined) {
    log.warn(
      {
        resource: resourceId,
        lostFrom: new Date(plan.beyondHorizonS * 1000).toISOString(),
        lostTo: new Date((fromS - 1) * 1000).toISOString(),
      },
      "late data older than LATE_DATA_HORIZON is not fetched (energy-etl audit finds it)",
    );
  }
  const chunks = planChunks(values, fromS, toS);
  if (chunks.length === 0) return outcome;
  store.cursors.begin(deviceId, resourceId, fromS, pipeline.now());
  const spans = timeWindows(fromS, toS);
  const groups = chunks.length / spans.length;
  const windows: WindowProgress[] = spans.map((window) => ({
    window,
    remaining: groups,
    failed: [],
    serverTimeS: window.toS,
  }));
  let committed = 0;
  let succeeded = 0;
  const commitReady = (parked: boolean): void => {
    while (committed < windows.length) {
      const w = windows[committed];
      if (w === undefined || w.remaining > 0 || (w.failed.length > 0 && !parked)) return;
      store.cursors.commit(
        deviceId,
        resourceId,
        {
          fetchedUntilS: Math.min(w.window.toS, w.serverTimeS),
          ...(w.newestS === undefined ? {} : { newestRecordS: w.newestS }),
        },
        pipeline.now(),
      );
      committed++;
    }
  };
  const done = (chunk: Chunk, result: ChunkResult): void => {
    const w = windows[Math.floor(chunk.index / groups)];
    if (w === undefined) return;
    w.remaining--;
    w.serverTimeS = Math.min(w.serverTimeS, result.serverTimeS);
    if (result.newestRecordS !== undefined) {
      w.newestS = Math.max(w.newestS ?? result.newestRecordS, result.newestRecordS);
    }
  };
  let firstError: unknown;
  await Promise.all(
    chunks.map((chunk) =>
      pipeline.forDevice(deviceId, async () => {
        if (pipeline.isStopping || isFatal(firstError)) return;
        const startedMs = Date.now();
        try {
          const result = await fetchChunk(pipeline.chunkDeps, run, deviceId, resourceId, chunk);
          pipeline.observer?.chunkDone((Date.now() - startedMs) / 1000, result);
          succeeded++;
          outcome.chunks++;
          outcome.points += result.points;
          outcome.deadLetters += result.deadLetters;
          done(chunk, result);
          commitReady(false);
        } catch (error) {
          // a chunk cut short by our own shutdown: its window is read again next time
          if (cutByShutdown(error, pipeline.isStopping)) return;
          run.counters.chunkErrors++;
          pipeline.observer?.chunkFailed(error);
          firstError ??= error;
          const w = windows[Math.floor(chunk.index / groups)];
          if (w) {
            w.remaining--;
            w.failed.push(chunk);
          }
          run.chunkFailed(chunkContext(deviceId, resourceId, chunk), error);
        }
      }),
    ),
  );
  if (firstError === undefined) return outcome;
  outcome.error = firstError;
  if (isFatal(firstError) || catalogMayBeStale(firstError, failure)) return outcome;
  const failed = windows.flatMap((w) => w.failed);
  const failures = recordFailure(pipeline, run, deviceId, resourceId, firstError);
  // a window that keeps failing on its own (or while the rest of the resource syncs) is handed
  // over as a parked job and the cursor reads on after it; a dependency that is down is waited for
  const onItsOwn = failsOnItsOwn(firstError) || succeeded > 0;
  if (failures >= pipeline.config.failures.parkAfter && onItsOwn) {
    const parkedUntilS = Math.max(...failed.map((c) => c.toS));
    store.transaction(() => {
      for (const chunk of failed) {
        store.jobs.queue(
          [
            {
              deviceId,
              resourceId,
              valueIds: chunk.values,
              fromS: chunk.fromS,
              toS: chunk.toS,
              reason: "parked",
            },
          ],
          countChunks,
          pipeline.now(),
          "parked",
        );
      }
      store.cursors.park(deviceId, resourceId, parkedUntilS, pipeline.now());
      commitReady(true);
    });
    log.warn(
      { resource: resourceId, chunks: failed.length, failures, error: messageOf(firstError) },
      "windows that keep failing are parked as jobs; the cursor moves on (energy-etl status)",
    );
  }
  return outcome;
}

/** Counts a failed attempt on the cursor; the next one waits FAILURE_BACKOFF doubled per failure. */
function recordFailure(
  pipeline: Pipeline,
  run: RunContext,
  deviceId: string,
  resourceId: string,
  error: unknown,
): number {
  const { store, config } = pipeline;
  const now = pipeline.now();
  // the same clock the planning reads retry_at with
  const nowS = epochSeconds(pipeline.apiNow());
  const previous = store.cursors.get(deviceId, resourceId)?.failures ?? 0;
  const waitS = backoffS(
    previous + 1,
    secondsBefore(nowS, config.failures.backoff),
    secondsBefore(nowS, config.failures.backoffMax),
  );
  const failures = store.cursors.recordFailure(
    deviceId,
    resourceId,
    messageOf(error),
    nowS + waitS,
    now,
  );
  run.logger.debug({ device: deviceId, resource: resourceId, failures, waitS }, "resource waits");
  return failures;
}

/**
 * Backfill jobs queued for new values of the synced devices (manual backfills are left to
 * `run`/`backfill`).
 */
async function runNewValueJobs(
  pipeline: Pipeline,
  run: RunContext,
  deviceIds: readonly string[],
): Promise<void> {
  const nowS = epochSeconds(pipeline.now());
  for (const job of pipeline.store.jobs.due(nowS, pipeline.owner, Date.now())) {
    if (job.reason !== "new_value" || !deviceIds.includes(job.deviceId) || pipeline.isStopping)
      continue;
    const done = await runBackfillJob(pipeline, run, job);
    if (done.status !== "done") {
      run.logger.warn(
        { job: job.id, device: job.deviceId, error: done.lastError },
        "new-value backfill unfinished",
      );
    }
  }
}
