import { randomBytes } from "node:crypto";
import { existsSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Command } from "commander";
import { z } from "zod";
import { ApiClient } from "../../api/api-client.js";
import { ApiError } from "../../api/errors.js";
import { apiClientSettings, type Config, urlProblem } from "../../config.js";
import { registerSecret } from "../../logger.js";
import { type CommandContext, createContext, refuseSecretFlags } from "../context.js";
import { type EnvFile, envFileOf } from "../env-file.js";
import { type CliIo, parseOptions, UsageError, writeLine } from "../io.js";
import { askHidden } from "../prompt.js";
import { adviseOnFailure } from "./set-password.js";

/** Device ids printed after the count. */
const SHOWN_DEVICES = 5;

/** Tries at a prompt before an invalid answer ends the command. */
const PROMPT_TRIES = 3;

/**
 * One value `init` asks for: its flag (none for a secret), the environment variable (and setting)
 * that also supplies it, and how a prompt names it.
 */
interface Field {
  readonly flag?: string;
  readonly env: string;
  readonly label: string;
  readonly hidden: boolean;
  readonly schema: z.ZodType<string, string>;
}

/** Line breaks and other control characters: a .env line cannot hold them. */
const CONTROL = /\p{Cc}/u;

/**
 * A value for the .env file: one line, and neither ' nor \ (docker compose reads a
 * single-quoted value up to the first ' not after a \, and takes it literally).
 */
