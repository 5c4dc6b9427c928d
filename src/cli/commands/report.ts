import type { Command } from "commander";
import { z } from "zod";
import { canonicalTimeZone } from "../../config/time-zones.js";
import { timeZonesOf } from "../../config/values.js";
import type { Report } from "../../report/report.js";
import { localDate } from "../../rollups/buckets.js";
import { rollupHomeOf } from "../../rollups/series.js";
import { epochSeconds } from "../../util/utc-time.js";
import { createContext } from "../context.js";
import { type CliIo, examples, parsedAction, UsageError, writeJson, writeText } from "../io.js";
import { boundedRange, instantOption, toOption } from "../time-options.js";

const optionsSchema = boundedRange(
  z.object({
    from: instantOption("--from"),
    to: toOption().default(() => new Date()),
    yes: z.boolean().optional(),
    by: z.enum(["day", "week", "month"], {
      error: (issue) => `--by: expected day, week or month, got ${JSON.stringify(issue.input)}`,
    }),
    tz: z.string().optional(),
    json: z.boolean().optional(),
  }),
);

type ReportOptions = z.infer<typeof optionsSchema>;

export function registerReportCommand(program: Command, io: CliIo): void {
  program
    .command("report")
    .description(
      "energy per site and for the fleet per day, week or month from the daily rollups: " +
        "produced, consumed, imported, exported, battery in and out, specific yield (kWh/kWp) " +
        "and its ranking; bar charts on a terminal, TSV when piped, --json",
    )
    .option("--from <time>", "start: date, date-time, or a duration back (P7D, -7d)", "-7d")
    .option("--to <time>", "end (default: now)")
    .option("--by <period>", "day, week (ISO, from Monday) or month", "day")
    .option("--tz <zone>", "time zone of the days (default: the first of ROLLUP_TIME_ZONES)")
    .option("--yes", "go ahead with a range of more than 10 years")
    .option("--json", "print the report as JSON")
    .addHelpText(
      "after",
      examples(
        "energy-etl report",
        "energy-etl report --by month --from 2026-01-01 --tz Europe/Berlin",
        "energy-etl report --from -30d --by week > energy.tsv",
      ),
    )
    .action(parsedAction(optionsSchema, (opts, command) => report(command, io, opts)));
}

/** The zone asked (`--tz`), or the first of ROLLUP_TIME_ZONES; one not rolled up is an error. */
export function reportZone(tz: string | undefined, rolledUp: string): string {
  const zones = timeZonesOf(rolledUp);
  const first = zones[0] ?? "UTC";
  if (tz === undefined) return first;
  const found = canonicalTimeZone(tz);
  if ("problem" in found) throw new UsageError(`--tz: ${found.problem}`);
  if (!zones.includes(found.zone)) {
    throw new UsageError(
      `--tz: ${found.zone} is not rolled up: ROLLUP_TIME_ZONES is ${zones.join(",")}; add it ` +
        `there and write its rollups (energy-etl rollups --from ...), or give one of those`,
    );
  }
  return found.zone;
}

async function report(command: Command, io: CliIo, opts: ReportOptions): Promise<void> {
  const context = createContext(command, io);
  const { config } = context;
  const tz = reportZone(opts.tz, config.rollups.timeZones);
  if (config.influx.url === "") {
    throw new UsageError("report reads the rollups in InfluxDB: set INFLUX_URL");
  }
  const fromS = epochSeconds(opts.from);
  const toS = Math.min(epochSeconds(opts.to), epochSeconds(new Date()));
  // the client (and got under it) loads here, for this command only
  const [{ InfluxQuery }, { readRollupDays }, { buildReport, coveredDates }] = await Promise.all([
    import("../../influx/influx-query.js"),
    import("../../report/read-rollups.js"),
    import("../../report/report.js"),
  ]);
  // [--from, --to) as backfill's: the last day is that of --to's second before (or --from's)
  const lastS = Math.max(fromS, toS - 1);
  const covered = coveredDates(opts.by, localDate(tz, fromS), localDate(tz, lastS));
  const query = new InfluxQuery(config.influx);
  const rows = await readRollupDays(query, rollupHomeOf(config), tz, covered);
  const result = buildReport(rows, { tz, by: opts.by, covered, sites: config.sites });
  context.logger.debug(
    { tz, by: opts.by, rows: rows.length, sites: result.sites.length },
    "report read",
  );
  if (rows.length === 0) {
    context.logger.warn(
      { tz, from: result.from, to: result.to },
      "no rollups in the range: write them with energy-etl rollups --from ... (or check INFLUX_BUCKET and ROLLUP_BUCKET)",
    );
  }
  await print(result, io, opts.json === true);
}

async function print(result: Report, io: CliIo, json: boolean): Promise<void> {
  if (json) {
    writeJson(io.stdout, result);
    return;
  }
  const { stdout } = io;
  if (stdout.isTTY === true) {
    const { renderBars } = await import("../../report/render-bars.js");
    // a terminal that says no width, or 0 (a pseudo-terminal under `script`): 80, as tables
    const columns = "columns" in stdout && typeof stdout.columns === "number" ? stdout.columns : 0;
    writeText(stdout, renderBars(result, columns > 0 ? columns : 80));
  } else {
    const { renderTsv } = await import("../../report/render-tsv.js");
    writeText(stdout, renderTsv(result));
  }
}
