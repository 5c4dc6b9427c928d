import { resolve } from "node:path";
import type { Command } from "commander";
import type { Logger } from "pino";
import type { ApiClient } from "../api/api-client.js";
import {
  apiClientSettings,
  type Config,
  type ConfigSources,
  configSecrets,
  resolveConfig,
  SETTINGS,
} from "../config.js";
import { createLogger, registerSecret } from "../logger.js";
import { envFileOf, mergeEnv, readEnvFile } from "./env-file.js";
import { type CliIo, parseOptions } from "./io.js";
import { nameOption } from "./options.js";
import { Terminal } from "./terminal.js";

// the commands that ask for secrets on a terminal say so here, beside createContext
export { asksForSecrets } from "./global-options.js";

/** What every command gets: the validated configuration and a logger. */
export interface CommandContext {
  readonly config: Config;
  /** Where each setting came from (see {@link resolveConfig}). */
  readonly origins: ReadonlyMap<string, string>;
  /** The environment over the env file's variables, for those no setting holds (ENERGY_API_OTP). */
  readonly env: Readonly<Record<string, string>>;
  readonly logger: Logger;
  readonly io: CliIo;
  readonly terminal: Terminal;
}

/** Commander's camelCase key of a long flag (`--api-url` -> `apiUrl`). */
function flagKey(flag: string): string {
  return flag.replace(/^--/, "").replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** The variable that names the config file when `--config` is not given. */
export const CONFIG_FILE = "CONFIG_FILE";

/**
 * The config file: `--config FILE`, else CONFIG_FILE of the environment, else of the env file
 * (an empty one counts as unset), with where the name came from unless it was the flag. A relative
 * path is under the working directory, wherever it was given.
 */
function configFileOf(
  flag: unknown,
  io: CliIo,
  envFileLabel: string,
  fromFile: Readonly<Record<string, string>> | undefined,
): Pick<ConfigSources, "file" | "fileFrom"> {
  const given = parseOptions(nameOption("--config", "a JSON config file").optional(), flag, false);
  if (given !== undefined) return { file: resolve(io.cwd, given) };
  const candidates: [string | undefined, string][] = [
    [io.env[CONFIG_FILE], `environment ${CONFIG_FILE}`],
    [fromFile?.[CONFIG_FILE], `${CONFIG_FILE} of .env file ${envFileLabel}`],
  ];
  for (const [value, from] of candidates) {
    if (value === undefined || value === "") continue;
    const name = parseOptions(nameOption(CONFIG_FILE, "a JSON config file"), value, false);
    return { file: resolve(io.cwd, name), fileFrom: from };
  }
  return {};
}

/** The configuration each program's command loaded, for what runCli says after a failure. */
export const loadedConfigs = new WeakMap<Command, Config>();

/** Configuration from flags, environment, env file (may be missing: init) and the config file. */
export function createContext(
  command: Command,
  io: CliIo,
  envFileMayBeMissing = false,
): CommandContext {
  const opts = command.optsWithGlobals<Record<string, unknown>>();
  const flags: Record<string, string | undefined> = {};
  for (const setting of SETTINGS) {
    const value = setting.flag ? opts[flagKey(setting.flag)] : undefined;
    if (typeof value === "string") flags[setting.env] = value;
  }
  const envFile = envFileOf(command, io);
  const fromFile = readEnvFile(envFile, envFileMayBeMissing);
  const { config, origins } = resolveConfig({
    flags,
    env: io.env,
    envFile: fromFile && { name: envFile.label, values: fromFile },
    ...configFileOf(opts.config, io, envFile.label, fromFile),
  });
  let root = command;
  while (root.parent) root = root.parent;
  loadedConfigs.set(root, config);
  for (const secret of configSecrets(config)) registerSecret(secret);
  const terminal = new Terminal(io.stderr, config.log.format);
  const logger = createLogger(config.log.level, terminal);
  return { config, origins, env: mergeEnv(io.env, fromFile), logger, io, terminal };
}

/**
 * An API client from the configuration with `overrides`; names every missing setting. The client
 * (and got under it) is loaded here, by the commands that talk to the API, not at start-up.
 */
export async function createApiClient(
  context: CommandContext,
  overrides: Partial<Pick<Config["api"], "url" | "key" | "user" | "password">> = {},
): Promise<ApiClient> {
  const { config, logger } = context;
  const settings = apiClientSettings({ ...config, api: { ...config.api, ...overrides } });
  const { ApiClient } = await import("../api/api-client.js");
  return new ApiClient({ ...settings, logger });
}