const envValue = (schema: z.ZodString): z.ZodType<string, string> =>
  schema
    .min(1, "must not be empty")
    .refine((s) => !CONTROL.test(s), "must not hold line breaks or other control characters")
    .refine(
      (s) => !/['\\]/.test(s),
      "must not hold ' or \\ (a .env file cannot hold them reliably; write it by hand)",
    );

/** An http(s) URL without credentials; messages never repeat the value. */
const apiUrlSchema = envValue(z.string().trim()).superRefine((s, ctx) => {
  const problem = urlProblem(
    s,
    "put the user into ENERGY_API_USER (or --user) and the password into ENERGY_API_PASSWORD",
  );
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

const FIELDS = {
  apiUrl: {
    flag: "--api-url",
    env: "ENERGY_API_URL",
    label: "API URL",
    hidden: false,
    schema: apiUrlSchema,
  },
  apiKey: {
    env: "ENERGY_API_KEY",
    label: "API key",
    hidden: true,
    // an HTTP header value: surrounding blanks would not reach the API anyway
    schema: envValue(z.string().trim()),
  },
  user: {
    flag: "--user",
    env: "ENERGY_API_USER",
    label: "API user",
    hidden: false,
    schema: envValue(z.string().trim()),
  },
  password: {
    env: "ENERGY_API_PASSWORD",
    label: "API password",
    hidden: true,
    schema: envValue(z.string()),
  },
  otp: {
    env: "ENERGY_API_OTP",
    label: "one-time password",
    hidden: true,
    schema: z
      .string()
      .min(1, "must not be empty")
      .refine((s) => !CONTROL.test(s), "must not hold line breaks or other control characters"),
  },
} satisfies Record<string, Field>;

/** The command's own flags as commander hands them over; checked before anything else. */
const optionsSchema = z.object({
  apiUrl: z.string().optional(),
  user: z.string().optional(),
  force: z.boolean().default(false),
});

/** The program's settings flags `init` honours too (`energy-etl init --api-url …` sets them). */
const globalsSchema = z.object({
  apiUrl: z.string().optional(),
  apiUser: z.string().optional(),
});

/** Where a value came from, for messages. */
type Origin = "flag" | "setting" | "prompt";

/** `value` checked by the field's schema, or a UsageError naming where it came from. */
function check(field: Field, value: string, origin: Origin): string {
  const parsed = field.schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const message = parsed.error.issues[0]?.message ?? "is not valid";
  const where =
    origin === "flag"
      ? (field.flag ?? field.env)
      : origin === "setting"
        ? field.env
        : `the ${field.label}`;
  throw new UsageError(`${where} ${message}`);
}

/**
 * Asks for one line on the terminal, echoed (the terminal's line editing applies); resolves on
 * Enter, rejects when input ends first.
 */
export function askLine(io: CliIo, question: string): Promise<string> {
  const { stdin, stderr } = io;
  return new Promise((resolve, reject) => {
    let answer = "";
    stderr.write(question);
    const finish = (error?: Error): void => {
      stdin.removeListener("data", onData);
      stdin.removeListener("end", onEnd);
      stdin.pause();
      if (error) reject(error);
      else resolve(answer.replace(/\r$/, ""));
    };
    const onData = (chunk: Buffer | string): void => {
      const text = chunk.toString("utf8");
      const newline = text.indexOf("\n");
      if (newline < 0) {
        answer += text;
        return;
      }
      answer += text.slice(0, newline);
      finish();
    };
    const onEnd = (): void => finish(new UsageError("input ended before an answer"));
    stdin.on("data", onData);
    stdin.on("end", onEnd);
    stdin.resume();
  });
}

/** Asks for a field's value until it is valid (a few tries). */
async function askFor(
  io: CliIo,
  field: Field,
  question = `${field.label.charAt(0).toUpperCase()}${field.label.slice(1)}: `,
): Promise<string> {
  for (let tries = 1; ; tries++) {
    const answer = field.hidden ? await askHidden(io, question) : await askLine(io, question);
    if (field.hidden) registerSecret(answer);
    try {
      return check(field, answer, "prompt");
    } catch (error) {
      if (tries >= PROMPT_TRIES || !(error instanceof UsageError)) throw error;
      writeLine(io.stderr, `  ${error.message}; try again.`);
    }
  }
}

/** The flag's value, else the setting's (environment or --config), else the answer to a prompt. */
async function resolve(
  io: CliIo,
  field: Field,
  flagValue: string | undefined,
  settingValue: string,
): Promise<string> {
  if (flagValue !== undefined) return check(field, flagValue, "flag");
  if (settingValue !== "") return check(field, settingValue, "setting");
  if (!io.stdin.isTTY) throw notOnTerminal(field);
  return askFor(io, field);
}

function notOnTerminal(field: Field, extra = ""): UsageError {
  const how = field.flag ? `pass ${field.flag} or set ${field.env}` : `set ${field.env}`;
  return new UsageError(
    `no ${field.label}: ${how}${extra} (stdin is not a terminal, so init cannot ask)`,
  );
}

/** A new password, asked twice without echo. */
async function askNewPassword(io: CliIo): Promise<string> {
  const first = await askFor(io, FIELDS.password, "New API password: ");
  const again = await askHidden(io, "Repeat the new password: ");
  if (first !== again) throw new UsageError("the two passwords differ; nothing was changed");
  return first;
}

/** A random secret for the compose stack: 32 bytes, base64url (43 characters). */
function randomSecret(): string {
  const secret = randomBytes(32).toString("base64url");
  registerSecret(secret);
  return secret;
}

/** Characters written without quotes (no shell or compose meaning). */
const PLAIN = /^[A-Za-z0-9_\-.,:/@+=%]+$/;

/** A value as .env holds it: plain when it can be, else single-quoted (taken literally). */
function envLine(name: string, value: string): string {
  return `${name}=${PLAIN.test(value) ? value : `'${value}'`}`;
}

/** The variables `init` writes, in the file's order. */
export interface EnvValues {
  readonly ENERGY_API_URL: string;
  readonly ENERGY_API_KEY: string;
  readonly ENERGY_API_USER: string;
  readonly ENERGY_API_PASSWORD: string;
  readonly INFLUX_ADMIN_USER: string;
  readonly INFLUX_ADMIN_PASSWORD: string;
  readonly INFLUX_TOKEN: string;
  readonly INFLUX_ORG: string;
  readonly INFLUX_BUCKET: string;
  readonly GRAFANA_ADMIN_USER: string;
  readonly GRAFANA_ADMIN_PASSWORD: string;
}

/** The .env text: API access, then the compose stack's accounts with fresh random secrets. */
export function renderEnvFile(values: EnvValues, now = new Date()): string {
  const line = (name: keyof EnvValues): string => envLine(name, values[name]);
  return [
    `# Written by \`energy-etl init\` on ${now.toISOString()}. Holds secrets: keep it private`,
    "# (mode 0600). .env.example describes these and every other setting.",
    "",
    "# --- energy-etl: API access ---",
    line("ENERGY_API_URL"),
    line("ENERGY_API_KEY"),
    line("ENERGY_API_USER"),
    line("ENERGY_API_PASSWORD"),
    "",
    "# --- InfluxDB and Grafana ---",
    "# Read on their first start only: data volumes set up before keep the old ones.",
    line("INFLUX_ADMIN_USER"),
    line("INFLUX_ADMIN_PASSWORD"),
    line("INFLUX_TOKEN"),
    line("INFLUX_ORG"),
    line("INFLUX_BUCKET"),
    line("GRAFANA_ADMIN_USER"),
    line("GRAFANA_ADMIN_PASSWORD"),
    "",
  ].join("\n");
}

/** Refuses an existing file without --force, and a missing directory, before anything is sent. */
function checkTarget(file: EnvFile, force: boolean): void {
  if (existsSync(file.path) && !force) {
    throw new UsageError(`${file.label} exists; use --force to replace it`);
  }
  const dir = dirname(file.path);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new UsageError(`cannot write ${file.label}: the directory ${dir} does not exist`);
  }
}

/**
 * Writes `text` with mode 0600. Without `force` the file must not exist (created exclusively);
 * with it, a new file takes the old one's place in one rename (its mode is 0600 whatever the old
 * one's was).
 */
function writeEnvFile(file: EnvFile, text: string, force: boolean): void {
  const { path, label } = file;
  const reason = (error: unknown): string =>
    error && typeof error === "object" && "code" in error ? String(error.code) : String(error);
  if (!force) {
    try {
      writeFileSync(path, text, { mode: 0o600, flag: "wx" });
    } catch (error) {
      if (reason(error) === "EEXIST") {
        throw new UsageError(`${label} exists; use --force to replace it`);
      }
      throw new Error(`cannot write ${label} (${reason(error)})`);
    }
    return;
  }
  const temp = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    writeFileSync(temp, text, { mode: 0o600, flag: "wx" });
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw new Error(`cannot write ${label} (${reason(error)})`);
  }
}

/** What to do after the API refused to give a token, or could not be reached for one. */
function adviseOnTokenFailure(error: ApiError): ApiError {
  if (error.code === "auth_failed") {
    return error.withMessage(
      `${error.message}. The API refused the credentials: check the API key (ENERGY_API_KEY), ` +
        "the user (--user or ENERGY_API_USER) and the password (ENERGY_API_PASSWORD). On a " +
        "first start, with the one-time password you were given, run init with ENERGY_API_OTP " +
        "set (or answer y on a terminal) to set the password first.",
    );
  }
  if (error.code === "network" || error.code === "timeout") {
    return error.withMessage(
      `${error.message}. Check the API URL (--api-url or ENERGY_API_URL) and that the API can ` +
        "be reached from here.",
    );
  }
  return error;
}

/** What to do after a failed POST /set_password, in `init`'s words where they differ. */
function adviseOnSetPasswordFailure(error: ApiError): ApiError {
  if (error.code !== "auth_failed" && error.neverSent) {
    return error.withMessage(
      `${error.message}. Nothing reached the API, so the one-time password is still unused: ` +
        "check the API URL (--api-url or ENERGY_API_URL) and run init again.",
    );
  }
  return adviseOnFailure(error, "init");
}

/** `error` with the news that the password is set already (the one-time password is used up). */
function afterPasswordSet(error: unknown, user: string): Error {
  const note =
    `. The password of ${user} is set now (the one-time password is used up): run init ` +
    "again without ENERGY_API_OTP, with that password.";
  const message = (error instanceof Error ? error.message : String(error)).replace(/\.$/, "");
  if (error instanceof ApiError) return error.withMessage(`${message}${note}`);
  if (error instanceof UsageError) return new UsageError(`${message}${note}`);
  return new Error(`${message}${note}`);
}

/** The flags of one `init` run, each checked; undefined where not given. */
interface InitFlags {
  readonly apiUrl: string | undefined;
  readonly user: string | undefined;
  readonly force: boolean;
}

/** The values of one `init` run, validated. */
interface InitInput {
  readonly apiUrl: string;
  readonly apiKey: string;
  readonly user: string;
  readonly password: string;
  readonly otp: string | undefined;
}

/**
 * The flags, all checked before anything else happens. `--api-url` and `--api-user` may also
 * arrive as the program's settings flags (commander hands those to the program, not to init).
 */
function readFlags(command: Command): InitFlags {
  const opts = parseOptions(optionsSchema, command.opts());
  const globals = globalsSchema.parse(command.optsWithGlobals());
  const apiUrl = opts.apiUrl ?? globals.apiUrl;
  const user = opts.user ?? globals.apiUser;
  return {
    apiUrl: apiUrl === undefined ? undefined : check(FIELDS.apiUrl, apiUrl, "flag"),
    user: user === undefined ? undefined : check(FIELDS.user, user, "flag"),
    force: opts.force,
  };
}

/**
 * Gathers the values: a flag's first (URL and user; secrets have none), then the setting's
 * (environment, the env file, --config), then a prompt's on a terminal; off a terminal a missing
 * value is a usage error naming where it goes. A one-time password comes from ENERGY_API_OTP,
 * or a "first start?" question on a terminal when no password is given.
 */
async function gatherInput(
  io: CliIo,
  flags: InitFlags,
  { config, env }: CommandContext,
): Promise<InitInput> {
  const apiUrl = await resolve(io, FIELDS.apiUrl, flags.apiUrl, config.api.url);
  const apiKey = await resolve(io, FIELDS.apiKey, undefined, config.api.key);
  registerSecret(apiKey);
  const user = await resolve(io, FIELDS.user, flags.user, config.api.user);

  const envOtp = env.ENERGY_API_OTP ?? "";
  if (envOtp !== "") registerSecret(envOtp);
  let otp = envOtp !== "" ? check(FIELDS.otp, envOtp, "setting") : undefined;
  const givenPassword =
    config.api.password === "" ? undefined : check(FIELDS.password, config.api.password, "setting");
  if (otp === undefined && givenPassword === undefined && io.stdin.isTTY) {
    const answer = await askLine(
      io,
      "First start, with a one-time password to set the API password? [y/N] ",
    );
    if (/^\s*y(es)?\s*$/i.test(answer)) otp = await askFor(io, FIELDS.otp);
  }
  let password: string;
  if (givenPassword !== undefined) {
    password = givenPassword;
  } else if (io.stdin.isTTY) {
    password = otp !== undefined ? await askNewPassword(io) : await askFor(io, FIELDS.password);
  } else {
    throw notOnTerminal(
      FIELDS.password,
      otp !== undefined
        ? " (with ENERGY_API_OTP: the new password to set)"
        : "; on a first start also ENERGY_API_OTP with the one-time password",
    );
  }
  if (otp !== undefined) registerSecret(otp);
  registerSecret(password);
  registerSecret(`${user}:${password}`);
  return { apiUrl, apiKey, user, password, otp };
}

/** `init`: the whole first setup, from credentials to a .env the compose stack starts with. */
async function runInit(io: CliIo, command: Command): Promise<void> {
  const flags = readFlags(command);
  const envFile = envFileOf(command, io);
  checkTarget(envFile, flags.force);
  const context = createContext(command, io, { envFileMayBeMissing: true });
  const input = await gatherInput(io, flags, context);
  const { user } = input;
  const config: Config = {
    ...context.config,
    api: {
      ...context.config.api,
      url: input.apiUrl,
      key: input.apiKey,
      user,
      password: input.password,
    },
  };
  const client = new ApiClient({ ...apiClientSettings(config), logger: context.logger });
  writeLine(io.stdout, `API: ${input.apiUrl} as ${user}`);

  let passwordSet = false;
  if (input.otp !== undefined) {
    try {
      await client.setPassword(user, input.otp, input.password);
    } catch (error) {
      throw error instanceof ApiError ? adviseOnSetPasswordFailure(error) : error;
    }
    passwordSet = true;
    writeLine(io.stdout, `Password set for ${user} with the one-time password.`);
  }
  try {
    try {
      await client.accessToken();
    } catch (error) {
      throw error instanceof ApiError && !passwordSet ? adviseOnTokenFailure(error) : error;
    }
    writeLine(io.stdout, "Token: created, the credentials work.");
    const devices = (await client.listDevices()).value.device_ids;
    const shown = devices.slice(0, SHOWN_DEVICES).join(", ");
    const more = devices.length > SHOWN_DEVICES ? ", …" : "";
    writeLine(
      io.stdout,
      devices.length === 0
        ? "Devices: 0 (this user may read no device yet; ask the API's operator)"
        : `Devices: ${devices.length} (${shown}${more})`,
    );

    const values: EnvValues = {
      ENERGY_API_URL: input.apiUrl,
      ENERGY_API_KEY: input.apiKey,
      ENERGY_API_USER: user,
      ENERGY_API_PASSWORD: input.password,
      INFLUX_ADMIN_USER: "admin",
      INFLUX_ADMIN_PASSWORD: randomSecret(),
      INFLUX_TOKEN: randomSecret(),
      INFLUX_ORG: "energy",
      INFLUX_BUCKET: "energy",
      GRAFANA_ADMIN_USER: "admin",
      GRAFANA_ADMIN_PASSWORD: randomSecret(),
    };
    const replacing = flags.force && existsSync(envFile.path);
    writeEnvFile(envFile, renderEnvFile(values), flags.force);
    writeLine(
      io.stdout,
      `Wrote ${envFile.label} (mode 0600${replacing ? ", replaced" : ""}): ` +
        `${Object.keys(values).join(", ")}.`,
    );
    if (replacing) {
      writeLine(
        io.stderr,
        "Note: the InfluxDB and Grafana secrets are new. An InfluxDB or Grafana already set up " +
          "keeps its old ones: put those back into the file, or start afresh " +
          "(docker compose down -v deletes their data).",
      );
    }
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

/**
 * What to do after init: start the compose stack beside a docker-compose.yml, else use the CLI
 * here, which reads the env file init wrote.
 */
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

/**
 * `init`: asks for (or takes from the environment or the env file) the API URL, key, user and
 * password, sets the password with a one-time password on a first start, proves a token can be
 * created, lists the devices, and writes the env file (mode 0600) with those and fresh random
 * secrets for InfluxDB and Grafana. Secrets are never printed and never taken as flags; an
 * existing file is replaced only with --force.
 */
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
    .action(async (_opts: unknown, command: Command) => {
      await runInit(io, command);
    });
  refuseSecretFlags(init, {
    "--api-key": "ENERGY_API_KEY",
    "--password": "ENERGY_API_PASSWORD",
    "--otp": "ENERGY_API_OTP",
  });
}
