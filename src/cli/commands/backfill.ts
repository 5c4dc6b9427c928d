import type { Command } from "commander";
import { z } from "zod";
import {
  type BackfillEstimate,
  type EstimateInputs,
  estimateBackfill,
  LEARN_FROM_RUNS,
  learnPointCost,
  MIN_POINTS,
  medianMs,
} from "../../pipeline/backfill-estimate.js";
import {
  type PlannedBackfill,
  planBackfill,
  queueBackfill,
  remainingBackfill,
} from "../../pipeline/backfill-plan.js";
import type { Pipeline } from "../../pipeline/pipeline.js";
import type { BackfillJob, RunRecord } from "../../state/types.js";
import { counted } from "../../util/text.js";
import { epochSeconds } from "../../util/utc-time.js";
import type { CommandContext } from "../context.js";
import { type CliIo, examples, parsedAction, writeJson, writeLine, writeText } from "../io.js";
import { devicesOption, nameOption, outputOption } from "../options.js";
import { runBackfillWithProgress } from "../progress.js";
import { renderTable } from "../table.js";
import { boundedRange, instantOption, toOption } from "../time-options.js";
import { type MarkFinished, withPipeline } from "../with-pipeline.js";
import { newDeadLettersNote } from "./dead-letters.js";
import { rollupsNote, throwIfRollupsFailed } from "./rollups.js";
import { formatSpan } from "./status.js";

// a --from after now is refused by instantOption; a --to up to a day ahead stops at now
const optionsSchema = boundedRange(
  z
    .object({
      device: devicesOption,
      all: z.boolean().optional(),
      from: instantOption("--from").optional(),
      to: toOption().optional(),
      yes: z.boolean().optional(),
      retryParked: z.boolean().optional(),
      values: nameOption("--values", "value ids, comma-separated")
        .transform((s) =>
          s
            .split(",")
            .map((v) => v.trim())
            .filter((v) => v !== ""),
        )
        .refine((ids) => ids.length > 0, "--values must name a value id")
        .optional(),
      dryRun: z.boolean().optional(),
      json: z.boolean().optional(),
      output: outputOption,
    })
    .refine(
      (o) => (o.device?.length ?? 0) > 0 || o.all === true || o.retryParked === true,
      "give --device ID ... or --all",
    )
    .refine((o) => !(o.device && o.all), "--device and --all exclude each other")
    .refine((o) => o.from !== undefined || o.retryParked === true, "give --from"),
);

type BackfillOptions = z.infer<typeof optionsSchema>;

export function registerBackfillCommand(program: Command, io: CliIo): void {
  program
    .command("backfill")
    .description(
      "fetch the history of devices over an interval; stored as a job, so running the same " +
        "command again (or `run`) continues it instead of starting over",
    )
    .option("-d, --device <id...>", "devices to backfill")
    .option("--all", "every device (of this shard)")
    .option("--from <time>", "start: ISO date or date-time, UTC unless a zone is given")
    .option("--to <time>", "end: ISO date or date-time, or now (default now)")
    .option("--yes", "go ahead with a range of more than 10 years")
    .option("--values <ids>", "only these value ids, comma-separated")
    .option("--dry-run", "print the plan (requests, estimated time) without fetching data")
    .option("--json", "with --dry-run: print the plan as JSON")
    .option(
      "--retry-parked",
      "run the parked jobs again (of --device, or all) with a fresh set of attempts",
    )
    .option("-o, --output <file>", "write line protocol to FILE (- for stdout) instead of InfluxDB")
    .addHelpText(
      "after",
      examples(
        "energy-etl backfill --device hybrid-site-01 --from 2025-01-01 --to now",
        "energy-etl backfill --all --from 2025-06-01 --to 2025-07-01 --dry-run",
      ),
    )
    .action(
      parsedAction(optionsSchema, (opts, command) => {
        // nothing after now exists yet: a later --to would plan empty requests
        const nowS = epochSeconds(new Date());
        const target = { output: opts.output, dryRun: opts.dryRun };
        return withPipeline(command, io, target, (pipeline, context, finished) =>
          runBackfill(opts, nowS, pipeline, context, finished),
        );
      }),
    );
}

