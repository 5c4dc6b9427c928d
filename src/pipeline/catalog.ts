/** The catalog at its own cadence: stored, read after CATALOG_REFRESH or when data says unknown. */
import type { Logger } from "pino";
import type { ApiClient } from "../api/api-client.js";
import type { Answered } from "../api/api-request.js";
import { ApiError } from "../api/errors.js";
import { isRequestable, VALUES_ID } from "../api/limits.js";
import type { Config } from "../config.js";
import type { StateStore } from "../state/state-store.js";
import { epochSeconds } from "../util/utc-time.js";
import { tagKey, usableIds, usableResources, usableValues, warnSkipped } from "./catalog-ids.js";
import type { ChunkRunner } from "./chunk-runner.js";
import { secondsBefore, syncRules } from "./cursor.js";
import type { Pipeline } from "./pipeline.js";
import { countChunks } from "./plan-chunks.js";

/**
 * How a run treats a catalog that is due: `refresh-due` reads it again first (the CLI), `stored`
 * uses it (the service's ticks: its catalog run refreshes it between ticks).
 */
export type CatalogPolicy = "refresh-due" | "stored";

export interface CatalogResource {
  readonly resourceId: string;
  readonly values: readonly string[];
}

/** A device's catalog as a run uses it. */
export interface DeviceCatalog {
  readonly resources: readonly CatalogResource[];
  /** True when it was read from the API in this call. */
  readonly read: boolean;
  /** Values new on a resource with a cursor (each got a history job). */
  readonly newValues: number;
  /** HTTP attempts the read took. */
  readonly requests: number;
}

/** Priority of catalog reads in the request queue of the service: after data requests. */
export const CATALOG_PRIORITY = -1;

export interface CatalogParts
  extends Pick<Pipeline, "client" | "logger" | "now" | "apiNow" | "chunks"> {
  readonly store: Pick<StateStore, "catalog" | "cursors" | "jobs" | "transaction">;
  readonly config: Pick<Config, "sync">;
}

/** The time before which a catalog read counts as due. */
export function dueBefore(pipeline: Pick<CatalogParts, "config" | "now">): Date {
  const nowS = epochSeconds(pipeline.now());
  return new Date((nowS - secondsBefore(nowS, pipeline.config.sync.catalogRefresh)) * 1000);
}

/** Every device the API lists: as stored, or read again when never read or due. */
export async function listedDevices(
  pipeline: CatalogParts,
  policy: CatalogPolicy,
): Promise<{ deviceIds: string[]; read: boolean; requests: number }> {
  const readAt = pipeline.store.catalog.devicesReadAt();
  const due = readAt === undefined || (policy === "refresh-due" && readAt <= dueBefore(pipeline));
  if (!due) return { deviceIds: pipeline.store.catalog.listedDevices(), read: false, requests: 0 };
  return { ...(await readDeviceList(pipeline)), read: true };
}

/**
 * Reads the device list from the API now and records its usable ids (catalog-ids.ts; one warning
 * for the others); logs the devices that appeared.
 */
export async function readDeviceList(
  pipeline: Pick<CatalogParts, "client" | "store" | "logger" | "now" | "chunks">,
  priority = 0,
): Promise<{ deviceIds: string[]; requests: number }> {
  const answer = await pipeline.chunks.queue.add(() => pipeline.client.listDevices(), { priority });
  const known = new Set(pipeline.store.catalog.listedDevices());
  const rules = { list: "device", path: true, key: tagKey, known };
  const { kept: deviceIds, skipped } = usableIds(answer.value.device_ids, rules);
  warnSkipped(pipeline.logger, skipped);
  const first = pipeline.store.catalog.devicesReadAt() === undefined;
  const added = pipeline.store.catalog.recordDevices(deviceIds, pipeline.now());
  if (!first && added.length > 0) {
    pipeline.logger.info(
      { devices: added.slice(0, 20), count: added.length },
      "new devices listed by the API",
    );
  }
  return { deviceIds, requests: answer.requests };
}

/** A device's resources and value lists: as stored, or read again when never read or due. */
export async function deviceCatalog(
  pipeline: CatalogParts,
  deviceId: string,
  policy: CatalogPolicy,
  log: Logger,
): Promise<DeviceCatalog> {
  const stored = pipeline.store.catalog.device(deviceId);
  const due =
    stored.readAt === undefined ||
    (policy === "refresh-due" && new Date(stored.readAt) <= dueBefore(pipeline));
  if (!due) return { resources: stored.resources, read: false, newValues: 0, requests: 0 };
  return readDeviceCatalog(pipeline, deviceId, log);
}

/** What reading a device's catalog from the API takes: the client and the request queue. */
export interface CatalogReadParts {
  readonly client: Pick<ApiClient, "listResources" | "listValues">;
  readonly chunks: Pick<ChunkRunner, "forDevice">;
}

/** A device's catalog as the API answers it now, or the API's 404 for the device. */
export type ReadCatalog =
  | { readonly resourceIds: string[]; readonly resources: CatalogResource[]; requests: number }
  | { readonly unknown: ApiError };

