import type { Config } from "../config.js";
import { type RollupResult, rollupFailures, rollupsAfterRun } from "../rollups/rollup-run.js";
import { eachAtMost } from "../util/each-at-most.js";
import { messageOf } from "../util/errors.js";
import { epochSeconds } from "../util/utc-time.js";
import { type JobParts, runBackfillJob } from "./backfill-job.js";
import {
  type CatalogPolicy,
  type CatalogResource,
  type DeviceCatalog,
  deviceCatalog,
  readDeviceCatalog,
} from "./catalog.js";
import { cutByShutdown, isFatal } from "./errors.js";
import type { Pipeline } from "./pipeline.js";
import { type RecordedRunParts, type RunResult, recordedRun, runResult } from "./recorded-run.js";
import type { RunContext } from "./run-context.js";
import { type SelectParts, selectDevices } from "./select-devices.js";
import { type SyncParts, syncResource } from "./sync-resource.js";

/** What a sync needs: what its catalogs, resources, new-value jobs, run and rollups need. */
export type SyncRunParts = SelectParts &
  SyncParts &
  JobParts &
  RecordedRunParts &
  Pick<Pipeline, "client" | "rollups"> & {
    readonly config: { readonly api: Pick<Config["api"], "concurrency"> };
  };

/** Devices a sync works on at once: every request slot busy, memory not growing with the fleet. */
function devicesInFlight(apiConcurrency: number): number {
  return Math.max(16, apiConcurrency * 16);
}

export interface DeviceSyncResult {
  readonly deviceId: string;
  readonly resources: number;
  readonly chunks: number;
  readonly points: number;
  /** Value ids seen for the first time on a device that already had a cursor. */
  readonly newValues: number;
  readonly deadLetters: number;
  /** The earliest "silent since" of its resources (epoch s), when one is silent. */
  readonly silentSinceS?: number;
  /** Resources that waited for a retry after earlier failures. */
  readonly waiting: number;
  /** The first error of the device or its chunks. */
  readonly error?: string;
}

/** What a whole sync cycle did; also recorded in the runs table. */
export interface SyncResult extends RunResult {
  readonly devices: readonly DeviceSyncResult[];
  /** What its rollups did (undefined: none, or the run stopped first). */
  readonly rollups?: RollupResult;
  readonly errors: number;
  readonly durationMs: number;
}

export interface SyncOptions {
  /** Only these devices (`sync --device`); default: every device of this shard. */
  readonly deviceIds?: readonly string[];
  /** Whether catalogs due for a refresh are read first (default) or used as stored. */
  readonly catalog?: CatalogPolicy;
}

/**
 * One incremental sync cycle, as a recorded run of kind `sync`: each resource synced by its
 * cursor; one failing device does not stop the others. New values' history jobs run at the end.
 */
export async function runSync(
  pipeline: SyncRunParts,
  options: SyncOptions = {},
): Promise<SyncResult> {
  let results: DeviceSyncResult[] = [];
  let rollups: RollupResult | undefined;
  const recorded = await recordedRun(
    pipeline,
    "sync",
    async (run) => {
      run.logger.info("sync started");
      const wanted = options.deviceIds && options.deviceIds.length > 0 ? options.deviceIds : "all";
      const policy = options.catalog ?? "refresh-due";
      const selected = await selectDevices(pipeline, wanted, policy);
      run.counters.requests += selected.requests;
      // a token (when none is held) also tells the API's clock before the first plan is made
      await pipeline.client.accessToken();
      const stopping = () => pipeline.isStopping;
      // after a fatal error no device starts, and every one started settles before the run ends
      const each = await eachAtMost(
        selected.deviceIds,
        devicesInFlight(pipeline.config.api.concurrency),
        (id) => syncDevice(pipeline, run, id, policy),
        stopping,
      );
      results = each.results.filter((r) => r !== undefined);
      if (each.failure !== undefined) throw each.failure.error;
      await runNewValueJobs(pipeline, run, selected.deviceIds);
      rollups = await rollupsAfterRun(pipeline.rollups, run, selected.deviceIds, stopping);
    },
    () => ({
      // rollups not written are a failed part of their own (the run is partial, not ok)
      parts: results.length + rollupFailures(rollups).length,
      failures: [
        ...results.flatMap((r) =>
          r.error === undefined ? [] : [{ part: { device: r.deviceId }, error: r.error }],
        ),
        ...rollupFailures(rollups),
      ],
      devices: results.length,
    }),
  );
  const { run, status, errors, durationMs } = recorded;
  const { chunks, chunkErrors, ...counted } = run.counters;
  const summary = { status, devices: results.length, ...counted, errors, ms: durationMs };
  run.logger.info(summary, "sync finished");
  return {
    ...runResult(recorded),
    devices: results,
    errors,
    durationMs,
    ...(rollups === undefined ? {} : { rollups }),
  };
}

