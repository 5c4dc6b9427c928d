import type { Config } from "../config.js";
import type { PointSink } from "../influx/point-sink.js";
import type { StateStore } from "../state/state-store.js";
import type { Cursor, RunSummary } from "../state/types.js";
import { escapeTag, lineBatch, quoteString } from "../transform/line-protocol.js";
import { messageOf } from "../util/errors.js";
import { excerpt } from "../util/text.js";
import { type SyncRules, silentSince, syncRules } from "./cursor.js";
import type { RunContext } from "./run-context.js";
import { siteLines } from "./site-lines.js";

/**
 * The pipeline's own health in InfluxDB, so Grafana shows it without Prometheus: one `etl_run`
 * line, and one `etl_lag` line per cursor of the run's devices (and, by {@link reportRun}, a
 * `site` line per device).
 */
export function runReportLines(
  run: Pick<RunContext, "kind" | "counters">,
  summary: RunSummary,
  durationS: number,
  endS: number,
  health: readonly { readonly cursor: Cursor; readonly deadLetters: number }[],
  rules: Pick<SyncRules, "silentAfterS">,
): string[] {
  const lines = [
    `etl_run,kind=${run.kind},status=${summary.status} requests=${summary.requests},` +
      `points=${summary.points},errors=${summary.errors},devices=${summary.devices},` +
      `duration_s=${durationS},ok=${summary.status === "ok" ? 1 : 0},` +
      `dead_letters=${run.counters.deadLetters},refused_writes=${run.counters.refusedWrites} ${endS}`,
  ];
  for (const { cursor, deadLetters } of health) {
    const newest = cursor.newestRecordS ?? cursor.startedS;
    const since = silentSince(cursor, endS, rules);
    lines.push(
      `etl_lag,device_id=${escapeTag(cursor.deviceId)},resource_id=${escapeTag(cursor.resourceId)} ` +
        `lag_s=${Math.max(0, endS - newest)},fetched_lag_s=${Math.max(0, endS - cursor.fetchedUntilS)},` +
        `silent=${since === undefined ? 0 : 1},` +
        (since === undefined ? "" : `silent_since=${since},`) +
        `failures=${cursor.failures},dead_letters=${deadLetters},` +
        // "" once it recovered, so that last() shows no stale error
        `last_error=${quoteString(lastErrorOf(cursor))} ${endS}`,
    );
  }
  return lines;
}

/** The cursor's last error on one line, cut, or "" while it does not fail. */
function lastErrorOf(cursor: Cursor): string {
  if (cursor.failures === 0 || cursor.lastError === undefined) return "";
  return excerpt(cursor.lastError);
}

export interface ReportParts {
  readonly store: Pick<StateStore, "cursors" | "deadLetters">;
  readonly config: Pick<Config, "sync" | "sites">;
  readonly sink: Pick<PointSink, "write">;
  readonly apiNow: () => Date;
}

/**
 * Writes the run's report (`etl_lag`, `site` of `deviceIds`, else all); a failure is only logged.
 */
export async function reportRun(
  parts: ReportParts,
  run: RunContext,
  summary: RunSummary,
  durationMs: number,
  deviceIds?: ReadonlySet<string>,
): Promise<void> {
  const { store, config } = parts;
  const endS = Math.floor(parts.apiNow().getTime() / 1000);
  const letters = new Map(
    store.deadLetters.countByResource().map((c) => [`${c.deviceId}\u0000${c.resourceId}`, c.count]),
  );
  const health = store.cursors
    .list()
    .filter((c) => deviceIds === undefined || deviceIds.has(c.deviceId))
    .map((cursor) => ({
      cursor,
      deadLetters: letters.get(`${cursor.deviceId}\u0000${cursor.resourceId}`) ?? 0,
    }));
  try {
    const rules = syncRules(config, endS);
    const lines = [
      ...runReportLines(run, summary, durationMs / 1000, endS, health, rules),
      ...siteLines(
        health.map((h) => h.cursor.deviceId),
        config.sites,
        endS,
      ),
    ];
    const { rejected } = await parts.sink.write(lineBatch(lines));
    if (rejected.length > 0) {
      run.logger.warn(
        { rejected: rejected.length, error: rejected[0]?.error },
        "run report lines refused",
      );
    }
  } catch (error) {
    run.logger.warn({ error: messageOf(error) }, "run report not written");
  }
}
