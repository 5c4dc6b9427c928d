import type { Command } from "commander";
import { ConfigError } from "../../config.js";
import { createContext } from "../context.js";
import { apiChecks } from "../doctor/api-checks.js";
import { bounded, type CheckResult, failure, scrubbed } from "../doctor/check.js";
import { demoChecks } from "../doctor/demo-checks.js";
import { influxChecks, REACHABLE } from "../doctor/influx-checks.js";
import { rollupChecks } from "../doctor/rollup-checks.js";
import { siteChecks } from "../doctor/site-checks.js";
import { diskCheck, stateChecks } from "../doctor/state-checks.js";
import { type CliIo, ExitStatus, writeJson, writeLine } from "../io.js";

/** Headroom of a group of checks over the bounds of its own requests. */
const SLACK_MS = 2000;

export function registerDoctorCommand(program: Command, io: CliIo): void {
  program
    .command("doctor")
    .description(
      "check the setup: the API (reachable, credentials, devices), InfluxDB (reachable, write, " +
        "retention, where the rollups live), the state database, the clock, free disk, demo " +
        "defaults still in use",
    )
    .option("--json", "print the checks as a JSON array of {check, status, detail, fix}")
    .addHelpText(
      "after",
      "\nExit code 0 when no check failed (warnings allowed), 1 when one did.\n" +
        "It writes one point to measurement energy_etl_doctor (and one to ROLLUP_BUCKET when set) " +
        "and deletes it again.\n",
    )
    .action(async (opts: { json?: boolean }, command: Command) => {
      const results = (await runChecks(command, io)).map(scrubbed);
      if (opts.json) writeJson(io.stdout, results);
      else {
        // a check a line: `ok       API reachable: http://… answers`, a fix after ` -> `
        for (const { status, check, detail, fix } of results) {
          const line = `${status.padEnd(8)} ${check}: ${detail}`;
          writeLine(io.stdout, fix === undefined ? line : `${line} -> ${fix}`);
        }
        const count = (status: CheckResult["status"]) =>
          results.filter((r) => r.status === status).length;
        writeLine(
          io.stdout,
          `doctor: ${count("ok")} ok, ${count("warning")} warning(s), ${count("failure")} failure(s)`,
        );
      }
      if (results.some((r) => r.status === "failure")) {
        throw new ExitStatus(1, "doctor: a check failed");
      }
    });
}

/** Every check, the groups at once (each bounded), in a fixed order. */
async function runChecks(command: Command, io: CliIo): Promise<CheckResult[]> {
  let context: ReturnType<typeof createContext>;
  try {
    context = createContext(command, io);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return [
      failure(
        "configuration",
        error.message.replace(/\n\s*/g, " "),
        "fix the settings named (energy-etl config shows the configuration in effect)",
      ),
    ];
  }
  const { config, logger } = context;
  // the API: the base URL, then a token and the device list, one attempt each
  const apiMs = 3 * config.api.timeoutMs * 2 + SLACK_MS;
  // InfluxDB: health (and ping), write, delete (and DROP), buckets (and SHOW RETENTION POLICIES);
  // the rollups' bucket: write, delete (and DROP), buckets (and SHOW RETENTION POLICIES); the
  // sites' peak solar power
  const influxMs = 14 * config.influx.timeoutMs + SLACK_MS;
  const groups = await Promise.all([
    bounded("API", apiMs, () => apiChecks(config, logger)),
    bounded("InfluxDB", influxMs, async () => {
      const checks = await influxChecks(config);
      const reachable = checks.some((c) => c.check === REACHABLE && c.status !== "failure");
      return [
        ...checks,
        ...(await rollupChecks(config, reachable)),
        ...(await siteChecks(config, reachable, Date.now())),
      ];
    }),
    bounded("state DB", SLACK_MS * 3, async () => stateChecks(config)),
    bounded("free disk", SLACK_MS, async () => [diskCheck(config)]),
    bounded("demo defaults", SLACK_MS, async () => demoChecks(config)),
  ]);
  return groups.flat();
}
