import { type Command, Option } from "commander";
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
import { DEFAULT_ENV_FILE, envFileOf, mergeEnv, readEnvFile } from "./env-file.js";
import { type CliIo, parseOptions, UsageError } from "./io.js";
import { nameOption } from "./options.js";
import { Terminal } from "./terminal.js";

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

/** Global options (settings flags, --config and --env-path) of the program, for every command. */
export function addGlobalOptions(program: Command): void {
  program.option("-c, --config <file>", "JSON config file (see config/default.json)");
  // not --env-file: node 20 takes a script's own `--env-file X` for itself and stops when X
  // does not exist (nodejs/node#54232)
  program.option(
    "-f, --env-path <file>",
    `env file read below the environment; init writes it (default: ${DEFAULT_ENV_FILE})`,
  );
  for (const setting of SETTINGS.filter(({ flag }) => flag)) {
    program.option(`${setting.flag} <value>`, `overrides ${setting.env} (${setting.name})`);
  }
}

/** The flags a secret would be given as (each -> its variable), refused: see {@link refuseSecretFlags}. */
const SECRET_FLAGS: Readonly<Record<string, string>> = {
  "--api-key": "ENERGY_API_KEY",
  "--password": "ENERGY_API_PASSWORD",
  "--api-password": "ENERGY_API_PASSWORD",
  "--otp": "ENERGY_API_OTP",
  "--influx-token": "INFLUX_TOKEN",
};

/** The variables a command asks for on a terminal when they are not set (init, set-password). */
const askedOnATerminal = new WeakMap<Command, readonly string[]>();

/** Says that `command` asks on a terminal for the secrets of `envs` when they are not set. */
export function asksForSecrets(command: Command, envs: readonly string[]): void {
  askedOnATerminal.set(command, envs);
}

/**
 * Refuses each secret flag on the program, wherever it stands on the command line, as soon as it
 * is read (before any other check): a secret there shows in the shell history and in `ps`. The
 * message says where it belongs. `command` is the one run: the flags it takes itself are left to
 * it (`simulate --api-key` is the simulator's); those it asks for, the message says so.
 */
export function refuseSecretFlags(program: Command, command: Command | undefined): void {
  const taken = new Set(command?.options.map((option) => option.long));
  const asksFor = (command && askedOnATerminal.get(command)) ?? [];
  for (const [flag, env] of Object.entries(SECRET_FLAGS)) {
    if (taken.has(flag)) continue;
    const asks = asksFor.includes(env)
      ? `, or leave it out and ${command?.name()} asks on a terminal`
      : "";
    const message =
      `${flag} is not taken: a secret on the command line shows in the shell history and in ` +
      `ps. Set ${env} in the environment or the .env file${asks}`;
    const refuse = (): never => {
      throw new UsageError(message);
    };
    // a preset: the parser runs for the flag without a value too
    program.addOption(new Option(`${flag} [value]`).hideHelp().preset("").argParser(refuse));
  }
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
