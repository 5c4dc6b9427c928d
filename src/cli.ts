#!/usr/bin/env -S node --max-semi-space-size=8 --heap-growing-percent=100 --initial-old-space-size=48
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { CommanderError } from "commander";
import { ApiError } from "./api/errors.js";
import { loadedConfigs } from "./cli/context.js";
import { type CliIo, ExitStatus, processIo, UsageError, writeLine, writeText } from "./cli/io.js";
import { commandPath, createProgram } from "./cli/program.js";
import { InterruptedError } from "./cli/with-pipeline.js";
import { ConfigError } from "./config.js";
import { scrubSecrets } from "./logger.js";
import { NewerSchemaError } from "./state/migrator.js";
import { messageOf } from "./util/errors.js";

/** Runs the CLI with `argv` (without node and script); resolves with the exit code. */
export async function runCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  const program = await createProgram(io, argv);
  let called = program;
  program.hook("preAction", (_program, action) => {
    called = action;
  });
  try {
    await program.parseAsync([...argv], { from: "user" });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    if (error instanceof ExitStatus) return error.code;
    if (error instanceof InterruptedError) {
      writeLine(io.stderr, `energy-etl: ${error.message}`);
      return 130;
    }
    const [prefix, code] =
      // a state database of a newer version is STATE_DB naming the wrong file: a usage error
      error instanceof ConfigError ||
      error instanceof UsageError ||
      error instanceof NewerSchemaError
        ? ["error", 2]
        : error instanceof ApiError
          ? [`API error (${error.code})`, 1]
          : ["failed", 1];
    // a configuration error lists its problems a line each; any other message is one line
    const write = error instanceof ConfigError ? writeText : writeLine;
    write(io.stderr, scrubSecrets(`energy-etl: ${prefix}: ${messageOf(error)}`));
    if (error instanceof UsageError && error.pointAtHelp) {
      writeLine(io.stderr, `(see ${commandPath(called)} --help)`);
    }
    const next = nextStep(error, loadedConfigs.get(program)?.api.url);
    if (next) writeLine(io.stderr, `  ${next}`);
    return code;
  }
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

/** True when this module is the script node runs (not when another script imports it). */
function invokedDirectly(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}
if (invokedDirectly()) {
  // a reader that closed its end (`energy-etl status | head -1`) wants no more: end quietly, as
  // Unix tools do on SIGPIPE; a log line on a closed stderr is dropped
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(0);
    throw error;
  });
  process.stderr.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE") throw error;
  });
  runCli(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
    // every command exits when its work is done: a socket a hung dependency keeps open (or a
    // library's timer) must not hold the process; the output is flushed by then
    setTimeout(() => process.exit(code), 1000).unref();
  });
}