/** The jobs of `opts` (parked ones again, or planned and queued) run, and a summary line. */
async function runBackfill(
  opts: BackfillOptions,
  nowS: number,
  pipeline: Pipeline,
  context: CommandContext,
  finished: MarkFinished,
): Promise<void> {
  const jobs = opts.retryParked
    ? retryParked(opts, pipeline, context.io)
    : await plannedJobs(opts, nowS, pipeline, context);
  if (jobs === undefined) return;
  const { run, progress: s } = await runBackfillWithProgress(pipeline, jobs, context);
  const unfinished = run.jobs.filter((j) => j.status === "failed" || j.status === "parked");
  // every job done: a Ctrl-C during the rollups or the summary stops nothing left to do
  if (run.jobs.length === jobs.length && run.jobs.every((j) => j.status === "done")) finished();
  writeLine(
    context.io.stdout,
    `backfill: ${run.jobs.filter((j) => j.status === "done").length}/${jobs.length} jobs done, ` +
      `${s.chunksDone}/${s.chunksTotal} chunks, ${counted(s.points, "point")}, ${counted(run.requests, "request")}` +
      ` -> ${pipeline.sink.target}${newDeadLettersNote(run.deadLetters)}${rollupsNote(run.rollups)}`,
  );
  if (unfinished.length > 0) {
    throw new Error(
      `${unfinished.length} backfill jobs unfinished (${unfinished[0]?.lastError ?? "see the log"}); run the same command again to continue`,
    );
  }
  throwIfRollupsFailed(run.rollups);
}

/** `--retry-parked`: the parked jobs (of --device, or all) with a fresh set of attempts. */
function retryParked(opts: BackfillOptions, pipeline: Pipeline, io: CliIo): BackfillJob[] {
  const wanted = new Set(opts.device ?? []);
  const parked = pipeline.store.jobs
    .parked()
    .filter((j) => wanted.size === 0 || wanted.has(j.deviceId));
  pipeline.store.jobs.unpark(
    parked.map((j) => j.id),
    pipeline.now(),
  );
  const jobs = parked.flatMap((j) => pipeline.store.jobs.get(j.id) ?? []);
  writeLine(io.stdout, `retrying ${jobs.length} parked jobs`);
  return jobs;
}

/** The interval's jobs planned and queued (a dry run prints the plan: undefined). */
async function plannedJobs(
  opts: BackfillOptions,
  nowS: number,
  pipeline: Pipeline,
  context: CommandContext,
): Promise<BackfillJob[] | undefined> {
  const request = {
    devices: opts.all ? ("all" as const) : (opts.device ?? []),
    fromS: Math.min(opts.from ? epochSeconds(opts.from) : nowS, nowS),
    toS: Math.min(epochSeconds(opts.to ?? new Date()), nowS),
    values: opts.values,
  };
  const startedMs = performance.now();
  const planned = await planBackfill(pipeline, { ...request, dryRun: opts.dryRun === true });
  const plan = planned.jobs;
  if (opts.dryRun) {
    const remaining = remainingBackfill(pipeline, plan);
    const catalogMs = performance.now() - startedMs;
    const earlier = pipeline.store.runs.recentFinished("backfill", LEARN_FROM_RUNS);
    const estimate = dryRunEstimate(remaining, planned.latencyMs, catalogMs, earlier, context);
    printPlan(context.io, remaining, estimate, opts.json === true);
    return undefined;
  }
  const queued = queueBackfill(pipeline, plan);
  for (const { job } of queued.jobs.filter((q) => q.resumed)) {
    const progress = { job: job.id, done: job.chunksDone, total: job.chunksTotal };
    context.logger.info(progress, "continuing backfill job");
  }
  for (const job of queued.finished) {
    context.logger.info(
      { job: job.id, device: job.deviceId, resource: job.resourceId },
      "backfill job of this backfill already done: not fetched again",
    );
  }
  return queued.jobs.map((c) => c.job);
}

interface DryRunEstimate extends BackfillEstimate, EstimateInputs {
  /** Catalog answers the latency is the median of (0: none, the latency is not measured). */
  readonly latencySamples: number;
}

/**
 * The time a plan takes, from the configuration, the latency this dry run measured and the point
 * cost of the earlier runs.
 */
