import type { Command } from "commander";
import { z } from "zod";
import type { Pipeline } from "../../pipeline/pipeline.js";
import { selectDevices } from "../../pipeline/select-devices.js";
import { isCounter } from "../../rollups/counters.js";
import { type RollupResult, runRollups } from "../../rollups/rollup-run.js";
import { counted } from "../../util/text.js";
import { DAY_S, epochSeconds, isoSeconds } from "../../util/utc-time.js";
import type { CommandContext } from "../context.js";
import { type CliIo, examples, parsedAction, UsageError, writeLine } from "../io.js";
import { StepProgress } from "../progress.js";
import { boundedRange, rangeOptions } from "../time-options.js";
import { withPipeline } from "../with-pipeline.js";

const optionsSchema = boundedRange(
  z.object({ ...rangeOptions, dryRun: z.boolean().optional(), json: z.boolean().optional() }),
);

type RollupOptions = z.infer<typeof optionsSchema>;

/** A run of the command, as its marks remember it: its range (by UTC day) and devices. */
export function rollupRequest(fromS: number, toS: number, devices?: readonly string[]): string {
  // by UTC day: `--from -365d` (and the default `--to now`) again the same day is the same request
  const [fromDay, toDay] = [Math.floor(fromS / DAY_S), Math.floor(toS / DAY_S)];
  return JSON.stringify({ fromDay, toDay, devices: devices?.toSorted() ?? "all" });
}

/** What a run's summary adds about rollups not written, or left to the rollups lock's holder. */
export function rollupsNote(result: RollupResult | undefined): string {
  if (result === undefined) return "";
  const held = result.heldBy
    ? `; rollups left to energy-etl ${result.heldBy.command} (pid ${result.heldBy.pid} on ${result.heldBy.host})`
    : "";
  const failed =
    result.failed > 0
      ? `; rollups of ${counted(result.failed, "device resource")} NOT written (tried again next run)`
      : "";
  return held + failed;
}

/** Fails the command when a run's rollups were not all written (after its summary line). */
export function throwIfRollupsFailed(result: RollupResult | undefined): void {
  if (result?.failed) {
    throw new Error(
      `rollups of ${counted(result.failed, "device resource")} not written (${result.error ?? "see the log"}); ` +
        "the next sync or `energy-etl rollups` writes them",
    );
  }
}

export function registerRollupsCommand(program: Command, io: CliIo): void {
  program
    .command("rollups")
    .description(
      "write the hourly and daily rollups (energy per hour and per day) of the counters already " +
        "in InfluxDB over --from/--to, e.g. for data written before rollups existed; the same " +
        "command again continues where it stopped",
    )
    .option("-d, --device <id...>", "only these devices (default: every device of this shard)")
    .requiredOption("--from <time>", "start: date, date-time, or a duration back (P90D, -90d)")
    .option("--to <time>", "end (default: now)")
    .option("--yes", "go ahead with a range of more than 10 years")
    .option("--dry-run", "say what would be recomputed, write nothing")
    .option("--json", "print the result as JSON")
    .addHelpText(
      "after",
      examples(
        "energy-etl rollups --from -365d",
        "energy-etl rollups --device hybrid-site-01 --from 2025-01-01",
      ),
    )
    .action(
      // no service lock: the marks are shared through the state database and every pass holds
      // the rollups lock (rollup-lock.ts), so this works beside `energy-etl run`
      parsedAction(optionsSchema, (opts, command) =>
        withPipeline(command, io, { dryRun: opts.dryRun }, (pipeline, context) =>
          rollups(pipeline, context, opts),
        ),
      ),
    );
}

/** Marks the range's days of device resources with counters, then writes their rollups. */
async function rollups(pipeline: Pipeline, context: CommandContext, opts: RollupOptions) {
  const { io } = context;
  const fromS = epochSeconds(opts.from);
  // a --to up to a day ahead (time-options.ts) stops at now: there are no readings after it
  const toS = Math.min(epochSeconds(opts.to), epochSeconds(new Date()));
  const { deviceIds } = await selectDevices(pipeline, opts.device ?? "all", "stored");
  const targets = deviceIds.flatMap((deviceId) =>
    pipeline.store.catalog
      .device(deviceId)
      .resources.filter(({ values }) => values.some((id) => isCounter(pipeline.decoder, id)))
      .map(({ resourceId }) => ({ deviceId, resourceId })),
  );
  const days = Math.ceil((toS - fromS + 1) / DAY_S);
  const range = { from: isoSeconds(fromS), to: isoSeconds(toS), days };
  if (opts.dryRun) {
    const plan = { dryRun: true, ...range, resources: targets.length };
    const text =
      `would write the rollups of ${counted(targets.length, "device resource")} with counters over ` +
      `${counted(days, "day")} (${range.from} to ${range.to}); nothing written`;
    writeLine(io.stdout, opts.json ? JSON.stringify(plan) : text);
    return;
  }
  const parts = pipeline.rollups;
  if (parts === undefined) {
    throw new UsageError(
      "rollups are computed from what InfluxDB stores: set INFLUX_URL (not OUTPUT_FILE or --output), ROLLUPS not false",
    );
  }
  const wanted = new Set(deviceIds);
  const left = markDays(pipeline, targets, fromS, toS, opts.device);
  if (left > 0 && !opts.json) {
    writeLine(io.stdout, `continuing: ${counted(left, "day")} an earlier run of this command left`);
  }
  const devices = [...new Set(pipeline.store.rollups.pending().map((m) => m.deviceId))].filter(
    (id) => wanted.has(id),
  );
  const progress = new StepProgress("rollups", "devices", context.logger, context.terminal);
  progress.start(devices.length);
  const total: { points: number; failed: number; error?: string } = { points: 0, failed: 0 };
  for (const deviceId of devices) {
    if (pipeline.isStopping) break;
    // beside `run`: its passes hold the rollups lock briefly, each device waits its turn
    const result = await runRollups(
      { ...parts, logger: context.logger },
      [deviceId],
      () => !pipeline.isStopping,
    );
    total.points += result.points;
    total.failed += result.failed;
    total.error ??= result.error;
    progress.step();
  }
  progress.stop();
  const summary = { ...range, resources: targets.length, devices: devices.length, ...total };
  const failed = `, ${counted(total.failed, "device resource")} failed (run the same command again)`;
  const text = `rollups: ${counted(devices.length, "device")}, ${counted(total.points, "point")} written`;
  writeLine(
    io.stdout,
    opts.json ? JSON.stringify(summary) : text + (total.failed > 0 ? failed : ""),
  );
  if (total.failed > 0)
    throw new Error(`${counted(total.failed, "device resource")} failed (see the log)`);
}

/** Marks the days of `targets` due, unless an earlier run of this request left some (how many). */
function markDays(
  pipeline: Pipeline,
  targets: readonly { deviceId: string; resourceId: string }[],
  fromS: number,
  toS: number,
  devices: readonly string[] | undefined,
): number {
  const request = rollupRequest(fromS, toS, devices);
  const left = pipeline.store.rollups.countOf(request);
  if (left > 0) return left;
  pipeline.store.transaction(() => {
    for (const { deviceId, resourceId } of targets) {
      for (let s = fromS; s <= toS; s += DAY_S) {
        pipeline.store.rollups.mark(deviceId, resourceId, s, Math.min(toS, s + DAY_S - 1), request);
      }
    }
  });
  return 0;
}
