import { type Command, Option } from "commander";
import { SETTING_FLAGS } from "../config/setting-names.js";
import { UsageError } from "./io.js";

// the program's own options, loaded for --help without zod or any command (#41)

/** The env file unless `--env-path` names another: `./.env` of the working directory. */
export const DEFAULT_ENV_FILE = "./.env";

/** Global options (settings flags, --config and --env-path) of the program, for every command. */
export function addGlobalOptions(program: Command): void {
  program.option("-c, --config <file>", "JSON config file (see config/default.json)");
  // not --env-file: node 20 takes a script's own `--env-file X` for itself and stops when X
  // does not exist (nodejs/node#54232)
  program.option(
    "-f, --env-path <file>",
    `env file read below the environment; init writes it (default: ${DEFAULT_ENV_FILE})`,
  );
  for (const { flag, env, name } of SETTING_FLAGS) {
    program.option(`${flag} <value>`, `overrides ${env} (${name})`);
  }
}

/** The flags a secret would be given as (each -> its variable), refused: see {@link refuseSecretFlags}. */
const SECRET_FLAGS: Readonly<Record<string, string>> = {
  "--api-key": "ENERGY_API_KEY",
  "--password": "ENERGY_API_PASSWORD",
  "--api-password": "ENERGY_API_PASSWORD",
  "--otp": "ENERGY_API_OTP",
  "--influx-token": "INFLUX_TOKEN",
  "--influx-password": "INFLUX_PASSWORD",
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
