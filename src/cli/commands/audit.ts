import type { Command } from "commander";
import { z } from "zod";
import { type AuditResult, auditGaps, holeJobs, type NotSynced } from "../../pipeline/audit.js";
import { queueBackfill } from "../../pipeline/backfill-plan.js";
import type { Pipeline } from "../../pipeline/pipeline.js";
import { counted } from "../../util/text.js";
import { DAY_S, epochSeconds, isoSeconds } from "../../util/utc-time.js";
import type { CommandContext } from "../context.js";
import {
  type CliIo,
  ExitStatus,
  examples,
  parsedAction,
  UsageError,
  writeJson,
  writeText,
} from "../io.js";
import { countOption } from "../options.js";
import { runBackfillWithProgress, StepProgress } from "../progress.js";
import { fitText, renderItems } from "../table.js";
import { boundedRange, rangeOptions } from "../time-options.js";
import { withPipeline } from "../with-pipeline.js";
import { runRollupAudit } from "./audit-rollups.js";
import { newDeadLettersNote } from "./dead-letters.js";

const optionsSchema = boundedRange(
  z.object({
    ...rangeOptions,
    fix: z.boolean().optional(),
    json: z.boolean().optional(),
    rollups: z.boolean().optional(),
    sampleDays: countOption("--sample-days", 1, 3660).prefault("7"),
  }),
);

export type AuditOptions = z.infer<typeof optionsSchema>;

const day = (s: number) => isoSeconds(s).slice(0, 10);
/** The audit's start: a day, or the instant when the first day is checked from later on. */
const startText = (s: number) => (s % DAY_S === 0 ? day(s) : `${isoSeconds(s).slice(0, 19)}Z`);
/** A hole's day; the first one, checked from the audit's start on, says from when. */
const dayText = (dayS: number, fromS: number) =>
  fromS > dayS ? `${day(dayS)} from ${isoSeconds(fromS).slice(11, 19)}` : day(dayS);
const minute = (s: number) => `${isoSeconds(s).slice(0, 16).replace("T", " ")} UTC`;

/** The note on data newer than the last sync (not holes), or undefined when there is none. */
function notSyncedLine(notSynced: readonly NotSynced[]): string | undefined {
  if (notSynced.length === 0) return undefined;
  const records = notSynced.reduce((n, r) => n + r.apiRecords, 0);
  const synced = notSynced.flatMap((r) => (r.syncedUntilS === undefined ? [] : [r.syncedUntilS]));
  const oldest = Math.min(...synced);
  const since: string[] = [];
  const atTheOldest = synced.some((s) => s > oldest) ? " at the oldest" : "";
  if (synced.length > 0) since.push(`synced until ${minute(oldest)}${atTheOldest}`);
  const never = notSynced.length - synced.length;
  if (never > 0) since.push(`${never} never synced`);
  return (
    `not synced yet: ${counted(records, "record")} on ${counted(notSynced.length, "device resource")}, newer than ` +
    `their last sync (${since.join(", ")}); not holes: the next sync reads them`
  );
}

export function registerAuditCommand(program: Command, io: CliIo): void {
  program
    .command("audit")
    .description(
      "compare what InfluxDB holds with what the API has, per device resource and UTC day, up " +
        "to each resource's last sync (newer data is counted as not synced yet, not as holes; " +
        "one sample value per group of 20, not every value), and list the holes; --fix " +
        "backfills exactly those days. Exit 1 when holes remain",
    )
    .option("-d, --device <id...>", "only these devices (default: every device of this shard)")
    .requiredOption(
      "--from <time>",
      "start: ISO date or date-time (UTC), or a duration back (-30d, as backfill); a first day " +
        "that starts later than 00:00 is checked from then on",
    )
    .option("--to <time>", "last day: ISO date or date-time, or now (default now)")
    .option("--yes", "go ahead with a range of more than 10 years")
    .option("--fix", "queue and run backfill jobs for exactly the days with holes")
    .option("--json", "print the result as JSON")
    .option(
      "--rollups",
      "instead: check the daily rollups of sampled days against the raw readings in InfluxDB " +
        "(every zone of ROLLUP_TIME_ZONES); --fix recomputes the days that differ",
    )
    .option("--sample-days <n>", "with --rollups: days checked, spread over the range", "7")
    .addHelpText(
      "after",
      examples(
        "energy-etl audit --from 2026-10-01 --to 2026-10-31",
        "energy-etl audit --device hybrid-site-01 --from 2026-10-01 --fix",
        "energy-etl audit --rollups --from -90d --sample-days 10",
      ),
    )
    .action(
      parsedAction(optionsSchema, (opts, command) =>
        withPipeline(command, io, {}, (pipeline, context) =>
          opts.rollups
            ? runRollupAudit(opts, pipeline, pipeline.rollups, context)
            : runAudit(opts, pipeline, context),
        ),
      ),
    );
}