function dryRunEstimate(
  plan: readonly PlannedBackfill[],
  latencySamples: readonly number[],
  catalogMs: number,
  earlier: readonly RunRecord[],
  context: CommandContext,
): DryRunEstimate {
  const pace = {
    ratePerSecond: context.config.api.rateLimit,
    concurrency: context.config.api.concurrency,
    latencyMs: medianMs(latencySamples) ?? 0,
  };
  const pointCost = learnPointCost(earlier, pace);
  const inputs: EstimateInputs = {
    jobRequests: plan.map((p) => p.chunks),
    ...pace,
    catalogMs,
    ...(pointCost && { pointCost }),
  };
  const estimate = {
    ...estimateBackfill(inputs),
    ...inputs,
    latencySamples: latencySamples.length,
  };
  const { jobRequests, pointCost: cost, ...figures } = estimate;
  const { runs: learnedFromRuns = 0, ...learned } = cost ?? {};
  context.logger.debug(
    { ...figures, ...learned, learnedFromRuns, jobs: jobRequests.length },
    "backfill estimate",
  );
  return estimate;
}

function printPlan(
  io: CliIo,
  plan: readonly PlannedBackfill[],
  estimate: DryRunEstimate,
  json: boolean,
): void {
  if (json) {
    const jobs = plan.map((p) => ({
      ...p.spec,
      requests: p.chunks,
      ...(p.continues && {
        [p.continues.done ? "done" : "continues"]: p.continues.id,
        chunksDone: p.continues.chunksDone,
      }),
    }));
    writeJson(io.stdout, jobs);
    return;
  }
  // the job column only when the plan continues an unfinished job
  const resumes = plan.some((p) => p.continues !== undefined);
  const rows = plan.map((p) => [
    p.spec.deviceId,
    p.spec.resourceId,
    String(p.spec.valueIds.length),
    String(p.chunks),
    ...(resumes ? [jobColumn(p)] : []),
  ]);
  const header = ["device", "resource", "values", "requests", ...(resumes ? ["job"] : [])];
  writeText(io.stdout, renderTable(header, rows, io.stdout));
  const total = plan.reduce((n, p) => n + p.chunks, 0);
  writeLine(
    io.stdout,
    `total: ${counted(total, "request")}; about ${formatEstimate(estimate.seconds)} (dry run: nothing fetched)`,
  );
  for (const line of estimateBasis(estimate)) writeLine(io.stdout, line);
}

/** What an estimate rests on, a line each (within 80 columns for spans up to hours). */
function estimateBasis(e: DryRunEstimate): string[] {
  const span = formatEstimate;
  const latency =
    e.latencySamples === 0
      ? "not measured (no catalog answer): taken as 0"
      : `${Math.round(e.latencyMs)} ms a request (median of ${e.latencySamples} catalog answers now)`;
  const held = e.bound === "rate" ? "the rate limit" : "the latency";
  return [
    `estimate: catalog ${span(e.catalogMs / 1000)} (as read now) + requests ${span(e.dataSeconds)}, held by ${held}`,
    `  rate:        at most ${e.ratePerSecond} requests/s (API_RATE_LIMIT): alone ${span(e.rateOnlySeconds)}`,
    `  concurrency: ${e.inFlight} at once (API_CONCURRENCY ${e.concurrency}, one device at a time)`,
    `  latency:     ${latency}: alone ${span(e.latencyOnlySeconds)}`,
    pointsBasis(e),
  ];
}

/** The points' line of the basis: what was learned and from how many runs, or that nothing was. */
function pointsBasis({ pointCost, points, pointsSeconds }: DryRunEstimate): string {
  if (pointCost === undefined) {
    return `  + points:    not counted: no earlier backfill of ${MIN_POINTS}+ points to learn from`;
  }
  const { runs, msPerPoint } = pointCost;
  const from = `learned from ${runs} earlier run${runs === 1 ? "" : "s"}`;
  const us = (msPerPoint * 1000).toFixed(1);
  return `  + points:    ${points} at ${us} µs each (${from}): ${formatEstimate(pointsSeconds)}`;
}

/** A span of seconds: tenths below 10 s, whole seconds below 2 min, then as `status` says it. */
function formatEstimate(seconds: number): string {
  if (seconds < 10) return `${seconds.toFixed(1)} s`;
  return formatSpan(Math.round(seconds), false);
}

/** The stored job a planned row continues, or "new". */
function jobColumn(p: PlannedBackfill): string {
  if (p.continues === undefined) return "new";
  const { id, chunksDone, done } = p.continues;
  return done ? `done #${id}` : `continues #${id} (${chunksDone} done)`;
}
