import { type SelectParts, selectDevices } from "../../pipeline/select-devices.js";
import { auditRollups, type RollupMismatch, sampleDays } from "../../rollups/rollup-audit.js";
import { countersOf, type RollupParts, recomputeNow } from "../../rollups/rollup-run.js";
import type { RollupTarget } from "../../rollups/series.js";
import { counted } from "../../util/text.js";
import { epochSeconds, isoSeconds } from "../../util/utc-time.js";
import type { CommandContext } from "../context.js";
import { ExitStatus, UsageError, writeJson, writeText } from "../io.js";
import { StepProgress } from "../progress.js";
import { fitText, renderItems } from "../table.js";
import type { AuditOptions } from "./audit.js";

/** `audit --rollups`: sampled daily rollups against the raw readings; exit 1 on a mismatch. */
export async function runRollupAudit(
  opts: AuditOptions,
  catalog: SelectParts,
  parts: RollupParts | undefined,
  context: CommandContext,
): Promise<void> {
  if (parts === undefined) {
    throw new UsageError(
      "audit --rollups reads InfluxDB: set INFLUX_URL (not OUTPUT_FILE), ROLLUPS not false",
    );
  }
  const moments = sampleDays(epochSeconds(opts.from), epochSeconds(opts.to), opts.sampleDays);
  const { deviceIds } = await selectDevices(catalog, opts.device ?? "all", "stored");
  const targets = deviceIds
    .flatMap((deviceId) =>
      catalog.store.catalog.device(deviceId).resources.map(({ resourceId }) => ({
        deviceId,
        resourceId,
        counters: countersOf(parts, deviceId, resourceId),
      })),
    )
    .filter((t) => t.counters.length > 0);
  const checks = await checkAll(parts, targets, moments, context);
  const fix = opts.fix ? await fixDays(parts, targets, moments, checks.mismatches) : undefined;
  const summary = summaryOf(opts, parts.zones, targets.length, moments, checks, fix);
  if (opts.json) writeJson(context.io.stdout, summary);
  else printReport(summary, context.io);
  if ((fix?.remaining ?? checks.mismatches.length) > 0) {
    throw new ExitStatus(1, "rollups differ from the raw readings");
  }
}

/** The audit as `--json` prints it. */
function summaryOf(
  opts: AuditOptions,
  zones: readonly string[],
  resources: number,
  moments: readonly number[],
  { checked, mismatches }: { checked: number; mismatches: readonly RollupMismatch[] },
  fix: { fixed: number; remaining: number } | undefined,
) {
  return {
    from: isoSeconds(epochSeconds(opts.from)),
    to: isoSeconds(epochSeconds(opts.to)),
    resources,
    days: moments.map((s) => isoSeconds(s).slice(0, 10)),
    zones,
    checked,
    mismatches: mismatches.map((m) => ({
      deviceId: m.deviceId,
      resourceId: m.resourceId,
      zone: m.zone,
      day: isoSeconds(m.dayS),
      measurement: m.series.measurement,
      valuesId: m.series.valuesId,
      fromRaw: m.expected ?? null,
      stored: m.stored ?? null,
    })),
    ...(fix ? { fixedDays: fix.fixed, remaining: fix.remaining } : {}),
  };
}

async function checkAll(
  parts: RollupParts,
  targets: readonly RollupTarget[],
  moments: readonly number[],
  context: CommandContext,
): Promise<{ checked: number; mismatches: RollupMismatch[] }> {
  const progress = new StepProgress("audit", "device resources", context.logger, context.terminal);
  progress.start(targets.length);
  let checked = 0;
  const mismatches: RollupMismatch[] = [];
  try {
    for (const target of targets) {
      const result = await auditRollups(parts, target, moments);
      checked += result.checked;
      mismatches.push(...result.mismatches);
      progress.step();
    }
  } finally {
    progress.stop();
  }
  return { checked, mismatches };
}

/** `--fix`: recompute each differing day from the raw readings, then audit those targets again. */
async function fixDays(
  parts: RollupParts,
  targets: readonly RollupTarget[],
  moments: readonly number[],
  mismatches: readonly RollupMismatch[],
): Promise<{ fixed: number; remaining: number }> {
  const again = new Set<RollupTarget>();
  const days = new Set<string>();
  let fixed = 0;
  for (const m of mismatches) {
    // once per device resource and day: a day's recompute rewrites every series and zone of it
    const day = JSON.stringify([m.deviceId, m.resourceId, m.dayS]);
    const target = targets.find((t) => t.deviceId === m.deviceId && t.resourceId === m.resourceId);
    if (target === undefined || days.has(day)) continue;
    days.add(day);
    await recomputeNow(parts, target, m.dayS, m.endS - 1);
    again.add(target);
    fixed += 1;
  }
  let remaining = 0;
  for (const target of again) {
    remaining += (await auditRollups(parts, target, moments)).mismatches.length;
  }
  return { fixed, remaining };
}

function printReport(summary: ReturnType<typeof summaryOf>, io: CommandContext["io"]): void {
  const { mismatches } = summary;
  if (mismatches.length > 0) {
    const table = renderItems(
      [
        ["device", (m) => m.deviceId],
        ["resource", (m) => m.resourceId],
        ["zone", (m) => m.zone],
        ["day starts", (m) => m.day],
        ["counter", (m) => `${m.measurement} (${m.valuesId})`],
        ["from raw", (m) => (m.fromRaw === null ? "none" : String(m.fromRaw))],
        ["stored", (m) => (m.stored === null ? "missing" : String(m.stored))],
      ],
      mismatches,
      io.stdout,
    );
    writeText(io.stdout, table);
  }
  const verdict =
    mismatches.length === 0
      ? "every one equals the raw readings"
      : `${mismatches.length} differ from the raw readings`;
  const lines = [
    `audit of rollups: ${counted(summary.resources, "device resource")} x ${summary.days.length} sampled ` +
      `${summary.days.length === 1 ? "day" : "days"} x ${counted(summary.zones.length, "zone")}, ${counted(summary.checked, "daily rollup")}: ${verdict}`,
    summary.fixedDays !== undefined
      ? `fixed: ${counted(summary.fixedDays, "day")} recomputed from the raw readings, ` +
        `${summary.remaining} rollups still differ`
      : mismatches.length > 0
        ? "run again with --fix to recompute those days"
        : undefined,
  ];
  for (const line of lines) if (line !== undefined) writeText(io.stdout, fitText(line, io.stdout));
}
