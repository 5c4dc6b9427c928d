import type { Logger } from "pino";
import { VALUES_ID } from "../api/limits.js";
import { resolveSyncStart } from "../config.js";
import type { Pipeline } from "./pipeline.js";
import { countChunks } from "./plan-chunks.js";

/**
 * Records the value ids a resource lists now, and gives each id that is new on a resource that
 * already has a watermark a backfill job from SYNC_START up to the watermark, so a new sensor
 * leaves no hole. Returns how many new values got such a job.
 */
export function refreshCatalog(
  pipeline: Pipeline,
  deviceId: string,
  resourceId: string,
  values: readonly string[],
  log: Logger = pipeline.logger,
): number {
  const { store } = pipeline;
  // the catalog row and the history job land together: a value is never "seen" without its job
  return store.transaction(() => queueNewValues(pipeline, deviceId, resourceId, values, log));
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
  const added = store.refreshCatalog(deviceId, resourceId, values, now);
  const watermark = store.getWatermark(deviceId, resourceId);
  const startS = Math.floor(resolveSyncStart(config.sync.start, now).getTime() / 1000);
  const newValues = added.filter((v) => v !== VALUES_ID).sort();
  if (watermark === undefined || newValues.length === 0 || startS > watermark) return 0;
  const spec = {
    deviceId,
    resourceId,
    valueIds: newValues,
    fromS: startS,
    toS: watermark,
    reason: "new_value" as const,
  };
  const { job } = store.createOrResumeBackfillJob(
    spec,
    countChunks(newValues.length, startS, watermark),
    now,
  );
  log.info(
    { device: deviceId, resource: resourceId, values: newValues, job: job.id },
    "new values: history backfill queued",
  );
  return newValues.length;
}