/**
 * The one read of a device's catalog from the API: its usable resources and value lists
 * (catalog-ids.ts; ids `known` from before are kept; one warning for the others), recorded
 * nowhere. `answered` sees each answer; `unknown` when the API does not know the device.
 */
export async function readCatalog(
  parts: CatalogReadParts,
  deviceId: string,
  log: Logger,
  options: {
    readonly known?: { resources: ReadonlySet<string>; values: (r: string) => ReadonlySet<string> };
    readonly priority?: number;
    readonly answered?: (answer: Answered<unknown>) => void;
  } = {},
): Promise<ReadCatalog> {
  const { client } = parts;
  let requests = 0;
  const ask = async <T extends Answered<unknown>>(task: () => Promise<T>): Promise<T> => {
    const answer = await parts.chunks.forDevice(deviceId, task, options.priority);
    requests += answer.requests;
    options.answered?.(answer);
    return answer;
  };
  let listed: Answered<{ resource_ids: string[] }>;
  try {
    listed = await ask(() => client.listResources(deviceId));
  } catch (error) {
    if (error instanceof ApiError && error.code === "not_found") return { unknown: error };
    throw error;
  }
  const usable = usableResources(listed.value.resource_ids, options.known?.resources);
  const skipped = [...usable.skipped];
  const resources = await Promise.all(
    usable.kept.map(async (resourceId) => {
      const answer = await ask(() => client.listValues(deviceId, resourceId));
      const known = options.known?.values(resourceId);
      const values = usableValues(resourceId, answer.value.values, known);
      skipped.push(...values.skipped);
      return { resourceId, values: values.kept };
    }),
  );
  warnSkipped(log, skipped);
  return { resourceIds: usable.kept, resources, requests };
}

/** Reads a device's catalog from the API and records it; a device unknown to it is unlisted. */
export async function readDeviceCatalog(
  pipeline: CatalogParts,
  deviceId: string,
  log: Logger,
  priority = 0,
): Promise<DeviceCatalog> {
  const { store } = pipeline;
  const stored = store.catalog.device(deviceId);
  const known = {
    resources: new Set(stored.resources.map((r) => r.resourceId)),
    values: (resourceId: string) => new Set(store.catalog.list(deviceId, resourceId)),
  };
  const read = await readCatalog(pipeline, deviceId, log, { known, priority });
  if ("unknown" in read) {
    store.catalog.unlistDevice(deviceId);
    log.warn("the API no longer knows the device: it is not synced until listed again");
    return { resources: [], read: true, newValues: 0, requests: read.unknown.attempts ?? 1 };
  }
  const resources = requestableOnly(read.resources, log);
  const newValues = store.transaction(() => {
    const now = pipeline.now();
    store.catalog.recordResources(deviceId, read.resourceIds, now);
    let count = 0;
    // the catalog rows and the history jobs land together: a value is never "seen" without its job
    for (const r of resources)
      count += recordValues(pipeline, deviceId, r.resourceId, r.values, log);
    store.catalog.markRead(deviceId, now);
    return count;
  });
  return { resources, read: true, newValues, requests: read.requests };
}

/** The value lists without the ids a `values=` list cannot carry (spec 4.4), with one warning. */
function requestableOnly(
  listed: readonly { resourceId: string; values: readonly string[] }[],
  log: Logger,
): { resourceId: string; values: readonly string[] }[] {
  const refused: { resource: string; value: string }[] = [];
  const kept = listed.map(({ resourceId, values }) => ({
    resourceId,
    values: values.filter((value) => {
      if (isRequestable(value)) return true;
      refused.push({ resource: resourceId, value });
      return false;
    }),
  }));
  if (refused.length > 0) {
    log.warn(
      { refused },
      "value ids the API lists but cannot take in a values= list (a comma or white space): never fetched",
    );
  }
  return kept;
}

/**
 * Records value ids; each new one where the cursor saw data gets a history job (no hole). Count.
 */
function recordValues(
  pipeline: Pick<CatalogParts, "store" | "config" | "now" | "apiNow">,
  deviceId: string,
  resourceId: string,
  values: readonly string[],
  log: Logger,
): number {
  const { store, config } = pipeline;
  const now = pipeline.now();
  const added = store.catalog.refresh(deviceId, resourceId, values, now);
  const newestS = store.cursors.get(deviceId, resourceId)?.newestRecordS;
  const startS = syncRules(config, epochSeconds(pipeline.apiNow())).startS;
  const newValues = added.filter((v) => v !== VALUES_ID).sort();
  if (newestS === undefined || newValues.length === 0 || startS > newestS) return 0;
  const spec = {
    deviceId,
    resourceId,
    valueIds: newValues,
    fromS: startS,
    toS: newestS,
    reason: "new_value" as const,
  };
  const jobs = store.jobs.queue([spec], countChunks, now).jobs.map((q) => q.job.id);
  log.info(
    { resource: resourceId, values: newValues, jobs },
    "new values: history backfill queued",
  );
  return newValues.length;
}
