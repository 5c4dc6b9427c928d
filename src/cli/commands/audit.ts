import type { Command } from "commander";
import { z } from "zod";
import { InfluxQuery } from "../../influx/influx-query.js";
import { auditGaps, holeJobs } from "../../pipeline/audit.js";
import { queueBackfill, runBackfillJobs } from "../../pipeline/backfill.js";
import { type CliIo, ExitStatus, UsageError, writeLine } from "../io.js";
import { BackfillProgressReporter, StepProgress } from "../progress.js";
import { renderTable } from "../table.js";
import { instantOption } from "../time-options.js";
import { withPipeline } from "../with-pipeline.js";

const optionsSchema = z
  .object({
    device: z.array(z.string().min(1)).optional(),
    from: instantOption("--from"),
    to: instantOption("--to").default(() => new Date()),
    fix: z.boolean().optional(),
    json: z.boolean().optional(),
  })
  .refine((o) => o.from.getTime() <= o.to.getTime(), "--from must not be after --to");

const day = (s: number) => new Date(s * 1000).toISOString().slice(0, 10);

/** `audit`: holes in InfluxDB compared with what the API has, per device resource and day. */
export function registerAuditCommand(program: Command, io: CliIo): void {
  program
    .command("audit")
    .description(
      "compare what InfluxDB holds with what the API has, per device resource and UTC day " +
        "(one sample value per group of 20, not every value), and list the holes; --fix " +
        "backfills exactly those days. Exit 1 when holes remain",
    )
    .option("-d, --device <id...>", "only these devices (default: every device of this shard)")
    .requiredOption("--from <time>", "first day: ISO date or date-time (UTC)")
    .option("--to <time>", "last day: ISO date or date-time, or now (default now)")
    .option("--fix", "queue and run backfill jobs for exactly the days with holes")
    .option("--json", "print the result as JSON")
    .addHelpText(
      "after",
      "\nExamples:\n  energy-etl audit --from 2026-10-01 --to 2026-10-31\n" +
        "  energy-etl audit --device hybrid-site-01 --from 2026-10-01 --fix",
    )
    .action(async (rawOpts: unknown, command: Command) => {
      const parsed = optionsSchema.safeParse(rawOpts);
      if (!parsed.success) {
        throw new UsageError(parsed.error.issues[0]?.message ?? "invalid options");
      }
      const opts = parsed.data;
      await withPipeline(command, io, {}, async (pipeline, context) => {
        const { influx } = context.config;
        if (influx.url === "") {
          throw new UsageError(
            "audit reads InfluxDB: set INFLUX_URL (and INFLUX_TOKEN, INFLUX_BUCKET)",
          );
        }
        const query = new InfluxQuery(influx);
        const progress = new StepProgress("audit", "requests", context.logger, context.terminal);
        let result: Awaited<ReturnType<typeof auditGaps>>;
        try {
          result = await auditGaps(
            pipeline,
            query,
            {
              devices: opts.device ?? "all",
              fromS: Math.floor(opts.from.getTime() / 1000),
              toS: Math.floor(opts.to.getTime() / 1000),
            },
            progress,
          );
        } finally {
          progress.stop();
        }
        const missing = result.holes.reduce(
          (n, h) => n + h.apiRecords - h.deadLettered - h.stored,
          0,
        );
        let fixed: { jobs: number; done: number } | undefined;
        if (opts.fix && result.holes.length > 0) {
          const nowS = Math.floor(pipeline.now().getTime() / 1000);
          const jobs = queueBackfill(pipeline, holeJobs(result.holes, nowS)).jobs.map((q) => q.job);
          const total = jobs.reduce((n, j) => n + j.chunksTotal, 0);
          const already = jobs.reduce((n, j) => n + j.chunksDone, 0);
          const bar = new BackfillProgressReporter(
            total,
            already,
            context.logger,
            context.terminal,
          );
          try {
            const run = await runBackfillJobs(pipeline, jobs, bar);
            fixed = { jobs: jobs.length, done: run.jobs.filter((j) => j.status === "done").length };
          } finally {
            bar.stop();
          }
        }
        if (opts.json) {
          writeLine(
            io.stdout,
            JSON.stringify(
              {
                from: new Date(result.fromS * 1000).toISOString(),
                to: new Date(result.toS * 1000).toISOString(),
                resources: result.resources,
                days: result.days,
                samples: result.samples,
                requests: result.requests,
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
                unaudited: result.unaudited,
                ...(fixed ? { fixed } : {}),
              },
              null,
              2,
            ),
          );
        } else {
          if (result.holes.length > 0) {
            writeLine(
              io.stdout,
              renderTable(
                [
                  "device",
                  "resource",
                  "day (UTC)",
                  "sample value",
                  "API records",
                  "in InfluxDB",
                  "dead letters",
                ],
                result.holes.map((h) => [
                  h.deviceId,
                  h.resourceId,
                  day(h.dayS),
                  `${h.valueId} (+${h.group.length - 1})`,
                  String(h.apiRecords),
                  String(h.stored),
                  String(h.deadLettered),
                ]),
                io.stdout,
              ),
            );
          }
          writeLine(
            io.stdout,
            `audit ${day(result.fromS)} .. ${day(result.toS)}: ${result.resources} device resources x ` +
              `${result.days} days, ${result.samples} sample values, ${result.requests} API requests, ` +
              `${result.queries} InfluxDB queries: ${result.holes.length === 0 ? "no holes" : `${result.holes.length} holes (${missing} points of the samples missing)`}`,
          );
          if (fixed) writeLine(io.stdout, `fixed: ${fixed.done}/${fixed.jobs} backfill jobs done`);
          else if (result.holes.length > 0)
            writeLine(io.stdout, "run again with --fix to backfill exactly these days");
        }
        if (result.holes.length > 0 && (!fixed || fixed.done < fixed.jobs)) {
          throw new ExitStatus(1, "holes remain");
        }
      });
    });
}
