import { messageOf } from "../util/errors.js";
import { CATALOG_PRIORITY, dueBefore, readDeviceCatalog, readDeviceList } from "./catalog.js";
import { cutByShutdown, isFatal } from "./errors.js";
import { type RecordedRunParts, type RunResult, recordedRun } from "./recorded-run.js";
import type { SelectParts } from "./select-devices.js";
import { inShard } from "./shard.js";

/** What a catalog run needs: the catalog's parts, this shard, and its run's. */
export type CatalogRunParts = SelectParts & RecordedRunParts;

export interface CatalogRunResult extends Pick<RunResult, "runId" | "status" | "requests"> {
  /** Devices whose catalog was read. */
  readonly devices: number;
  /** Values that appeared on a device with a cursor (each got a history job). */
  readonly newValues: number;
  readonly errors: number;
}

/** The `catalog` run between ticks: device list, this shard's due catalogs; undefined if none. */
export async function runCatalogRefresh(
  pipeline: CatalogRunParts,
): Promise<CatalogRunResult | undefined> {
  const { store, config } = pipeline;
  const before = dueBefore(pipeline);
  const listReadAt = store.catalog.devicesReadAt();
  const listDue = listReadAt === undefined || listReadAt <= before;
  const inThisShard = (id: string) => inShard(id, config.shard.count, config.shard.index);
  if (!listDue && !store.catalog.due(before).some(inThisShard)) return undefined;

  let devices = 0;
  let newValues = 0;
  const failures: { part: { device: string }; error: string }[] = [];
  const recorded = await recordedRun(
    pipeline,
    "catalog",
    async (run) => {
      if (listDue)
        run.counters.requests += (await readDeviceList(pipeline, CATALOG_PRIORITY)).requests;
      const due = store.catalog.due(before).filter(inThisShard);
      const settled = await Promise.allSettled(
        due.map(async (deviceId) => {
          if (pipeline.isStopping) return;
          const log = run.logger.child({ device: deviceId });
          try {
            const catalog = await readDeviceCatalog(pipeline, deviceId, log, CATALOG_PRIORITY);
            run.counters.requests += catalog.requests;
            devices++;
            newValues += catalog.newValues;
          } catch (error) {
            if (cutByShutdown(error, pipeline.isStopping)) return;
            if (isFatal(error)) throw error;
            failures.push({ part: { device: deviceId }, error: messageOf(error) });
            log.warn({ error: messageOf(error) }, "catalog not read (the stored one stays in use)");
          }
        }),
      );
      const failed = settled.find((s) => s.status === "rejected");
      if (failed) throw failed.reason;
    },
    () => ({ parts: devices + failures.length, failures, devices, reportDevices: new Set() }),
  );
  const { run, status, errors, durationMs } = recorded;
  const { requests } = run.counters;
  run.logger.info(
    { status, devices, requests, newValues, errors, ms: durationMs },
    "catalog refreshed",
  );
  return { runId: run.id, status, devices, requests, newValues, errors };
}
