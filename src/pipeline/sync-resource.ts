import type { Logger } from "pino";
import { COMMON_VALUE_IDS } from "../api/common-values.js";
import { ApiError } from "../api/errors.js";
import type { Config } from "../config.js";
import type { StateStore } from "../state/state-store.js";
import type { Cursor } from "../state/types.js";
import { messageOf } from "../util/errors.js";
import { epochSeconds, isoSeconds } from "../util/utc-time.js";
import type { CatalogResource } from "./catalog.js";
import type { ChunkResult } from "./chunk-writer.js";
import {
  afterCommit,
  afterLookback,
  afterPark,
  afterRepair,
  failureWaitS,
  fetchWindow,
  futureRepair,
  planSync,
  syncRules,
  type Window,
  WindowCommits,
} from "./cursor.js";
import { failsOnItsOwn, isFatal } from "./errors.js";
import type { Pipeline } from "./pipeline.js";
import { type Chunk, countChunks, planChunks, timeWindows, valueGroups } from "./plan-chunks.js";
import type { RunContext } from "./run-context.js";

export interface SyncParts extends Pick<Pipeline, "chunks" | "now" | "apiNow" | "isStopping"> {
  readonly store: Pick<StateStore, "cursors" | "jobs" | "transaction">;
  readonly config: Pick<Config, "sync" | "failures">;
}

export interface ResourceOutcome {
  chunks: number;
  points: number;
  deadLetters: number;
  waiting: boolean;
  silentSinceS?: number;
  error?: unknown;
  /** The API answered 404 for a data request: the stored catalog may be out of date. */
  unknown?: boolean;
}

/** One resource of a device, and its log. */
export type ResourceTarget = CatalogResource & { readonly deviceId: string; readonly log: Logger };

/**
 * Syncs one resource by its cursor; `final` (catalog just read): a 404 fails, else it is `unknown`.
 */
export async function syncResource(
  parts: SyncParts,
  run: RunContext,
  target: ResourceTarget,
  final: boolean,
): Promise<ResourceOutcome> {
  const { store, config } = parts;
  const { deviceId, resourceId, log } = target;
  const outcome: ResourceOutcome = { chunks: 0, points: 0, deadLetters: 0, waiting: false };
  // each resource plans by the API's clock at that moment (a local clock ahead reads no future)
  const nowS = epochSeconds(parts.apiNow());
  const rules = syncRules(config, nowS);
  const cursor = repairFuture(parts, target, nowS, rules.horizonS);
  const plan = planSync(cursor, nowS, rules);
  const context = { resource: resourceId };
  const failing = { outcome, final };
  switch (plan.kind) {
    case "none":
      return outcome;
    case "wait":
      outcome.waiting = true;
      log.debug(
        { ...context, retryAt: isoSeconds(plan.retryAtS) },
        "resource waits after failures",
      );
      return outcome;
    case "quiet":
      outcome.silentSinceS = plan.silentSinceS;
      return outcome;
    case "probe": {
      const found = await probe(parts, run, target, plan.windows, failing);
      const since = isoSeconds(plan.silentSinceS);
      if (outcome.error !== undefined) return outcome;
      if (!found) {
        outcome.silentSinceS = plan.silentSinceS;
        if (cursor?.nextProbeS === undefined) {
          log.warn(
            { ...context, silentSince: since },
            "resource is silent: probing it instead of fetching",
          );
        }
        store.cursors.setNextProbe(deviceId, resourceId, nowS + rules.probeIntervalS, parts.now());
        return outcome;
      }
      log.info({ ...context, silentSince: since }, "silent resource has new data: fetching");
      const probed = store.cursors.get(deviceId, resourceId);
      const fetch = fetchWindow(probed, nowS, rules);
      if (fetch === undefined) return outcome;
      return fetchResource(parts, run, target, fetch, failing, probed);
    }
    case "fetch":
      return fetchResource(parts, run, target, plan, failing, cursor);
  }
}

/** Where a resource's sync counts, and whether a 404 is final (see {@link syncResource}). */
interface Failing {
  readonly outcome: ResourceOutcome;
  readonly final: boolean;
}

/** True when a 404 on data means the catalog should be read again rather than a failure counted. */
function catalogMayBeStale(error: unknown, failing: Failing): boolean {
  if (failing.final || !(error instanceof ApiError) || error.code !== "not_found") return false;
  failing.outcome.unknown = true;
  return true;
}

/** The cursor of a resource, repaired when it is ahead of the API's clock (see futureRepair). */
function repairFuture(parts: SyncParts, target: ResourceTarget, nowS: number, horizonS: number) {
  const { store } = parts;
  const { deviceId, resourceId } = target;
  const cursor = store.cursors.get(deviceId, resourceId);
  const repairTo = futureRepair(cursor, nowS, horizonS);
  if (repairTo === undefined || cursor?.newestRecordS === undefined) return cursor;
  target.log.warn(
    {
      resource: resourceId,
      newestRecord: isoSeconds(cursor.newestRecordS),
      apiClock: isoSeconds(nowS),
    },
    "cursor ahead of the API's clock (set by a clock running ahead): reading the horizon again",
  );
  store.cursors.update(deviceId, resourceId, (c) => afterRepair(c, repairTo), parts.now());
  return store.cursors.get(deviceId, resourceId);
}

