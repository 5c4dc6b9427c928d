import { randomBytes } from "node:crypto";
import { existsSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { registerSecret } from "../../logger.js";
import { errnoOf, messageOf } from "../../util/errors.js";
import type { EnvFile } from "../env-file.js";
import { type CliIo, UsageError, writeLine } from "../io.js";
import type { ExistingInflux } from "./influx-input.js";
import type { InitInput } from "./prompts.js";

/** Characters written without quotes (no shell or compose meaning). */
const PLAIN = /^[A-Za-z0-9_\-.,:/@+=%]+$/;

/** A value as .env holds it: plain when it can be, else single-quoted (taken literally). */
function envLine(name: string, value: string): string {
  return `${name}=${PLAIN.test(value) ? value : `'${value}'`}`;
}

/** The .env text: API access, then the compose stack's accounts with fresh random secrets. */
export function renderEnvFile(values: ReturnType<typeof envValuesOf>, now = new Date()): string {
  const line = (name: keyof typeof values): string => envLine(name, values[name]);
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
    "# The rollups' bucket: influx-init creates it (when missing) at every start.",
    line("ROLLUP_BUCKET"),
    line("GRAFANA_ADMIN_USER"),
    line("GRAFANA_ADMIN_PASSWORD"),
    "",
  ].join("\n");
}

/** A random secret for the compose stack: 32 bytes, base64url (43 characters), registered. */
function randomSecret(): string {
  const secret = randomBytes(32).toString("base64url");
  registerSecret(secret);
  return secret;
}

/** The API access init checked, as .env holds it. */
function apiValuesOf(input: InitInput) {
  return {
    ENERGY_API_URL: input.apiUrl,
    ENERGY_API_KEY: input.apiKey,
    ENERGY_API_USER: input.user,
    ENERGY_API_PASSWORD: input.password,
  };
}

/** What `init` writes, in order: the API access it checked, fresh secrets for InfluxDB, Grafana. */
export function envValuesOf(input: InitInput) {
  return {
    ...apiValuesOf(input),
    INFLUX_ADMIN_USER: "admin",
    INFLUX_ADMIN_PASSWORD: randomSecret(),
    INFLUX_TOKEN: randomSecret(),
    INFLUX_ORG: "energy",
    INFLUX_BUCKET: "energy",
    ROLLUP_BUCKET: "energy/rollups",
    GRAFANA_ADMIN_USER: "admin",
    GRAFANA_ADMIN_PASSWORD: randomSecret(),
  };
}

/** The settings of an existing InfluxDB that init checked: only those its server uses. */
export function existingInfluxValues(influx: ExistingInflux): Record<string, string> {
  const auth: Record<string, string> = !influx.v1Server
    ? { INFLUX_TOKEN: influx.token, INFLUX_ORG: influx.org }
    : influx.username === ""
      ? {}
      : { INFLUX_USERNAME: influx.username, INFLUX_PASSWORD: influx.password };
  return {
    INFLUX_URL: influx.url,
    ...(influx.forcedApi && { INFLUX_API: influx.api }),
    ...auth,
    INFLUX_BUCKET: influx.database,
    ROLLUP_BUCKET: `${influx.database}/rollups`,
  };
}

/** The .env text for an existing InfluxDB: API access, then that InfluxDB's settings. */
export function renderExistingEnvFile(
  input: InitInput,
  influx: ExistingInflux,
  now = new Date(),
): string {
  const lines = (record: Record<string, string>) =>
    Object.entries(record).map(([name, value]) => envLine(name, value));
  const version = influx.version === undefined ? "" : ` ${influx.version}`;
  return [
    `# Written by \`energy-etl init\` on ${now.toISOString()}. Holds secrets: keep it private`,
    "# (mode 0600). .env.example describes these and every other setting.",
    "",
    "# --- energy-etl: API access ---",
    ...lines(apiValuesOf(input)),
    "",
    `# --- InfluxDB${version} (existing), checked by init; the rollups in their own policy ---`,
    ...lines(existingInfluxValues(influx)),
    "",
  ].join("\n");
}

/** Refuses an existing file without --force, and a missing directory, before anything is sent. */
export function checkTarget(file: EnvFile, force: boolean): void {
  if (existsSync(file.path) && !force) {
    throw new UsageError(`${file.label} exists; use --force to replace it`);
  }
  const dir = dirname(file.path);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new UsageError(`cannot write ${file.label}: the directory ${dir} does not exist`);
  }
}

/** Writes `text` with mode 0600, exclusively or (`force`) by one rename over the old file. */
export function writeEnvFile(file: EnvFile, text: string, force: boolean): void {
  const { path, label } = file;
  const written = force ? `${path}.${randomBytes(6).toString("hex")}.tmp` : path;
  try {
    writeFileSync(written, text, { mode: 0o600, flag: "wx" });
    if (force) renameSync(written, path);
  } catch (error) {
    if (force) rmSync(written, { force: true });
    else if (errnoOf(error) === "EEXIST") {
      throw new UsageError(`${label} exists; use --force to replace it`);
    }
    throw new Error(`cannot write ${label} (${errnoOf(error) ?? messageOf(error)})`);
  }
}

/** The compose stack's values for `input` and the file's text. */
function composeFile(input: InitInput): [Record<string, string>, string] {
  const values = envValuesOf(input);
  return [values, renderEnvFile(values)];
}

/**
 * Writes the env file for `input` and says so: for the compose stack (and, replacing one, that
 * its secrets are new), or with `influx` the settings of that existing InfluxDB only.
 */
export function writeInitEnvFile(
  io: CliIo,
  file: EnvFile,
  input: InitInput,
  force: boolean,
  influx?: ExistingInflux,
): void {
  const [values, text] = influx
    ? [
        { ...apiValuesOf(input), ...existingInfluxValues(influx) },
        renderExistingEnvFile(input, influx),
      ]
    : composeFile(input);
  const replacing = force && existsSync(file.path);
  writeEnvFile(file, text, force);
  writeLine(
    io.stdout,
    `Wrote ${file.label} (mode 0600${replacing ? ", replaced" : ""}): ` +
      `${Object.keys(values).join(", ")}.`,
  );
  if (replacing && !influx) {
    writeLine(
      io.stderr,
      "Note: the InfluxDB and Grafana secrets are new. An InfluxDB or Grafana already set up " +
        "keeps its old ones: put those back into the file, or start afresh " +
        "(docker compose down -v deletes their data).",
    );
  }
}