/**
 * Syncs a device's resources; a 404 on a stored catalog reads it again and syncs those once more.
 */
async function syncDevice(
  pipeline: SyncRunParts,
  run: RunContext,
  deviceId: string,
  policy: CatalogPolicy,
): Promise<DeviceSyncResult> {
  const log = run.logger.child({ device: deviceId });
  const totals = { resources: 0, chunks: 0, points: 0, newValues: 0, deadLetters: 0, waiting: 0 };
  let silentSinceS: number | undefined;
  let firstError: unknown;
  const result = (error?: unknown): DeviceSyncResult => ({
    deviceId,
    ...totals,
    ...(silentSinceS === undefined ? {} : { silentSinceS }),
    ...(error === undefined ? {} : { error: messageOf(error) }),
  });
  const counted = (catalog: DeviceCatalog): DeviceCatalog => {
    run.counters.requests += catalog.requests;
    if (catalog.read) run.counters.catalogReads++;
    totals.newValues += catalog.newValues;
    return catalog;
  };
  const sync = async (resources: Iterable<CatalogResource>, final: boolean) => {
    const unknown: string[] = [];
    for (const { resourceId, values } of resources) {
      const target = { deviceId, resourceId, values, log };
      const outcome = await syncResource(pipeline, run, target, final);
      if (!final) totals.resources++;
      totals.chunks += outcome.chunks;
      totals.points += outcome.points;
      totals.deadLetters += outcome.deadLetters;
      if (outcome.waiting) totals.waiting++;
      if (outcome.silentSinceS !== undefined) {
        silentSinceS = Math.min(silentSinceS ?? outcome.silentSinceS, outcome.silentSinceS);
      }
      if (outcome.unknown) unknown.push(resourceId);
      else firstError ??= outcome.error;
      if (isFatal(outcome.error)) throw outcome.error;
    }
    return unknown;
  };
  try {
    let catalog = counted(await deviceCatalog(pipeline, deviceId, policy, log));
    const unknown = await sync(catalog.resources, false);
    if (unknown.length > 0 && !catalog.read) {
      log.info({ resources: unknown }, "catalog out of date (HTTP 404 on data): reading it again");
      catalog = counted(await readDeviceCatalog(pipeline, deviceId, log));
      await sync(
        catalog.resources.filter((r) => unknown.includes(r.resourceId)),
        true,
      );
    }
    // a routine device is a debug line (one per device per tick adds up over a fleet)
    const notable = catalog.read || totals.newValues > 0 || totals.deadLetters > 0;
    log[notable || firstError !== undefined ? "info" : "debug"](
      { ...totals, catalogRead: catalog.read },
      "device synced",
    );
    return result(firstError);
  } catch (error) {
    if (cutByShutdown(error, pipeline.isStopping)) return result();
    if (isFatal(error)) throw error;
    log.error({ error: messageOf(error) }, "device sync failed");
    return result(error);
  }
}

/** Backfill jobs queued for new values of the synced devices (manual ones: `run`, `backfill`). */
async function runNewValueJobs(
  pipeline: SyncRunParts,
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