/** Probes a silent resource: one value group over each window. True when a newer record came. */
async function probe(
  parts: SyncParts,
  run: RunContext,
  target: ResourceTarget,
  windows: readonly Window[],
  failing: Failing,
): Promise<boolean> {
  const { outcome } = failing;
  const group = probeGroup(target.values);
  if (group === undefined) return false;
  const before = parts.store.cursors.get(target.deviceId, target.resourceId)?.newestRecordS ?? -1;
  const chunks: Chunk[] = windows.map((w) => ({ index: 0, values: group, ...w }));
  let found = false;
  // one window after the other: a failure ends the probe
  for (const chunk of chunks) {
    // a probe moves no cursor: the fetch after it reads the window again
    for await (const done of parts.chunks.run(run, target, [chunk], { commit: () => undefined })) {
      if ("error" in done) {
        outcome.error ??= done.error;
        if (!catalogMayBeStale(done.error, failing)) recordFailure(parts, run, target, done.error);
        return false;
      }
      outcome.chunks++;
      outcome.points += done.result.points;
      outcome.deadLetters += done.result.deadLetters;
      if ((done.result.newestRecordS ?? -1) > before) found = true;
    }
    if (parts.isStopping) return false;
  }
  return found;
}

/** The value group a probe reads: the one holding the most values every device has. */
function probeGroup(values: readonly string[]): readonly string[] | undefined {
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

/** Fetches a resource's window, committing each window once written (see WindowCommits). */
async function fetchResource(
  parts: SyncParts,
  run: RunContext,
  target: ResourceTarget,
  plan: { readonly window: Window; readonly beyondHorizonS?: number; readonly lookback: boolean },
  failing: Failing,
  cursor: Cursor | undefined,
): Promise<ResourceOutcome> {
  const { store } = parts;
  const { deviceId, resourceId } = target;
  const { outcome } = failing;
  const { fromS, toS } = plan.window;
  if (plan.beyondHorizonS !== undefined) {
    target.log.warn(
      {
        resource: resourceId,
        lostFrom: isoSeconds(plan.beyondHorizonS),
        lostTo: isoSeconds(fromS - 1),
      },
      "late data older than LATE_DATA_HORIZON is not fetched (energy-etl audit finds it)",
    );
  }
  const chunks = planChunks(target.values, fromS, toS);
  if (chunks.length === 0) return outcome;
  // the cursor as last read or saved here: a commit is one statement while nobody else moved it
  let seen = cursor ?? store.cursors.begin(deviceId, resourceId, fromS, parts.now());
  const spans = timeWindows(fromS, toS);
  const windows = new WindowCommits(spans, chunks.length / spans.length);
  const commitDue = (parked: boolean): void => {
    for (const due of windows.due(parked)) {
      const next = (c: Cursor) => afterCommit(c, due);
      seen = store.cursors.update(deviceId, resourceId, next, parts.now(), seen);
    }
  };
  // a chunk stored: the cursor moves past every window written whole so far
  const commit = (chunk: Chunk, result: ChunkResult): void => {
    windows.done(chunk, result);
    commitDue(false);
  };
  let firstError: unknown;
  let succeeded = 0;
  for await (const done of parts.chunks.run(run, target, chunks, { commit })) {
    if ("error" in done) {
      firstError ??= done.error;
      windows.failed(done.chunk);
      continue;
    }
    succeeded++;
    outcome.chunks++;
    outcome.points += done.result.points;
    outcome.deadLetters += done.result.deadLetters;
  }
  if (firstError === undefined) {
    // the lookback was read whole: not again before SYNC_LOOKBACK_EVERY
    if (plan.lookback) {
      store.cursors.update(deviceId, resourceId, (c) => afterLookback(c, toS), parts.now(), seen);
    }
    return outcome;
  }
  outcome.error = firstError;
  if (isFatal(firstError) || catalogMayBeStale(firstError, failing)) return outcome;
  const failures = recordFailure(parts, run, target, firstError);
  // a window that keeps failing on its own (or while the rest of the resource syncs) is handed
  // over as a parked job and the cursor reads on after it; a dependency that is down is waited for
  const onItsOwn = failsOnItsOwn(firstError) || succeeded > 0;
  if (failures >= parts.config.failures.parkAfter && onItsOwn) {
    park(parts, target, windows.failedChunks, () => commitDue(true));
    const parked = windows.failedChunks.length;
    target.log.warn(
      { resource: resourceId, chunks: parked, failures, error: messageOf(firstError) },
      "windows that keep failing are parked as jobs; the cursor moves on (energy-etl status)",
    );
  }
  return outcome;
}

/** Hands failed chunks over as parked jobs and moves the cursor past them, in one transaction. */
function park(
  parts: SyncParts,
  target: ResourceTarget,
  failed: readonly Chunk[],
  commit: () => void,
) {
  const { store } = parts;
  const { deviceId, resourceId } = target;
  const parkedUntilS = Math.max(...failed.map((c) => c.toS));
  store.transaction(() => {
    // each window its own job: none of them is a continuation of another
    for (const { values: valueIds, fromS, toS } of failed) {
      const spec = { deviceId, resourceId, valueIds, fromS, toS, reason: "parked" as const };
      store.jobs.queue([spec], countChunks, parts.now(), "parked");
    }
    store.cursors.update(deviceId, resourceId, (c) => afterPark(c, parkedUntilS), parts.now());
    commit();
  });
}

/** Counts a failed attempt on the cursor; the next one waits FAILURE_BACKOFF doubled per failure. */
function recordFailure(
  parts: SyncParts,
  run: RunContext,
  target: ResourceTarget,
  error: unknown,
): number {
  const { store, config } = parts;
  const { deviceId, resourceId } = target;
  // the same clock the planning reads retry_at with
  const nowS = epochSeconds(parts.apiNow());
  const previous = store.cursors.get(deviceId, resourceId)?.failures ?? 0;
  const waitS = failureWaitS(config, nowS, previous + 1);
  const failures = store.cursors.recordFailure(
    deviceId,
    resourceId,
    messageOf(error),
    nowS + waitS,
    parts.now(),
  );
  run.logger.debug({ device: deviceId, resource: resourceId, failures, waitS }, "resource waits");
  return failures;
}
