import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { z } from "zod";
import { asksForSecrets, createApiClient, createContext } from "../context.js";
import { type EnvFile, envFileOf } from "../env-file.js";
import { afterPasswordSet, proveAccess, setPasswordOnFirstStart } from "../init/checks.js";
import { checkValue, FIELDS, gatherInput } from "../init/prompts.js";
import { checkTarget, writeInitEnvFile } from "../init/write-env.js";
import { type CliIo, parseOptions, writeLine } from "../io.js";

/** Its flags, and the program's `--api-url` and `--api-user` (commander gives those to it). */
const optionsSchema = z.object({
  apiUrl: z.string().optional(),
  user: z.string().optional(),
  apiUser: z.string().optional(),
  force: z.boolean().default(false),
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
  };
}

async function runInit(io: CliIo, command: Command): Promise<void> {
  const flags = readFlags(command);
  const envFile = envFileOf(command, io);
  checkTarget(envFile, flags.force);
  const context = createContext(command, io, true);
  const input = await gatherInput(io, flags, context);
  const { apiUrl: url, apiKey: key, user, password } = input;
  const client = await createApiClient(context, { url, key, user, password });
  writeLine(io.stdout, `API: ${url} as ${user}`);
  const passwordSet = await setPasswordOnFirstStart(io, client, input);
  try {
    await proveAccess(io, client, passwordSet);
    writeInitEnvFile(io, envFile, input, flags.force);
    if (passwordSet) {
      writeLine(
        io.stdout,
        `The password of ${user} is set (the one-time password is used up): set-password is ` +
          "not needed.",
      );
    }
    writeLine(io.stdout, whatNext(io, envFile));
  } catch (error) {
    throw passwordSet ? afterPasswordSet(error, user) : error;
  }
}

/** What next: the compose stack beside a docker-compose.yml, else the CLI with this env file. */
function whatNext(io: CliIo, file: EnvFile): string {
  if (existsSync(join(io.cwd, "docker-compose.yml"))) {
    return `Next: docker compose${file.explicit ? ` --env-file ${file.label}` : ""} up -d`;
  }
  const cli = `energy-etl${file.explicit ? ` --env-path ${file.label}` : ""}`;
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
        "./.env) with random InfluxDB and Grafana secrets; asks on a terminal, else reads " +
        "ENERGY_API_URL, ENERGY_API_KEY, ENERGY_API_USER, ENERGY_API_PASSWORD and ENERGY_API_OTP",
    )
    .option("--api-url <url>", "API base URL, http(s) (default: ENERGY_API_URL)")
    .option("-u, --user <user>", "API username (default: ENERGY_API_USER)")
    .option("--force", "replace the env file if it exists")
    .action((_opts: unknown, command: Command) => runInit(io, command));
  asksForSecrets(init, ["ENERGY_API_KEY", "ENERGY_API_PASSWORD", "ENERGY_API_OTP"]);
}
