import type { Command } from "commander";
import type { Logger } from "pino";
import type { ApiClient } from "../api/api-client.js";
import {
  apiClientSettings,
  type Config,
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

/** The configuration each program's command loaded, for what runCli says after a failure. */
export const loadedConfigs = new WeakMap<Command, Config>();

/** Configuration from flags, environment, env file (may be missing: init) and --config. */
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
  const file = parseOptions(
    nameOption("--config", "a JSON config file").optional(),
    opts.config,
    false,
  );
  const envFile = envFileOf(command, io);
  const fromFile = readEnvFile(envFile, envFileMayBeMissing);
  const { config, origins } = resolveConfig({
    flags,
    env: io.env,
    envFile: fromFile && { name: envFile.label, values: fromFile },
    file,
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
