import type { RunKind, RunSummary } from "../state/types.js";
import { escapeTag } from "../transform/line-protocol.js";
import { messageOf } from "./errors.js";
import type { Pipeline } from "./pipeline.js";

/**
 * The pipeline's own health in InfluxDB, so Grafana shows it without Prometheus:
 * - `etl_run,kind=<sync|backfill>,status=<ok|partial|failed|interrupted>` with fields `requests`,
 *   `points`, `errors`, `devices`, `duration_s`, `ok` (1 or 0), at the run's end;
 * - `etl_lag,device_id=…,resource_id=…` with field `lag_s` (now minus the watermark) for every
 *   watermark of this shard, at the same time.
 */
export function runReportLines(
  kind: RunKind,
  summary: RunSummary,
  durationS: number,
  endS: number,
  lags: readonly { deviceId: string; resourceId: string; lagS: number }[],
): string[] {
  const run =
    `etl_run,kind=${kind},status=${summary.status} requests=${summary.requests},` +
    `points=${summary.points},errors=${summary.errors},devices=${summary.devices},` +
    `duration_s=${durationS},ok=${summary.status === "ok" ? 1 : 0} ${endS}`;
  const lagLines = lags.map(
    (l) =>
      `etl_lag,device_id=${escapeTag(l.deviceId)},resource_id=${escapeTag(l.resourceId)} lag_s=${l.lagS} ${endS}`,
  );
  return [run, ...lagLines];
}

/** Writes the run's report to the sink; a failure is logged, never fatal (the run is recorded). */
export async function reportRun(
  pipeline: Pipeline,
  kind: RunKind,
  summary: RunSummary,
  durationMs: number,
  deviceIds?: ReadonlySet<string>,
): Promise<void> {
  const endS = Math.floor(pipeline.now().getTime() / 1000);
  const lags = pipeline.store
    .listWatermarks()
    .filter((w) => deviceIds === undefined || deviceIds.has(w.deviceId))
    .map((w) => ({
      deviceId: w.deviceId,
      resourceId: w.resourceId,
      lagS: Math.max(0, endS - w.syncedUntilS),
    }));
  try {
    await pipeline.sink.write(runReportLines(kind, summary, durationMs / 1000, endS, lags));
  } catch (error) {
    pipeline.logger.warn({ kind, error: messageOf(error) }, "run report not written");
  }
}
