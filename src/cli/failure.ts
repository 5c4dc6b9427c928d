import type { Command } from "commander";
import { ApiError } from "../api/errors.js";
import { ConfigError } from "../config.js";
import { scrubSecrets } from "../logger.js";
import { NewerSchemaError } from "../state/migrator.js";
import { messageOf } from "../util/errors.js";
import { loadedConfigs } from "./context.js";
import { type CliIo, ERROR_PREFIX, ExitStatus, UsageError, writeLine, writeText } from "./io.js";
import { commandPath } from "./program.js";
import { InterruptedError } from "./with-pipeline.js";

// loaded by runCli when a command failed: --help and --version load none of this (#41)

/**
 * Says on stderr why `called` (a command of `program`) failed, and what to do about it when the
 * message does not say it; returns the exit code.
 */
export function reportFailure(
  error: unknown,
  io: CliIo,
  program: Command,
  called: Command,
): number {
  if (error instanceof ExitStatus) return error.code;
  if (error instanceof InterruptedError) {
    writeLine(io.stderr, `energy-etl: ${error.message}`);
    return 130;
  }
  // a state database of a newer version is STATE_DB naming the wrong file: a usage error
  const usage =
    error instanceof ConfigError ||
    error instanceof UsageError ||
    error instanceof NewerSchemaError;
  const what = error instanceof ApiError ? `API ${error.code}: ` : "";
  // a configuration error lists its problems a line each; any other message is one line
  const write = error instanceof ConfigError ? writeText : writeLine;
  write(io.stderr, scrubSecrets(`${ERROR_PREFIX}${what}${messageOf(error)}`));
  if (error instanceof UsageError && error.pointAtHelp) {
    writeLine(io.stderr, `(see ${commandPath(called)} --help)`);
  }
  const next = nextStep(error, loadedConfigs.get(program)?.api.url);
  if (next) writeLine(io.stderr, `  ${next}`);
  return usage ? 2 : 1;
}

/** What to do about an error when its message does not say it; `apiUrl` is the API's base URL. */
function nextStep(error: unknown, apiUrl?: string): string | undefined {
  // a command that said what to do already names the settings to check (init, set-password)
  if (!(error instanceof ApiError) || /\bENERGY_API_[A-Z]+\b/.test(error.message)) return undefined;
  if (error.code === "network" && error.neverSent) {
    return `check ENERGY_API_URL (is the API reachable${apiUrl ? ` at ${apiUrl}` : ""}?)`;
  }
  if (error.code === "auth_failed" && error.endpoint === "POST /create_token") {
    return (
      "check ENERGY_API_KEY, ENERGY_API_USER (--api-user) and ENERGY_API_PASSWORD; on a first " +
      "start, set the password with your one-time password: energy-etl set-password"
    );
  }
  return error.code === "auth_failed"
    ? "the API refused the access token or the API key: check ENERGY_API_KEY"
    : undefined;
}
