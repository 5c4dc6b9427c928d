import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { z } from "zod";
import { asksForSecrets, createApiClient, createContext } from "../context.js";
import { type EnvFile, envFileOf } from "../env-file.js";
import { afterPasswordSet, proveAccess, setPasswordOnFirstStart } from "../init/checks.js";
import {
  chooseMode,
  type ExistingInflux,
  gatherInflux,
  INFLUX_FIELDS,
  INFLUX_MODES,
} from "../init/influx-input.js";
import { setUpInflux } from "../init/influx-setup.js";
import { checkValue, FIELDS, gatherInput } from "../init/prompts.js";
import { checkTarget, writeInitEnvFile } from "../init/write-env.js";
import { type CliIo, parseOptions, writeLine } from "../io.js";

/** Its flags, and the program's `--api-url` and `--api-user` (commander gives those to it). */
const optionsSchema = z.object({
  apiUrl: z.string().optional(),
  user: z.string().optional(),
  apiUser: z.string().optional(),
  force: z.boolean().default(false),
  influx: z.enum(INFLUX_MODES, { message: "--influx must be compose or existing" }).optional(),
  influxUsername: z.string().optional(),
});

/** The flags, checked before anything else; init's own over the program's. */
function readFlags(command: Command) {
  const opts = parseOptions(optionsSchema, command.optsWithGlobals());
  const { apiUrl } = opts;
  const user = opts.user ?? opts.apiUser;
  return {
    apiUrl: apiUrl === undefined ? undefined : checkValue(FIELDS.apiUrl, apiUrl, "flag"),
    user: user === undefined ? undefined : checkValue(FIELDS.user, user, "flag"),
    force: opts.force,
    influx: opts.influx,
    influxUsername: opts.influxUsername,
  };
}

async function runInit(io: CliIo, command: Command): Promise<void> {
  const flags = readFlags(command);
  const envFile = envFileOf(command, io);
  checkTarget(envFile, flags.force);
  const context = createContext(command, io, true);
  const mode = await chooseMode(io, flags.influx);
  const input = await gatherInput(io, flags, context);
  let influx: ExistingInflux | undefined;
  let failedSteps: string[] = [];
  if (mode === "existing") {
    // before the API: a wrong InfluxDB setting stops init before a one-time password is used up
    influx = await gatherInflux(io, flags.influxUsername, context);
    failedSteps = await setUpInflux(io, influx);
  }
  const { apiUrl: url, apiKey: key, user, password } = input;
  const client = await createApiClient(context, { url, key, user, password });
  writeLine(io.stdout, `API: ${url} as ${user}`);
  const passwordSet = await setPasswordOnFirstStart(io, client, input);
  try {
    await proveAccess(io, client, passwordSet);
    writeInitEnvFile(io, envFile, input, flags.force, influx);
    if (passwordSet) {
      writeLine(
        io.stdout,
        `The password of ${user} is set (the one-time password is used up): set-password is ` +
          "not needed.",
      );
    }
  } catch (error) {
    throw passwordSet ? afterPasswordSet(error, user) : error;
  }
  // the file is written (and a password set): what is left is for InfluxDB's operator
  if (failedSteps.length > 0) throw incomplete(failedSteps, envFile);
  writeLine(io.stdout, influx ? nextForExisting(envFile) : whatNext(io, envFile));
}

/** The InfluxDB steps that failed: the file is written, what the lines above say is still to do. */
function incomplete(steps: readonly string[], file: EnvFile): Error {
  return new Error(
    `InfluxDB is not ready (${steps.join("; ")} failed): ${file.label} is written; do what the ` +
      `lines above say, then ${cliOf(file)} doctor checks it again`,
  );
}

const cliOf = (file: EnvFile) => `energy-etl${file.explicit ? ` --env-path ${file.label}` : ""}`;

/** What next with an existing InfluxDB that passed every step. */
function nextForExisting(file: EnvFile): string {
  const cli = cliOf(file);
  return `Next: ${cli} doctor; then ${cli} backfill --all --from -14d (history) and ${cli} run.`;
}

/** What next: the compose stack beside a docker-compose.yml, else the CLI with this env file. */
function whatNext(io: CliIo, file: EnvFile): string {
  if (existsSync(join(io.cwd, "docker-compose.yml"))) {
    return `Next: docker compose${file.explicit ? ` --env-file ${file.label}` : ""} up -d`;
  }
  const cli = cliOf(file);
  const where = file.explicit ? file.label : `${file.label} in this folder`;
  return (
    `Next: ${cli} devices (it reads ${where}); before ${cli} run, set INFLUX_URL, ` +
    `INFLUX_TOKEN, INFLUX_ORG and INFLUX_BUCKET of your InfluxDB in ${file.label} (or ` +
    "OUTPUT_FILE for a file)."
  );
}

export function registerInitCommand(program: Command, io: CliIo): void {
  const init = program
    .command("init")
    .description(
      "first setup: checks the API credentials (setting the password with a one-time password " +
        "on a first start), lists the devices, and writes the env file (--env-path, default " +
        "./.env): with random InfluxDB and Grafana secrets for the compose stack, or (--influx " +
        "existing) for an InfluxDB you have, which it checks (1.x: makes the database and the " +
        "rollups' policy); asks on a terminal, else reads ENERGY_API_URL, ENERGY_API_KEY, " +
        "ENERGY_API_USER, ENERGY_API_PASSWORD, ENERGY_API_OTP, INFLUX_TOKEN and INFLUX_PASSWORD",
    )
    .option("--api-url <url>", "API base URL, http(s) (default: ENERGY_API_URL)")
    .option("-u, --user <user>", "API username (default: ENERGY_API_USER)")
    .option("--force", "replace the env file if it exists")
    .option(
      "--influx <mode>",
      "compose (the stack's InfluxDB; the default off a terminal) or existing (--influx-url, " +
        "--influx-bucket, --influx-org; INFLUX_TOKEN, or a 1.x --influx-username and INFLUX_PASSWORD)",
    )
    .option(
      `${INFLUX_FIELDS.username.flag} <user>`,
      "InfluxDB 1.x user (default: INFLUX_USERNAME; none: no auth)",
    )
    .action((_opts: unknown, command: Command) => runInit(io, command));
  asksForSecrets(init, [
    "ENERGY_API_KEY",
    "ENERGY_API_PASSWORD",
    "ENERGY_API_OTP",
    "INFLUX_TOKEN",
    "INFLUX_PASSWORD",
  ]);
}
