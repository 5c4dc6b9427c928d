import { join, resolve } from "node:path";
import { parseEnv } from "node:util";
import type { Command } from "commander";
import { z } from "zod";
import { ConfigError } from "../config.js";
import { readTextFile } from "../util/input-text.js";
import { DEFAULT_ENV_FILE } from "./global-options.js";
import { type CliIo, parseOptions, UsageError } from "./io.js";

/** The env file of a command: read by every command (below the environment), written by init. */
export interface EnvFile {
  /** Where it is (a relative `--env-path` is under the working directory). */
  readonly path: string;
  /** How messages name it: `--env-path` as given, or `./.env`. */
  readonly label: string;
  /** True when `--env-path` named it: then it must exist (except for init, which writes it). */
  readonly explicit: boolean;
}

const envPathSchema = z.string().min(1, "--env-path must not be empty").optional();

/** The command's env file: `--env-path FILE`, else `./.env` of `io.cwd`. */
export function envFileOf(command: Command, io: CliIo): EnvFile {
  const given = parseOptions(envPathSchema, command.optsWithGlobals().envPath, false);
  return given === undefined
    ? { path: join(io.cwd, ".env"), label: DEFAULT_ENV_FILE, explicit: false }
    : { path: resolve(io.cwd, given), label: given, explicit: true };
}

/** The most bytes an env file may have (a few hundred are usual). */
export const MAX_ENV_FILE_BYTES = 1024 * 1024;

/** An env file's variables by Node's parser; undefined when an unnamed `./.env` does not exist. */
export function readEnvFile(
  file: EnvFile,
  mayBeMissing = false,
): Record<string, string> | undefined {
  const read = readTextFile(file.path, MAX_ENV_FILE_BYTES);
  if ("problem" in read) {
    if (read.errno === "ENOENT" && (!file.explicit || mayBeMissing)) return undefined;
    if (read.errno === "ENOENT") throw new UsageError(`--env-path ${file.label}: no such file`);
    throw new ConfigError(`.env file ${file.label}: ${read.problem}`);
  }
  return z.record(z.string(), z.string()).parse(parseEnv(read.text));
}

/** The environment over the env file's variables (an empty variable counts as unset). */
export function mergeEnv(
  env: Readonly<Record<string, string | undefined>>,
  fromFile: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const merged: Record<string, string> = { ...fromFile };
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && value !== "") merged[name] = value;
  }
  return merged;
}
