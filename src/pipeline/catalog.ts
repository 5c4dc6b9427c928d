import type { Logger } from "pino";
import { VALUES_ID } from "../api/limits.js";
import type { Pipeline } from "./pipeline.js";
import { countChunks } from "./plan-chunks.js";
import { syncRules } from "./plan-sync.js";

/**
 * Records the value ids a resource lists now, and gives each id that is new on a resource whose
 * cursor has seen data a backfill job from SYNC_START up to that newest record, so a new sensor
 * leaves no hole (the next sync reads from there on for every value). Returns how many new values
 * got such a job.
 */
export function refreshCatalog(
  pipeline: Pipeline,
  deviceId: string,
  resourceId: string,
  values: readonly string[],
  log: Logger = pipeline.logger,
): number {
  // the catalog row and the history job land together: a value is never "seen" without its job
  return pipeline.store.transaction(() =>
    queueNewValues(pipeline, deviceId, resourceId, values, log),
  );
}

function queueNewValues(
  pipeline: Pipeline,
  deviceId: string,
  resourceId: string,
  values: readonly string[],
  log: Logger,
): number {
  const { store, config } = pipeline;
  const now = pipeline.now();
  const added = store.catalog.refresh(deviceId, resourceId, values, now);
  const newestS = store.cursors.get(deviceId, resourceId)?.newestRecordS;
  const startS = syncRules(config, Math.floor(pipeline.apiNow().getTime() / 1000)).startS;
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
  const { job } = store.jobs.createOrResume(
    spec,
    countChunks(newValues.length, startS, newestS),
    now,
  );
  log.info(
    { device: deviceId, resource: resourceId, values: newValues, job: job.id },
    "new values: history backfill queued",
  );
  return newValues.length;
}