async function runAudit(opts: AuditOptions, pipeline: Pipeline, context: CommandContext) {
  const { influx } = context.config;
  if (influx.url === "") {
    throw new UsageError("audit reads InfluxDB: set INFLUX_URL (and INFLUX_TOKEN, INFLUX_BUCKET)");
  }
  const { InfluxQuery } = await import("../../influx/influx-query.js");
  const progress = new StepProgress("audit", "data requests", context.logger, context.terminal);
  const [fromS, toS] = [epochSeconds(opts.from), epochSeconds(opts.to)];
  const request = { devices: opts.device ?? ("all" as const), fromS, toS };
  const result = await auditGaps(pipeline, new InfluxQuery(influx), request, progress).finally(() =>
    progress.stop(),
  );
  const holes = result.holes.length > 0;
  const fixed = opts.fix && holes ? await fixHoles(pipeline, result.holes, context) : undefined;
  if (opts.json) writeJson(context.io.stdout, auditJson(result, fixed));
  else printAudit(context.io, result, fixed);
  if (holes && (!fixed || fixed.done < fixed.jobs)) {
    throw new ExitStatus(1, "holes remain");
  }
}

/** `--fix`: backfill jobs for exactly the days with holes, queued and run. */
async function fixHoles(pipeline: Pipeline, holes: AuditResult["holes"], context: CommandContext) {
  const nowS = epochSeconds(pipeline.now());
  const jobs = queueBackfill(pipeline, holeJobs(holes, nowS)).jobs.map((q) => q.job);
  const { run } = await runBackfillWithProgress(pipeline, jobs, context);
  return {
    jobs: jobs.length,
    done: run.jobs.filter((j) => j.status === "done").length,
    deadLetters: run.deadLetters,
  };
}

type Fixed = Awaited<ReturnType<typeof fixHoles>>;

function auditJson(result: AuditResult, fixed: Fixed | undefined) {
  return {
    from: isoSeconds(result.fromS),
    to: isoSeconds(result.toS),
    resources: result.resources,
    days: result.days,
    samples: result.samples,
    requests: result.requests,
    dataRequests: result.dataRequests,
    catalogRequests: result.catalogRequests,
    queries: result.queries,
    holes: result.holes.map((h) => ({
      deviceId: h.deviceId,
      resourceId: h.resourceId,
      day: day(h.dayS),
      valueId: h.valueId,
      values: h.group.length,
      apiRecords: h.apiRecords,
      stored: h.stored,
      deadLettered: h.deadLettered,
    })),
    notSynced: result.notSynced.map((n) => ({
      deviceId: n.deviceId,
      resourceId: n.resourceId,
      syncedUntil: n.syncedUntilS === undefined ? null : isoSeconds(n.syncedUntilS),
      apiRecords: n.apiRecords,
    })),
    unaudited: result.unaudited,
    ...(fixed ? { fixed } : {}),
  };
}

function printAudit(io: CliIo, result: AuditResult, fixed: Fixed | undefined): void {
  if (result.holes.length > 0) {
    const table = renderItems(
      [
        ["device", (h) => h.deviceId],
        ["resource", (h) => h.resourceId],
        ["day (UTC)", (h) => dayText(h.dayS, result.fromS)],
        ["sample value", (h) => `${h.valueId} (+${h.group.length - 1})`],
        ["API records", (h) => String(h.apiRecords)],
        ["in InfluxDB", (h) => String(h.stored)],
        ["dead letters", (h) => String(h.deadLettered)],
      ],
      result.holes,
      io.stdout,
    );
    writeText(io.stdout, table);
  }
  const missing = result.holes.reduce((n, h) => n + h.apiRecords - h.deadLettered - h.stored, 0);
  const holes =
    result.holes.length === 0
      ? "no holes"
      : `${counted(result.holes.length, "hole")} (${counted(missing, "point")} of the samples missing)`;
  const lines = [
    `audit ${startText(result.fromS)} .. ${day(result.toS)}: ${counted(result.resources, "device resource")} x ` +
      `${counted(result.days, "day")}, ${result.samples} sample values, ${result.dataRequests} data requests, ` +
      `${result.catalogRequests} catalog requests, ${result.queries} InfluxDB queries: ${holes}`,
    notSyncedLine(result.notSynced),
    fixed
      ? `fixed: ${fixed.done}/${fixed.jobs} backfill jobs done${newDeadLettersNote(fixed.deadLetters)}`
      : result.holes.length > 0
        ? "run again with --fix to backfill exactly these days"
        : undefined,
  ];
  for (const line of lines) if (line !== undefined) writeText(io.stdout, fitText(line, io.stdout));
}
