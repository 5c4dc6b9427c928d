import { messageOf } from "../util/errors.js";
import { CATALOG_PRIORITY, dueBefore, readDeviceCatalog, readDeviceList } from "./catalog.js";
import { cutByShutdown, isFatal } from "./errors.js";
import type { Pipeline } from "./pipeline.js";
import { RunContext, runStatus } from "./run-context.js";
import { reportRun } from "./run-report.js";
import { inShard } from "./shard.js";

/** What a catalog run did. */
export interface CatalogRunResult {
  readonly runId: number;
  readonly status: "ok" | "partial" | "failed" | "interrupted";
  /** Devices whose catalog was read. */
  readonly devices: number;
  readonly requests: number;
  /** Values that appeared on a device with a cursor (each got a history job). */
  readonly newValues: number;
  readonly errors: number;
}

/**
 * The service's catalog run, between ticks: reads again the device list and every device catalog
 * of this shard last read CATALOG_REFRESH ago or more, as one recorded run of kind `catalog`.
 * Its requests queue behind data requests (a tick never waits for it). Returns undefined when
 * nothing is due.
 */
export async function runCatalogRefresh(pipeline: Pipeline): Promise<CatalogRunResult | undefined> {
  const { store, config } = pipeline;
  const before = dueBefore(pipeline);
  const listReadAt = store.catalog.devicesReadAt();
  const listDue = listReadAt === undefined || listReadAt <= before;
  const inThisShard = (id: string) => inShard(id, config.shard.count, config.shard.index);
  if (!listDue && !store.catalog.due(before).some(inThisShard)) return undefined;

  const started = pipeline.now();
  const run = RunContext.create(
    store.runs.start("catalog", started, pipeline.owner),
    "catalog",
    pipeline.logger,
  );
  let fatal: unknown;
  let devices = 0;
  let newValues = 0;
  const failures: { device: string; error: string }[] = [];
  try {
    if (listDue) await readDeviceList(pipeline, run.calls, CATALOG_PRIORITY);
    const due = store.catalog.due(before).filter(inThisShard);
    const settled = await Promise.allSettled(
      due.map(async (deviceId) => {
        if (pipeline.isStopping) return;
        const log = run.logger.child({ device: deviceId });
        try {
          const catalog = await readDeviceCatalog(
            pipeline,
            deviceId,
            run.calls,
            log,
            CATALOG_PRIORITY,
          );
          devices++;
          newValues += catalog.newValues;
        } catch (error) {
          if (cutByShutdown(error, pipeline.isStopping)) return;
          if (isFatal(error)) throw error;
          failures.push({ device: deviceId, error: messageOf(error) });
          log.warn({ error: messageOf(error) }, "catalog not read (the stored one stays in use)");
        }
      }),
    );
    const failed = settled.find((s) => s.status === "rejected");
    if (failed) throw failed.reason;
  } catch (error) {
    if (!cutByShutdown(error, pipeline.isStopping)) fatal = error;
  }
  if (fatal !== undefined) failures.push({ device: "*", error: messageOf(fatal) });
  const errors = failures.length;
  const status = runStatus({
    fatal: fatal !== undefined,
    stopping: pipeline.isStopping,
    parts: devices + failures.length,
    failed: errors,
  });
  const summary = {
    status,
    devices,
    requests: run.counters.requests,
    points: 0,
    errors,
    detail: failures.length > 0 ? JSON.stringify(failures) : null,
  } as const;
  const durationMs = pipeline.now().getTime() - started.getTime();
  if (!isFatal(fatal)) await reportRun(pipeline, run, summary, durationMs, new Set());
  // the run ends last, once all of it (its report included) is done
  store.runs.finish(run.id, summary, pipeline.now());
  run.logger.info(
    { status, devices, requests: run.counters.requests, newValues, errors, ms: durationMs },
    "catalog refreshed",
  );
  if (fatal !== undefined) throw fatal;
  return { runId: run.id, status, devices, requests: run.counters.requests, newValues, errors };
}
