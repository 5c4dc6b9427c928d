import { existsSync } from "node:fs";
import type { Command } from "commander";
import type { Logger } from "pino";
import { ApiClient } from "../api/client.js";
import { apiClientSettings, type Config, configSecrets, loadConfig, SETTINGS } from "../config.js";
import { createLogger, registerSecret } from "../logger.js";
import { type CliIo, UsageError } from "./io.js";
import { Terminal } from "./terminal.js";

/** What every command gets: the validated configuration and a logger. */
export interface CommandContext {
  readonly config: Config;
  readonly logger: Logger;
  readonly io: CliIo;
  /** stderr shared by log lines and progress bars. */
  readonly terminal: Terminal;
}

/** Commander's camelCase key of a long flag (`--api-url` -> `apiUrl`). */
export function flagKey(flag: string): string {
  return flag.replace(/^--/, "").replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** Global options (settings flags and --config) of the program, for every command. */
export function addGlobalOptions(program: Command): void {
  program.option("-c, --config <file>", "JSON config file (see config/default.json)");
  for (const setting of SETTINGS) {
    if (setting.flag) {
      program.option(
        `${setting.flag} <value>`,
        `overrides ${setting.env} (${setting.path.join(".")})`,
      );
    }
  }
}

/** Loads configuration from the command's global flags, the environment and --config. */
export function createContext(command: Command, io: CliIo): CommandContext {
  const opts = command.optsWithGlobals<Record<string, unknown>>();
  const flags: Record<string, string | undefined> = {};
  for (const setting of SETTINGS) {
    const value = setting.flag ? opts[flagKey(setting.flag)] : undefined;
    if (typeof value === "string") flags[setting.env] = value;
  }
  const file = typeof opts.config === "string" ? opts.config : undefined;
  const config = loadConfig({ flags, env: io.env, file });
  for (const secret of configSecrets(config)) registerSecret(secret);
  const terminal = new Terminal(io.stderr, config.log.format);
  const logger = createLogger(config.log.level, terminal);
  return { config, logger, io, terminal };
}

/** An API client from the configuration; names every missing connection setting. */
export function createApiClient(
  context: CommandContext,
  overrides: { user?: string; password?: string } = {},
): ApiClient {
  const { config, logger } = context;
  const settings = apiClientSettings({
    ...config,
    api: {
      ...config.api,
      user: overrides.user ?? config.api.user,
      password: overrides.password ?? config.api.password,
    },
  });
  return new ApiClient({ ...settings, logger });
}

/**
 * For commands that only read the state: STATE_DB must exist (a typo would otherwise create an
 * empty database and show nothing).
 */
export function requireStateFile(config: Config): void {
  const path = config.state.db;
  if (path === ":memory:" || existsSync(path)) return;
  throw new UsageError(
    `STATE_DB ${path} does not exist (a typo?): sync, backfill, run or migrate create it`,
  );
}
