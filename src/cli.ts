#!/usr/bin/env -S node --max-semi-space-size=8 --heap-growing-percent=100 --initial-old-space-size=48
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type CliIo, processIo } from "./cli/io.js";
import { version } from "./cli/version.js";

// the entry: it loads commander, the command run and what fails only when they are needed, so
// that `--version` and `--help` start about as fast as node itself (#41)

/** Runs the CLI with `argv` (without node and script); resolves with the exit code. */
export async function runCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  // commander answers a first --version before it reads any other word: so does this, without it
  if (argv[0] === "-V" || argv[0] === "--version") {
    io.stdout.write(`${version()}\n`);
    return 0;
  }
  const [{ CommanderError }, { createProgram, NotLoaded }] = await Promise.all([
    import("commander"),
    import("./cli/program.js"),
  ]);
  for (let named = argv; ; ) {
    const program = await createProgram(io, named);
    let called = program;
    program.hook("preAction", (_program, action) => {
      called = action;
    });
    try {
      await program.parseAsync([...argv], { from: "user" });
      return 0;
    } catch (error) {
      // a command the line names in a way commandName did not see: loaded, the line runs again
      if (error instanceof NotLoaded && named === argv) {
        named = [error.command];
        continue;
      }
      if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
      const { reportFailure } = await import("./cli/failure.js");
      return reportFailure(error, io, program, called);
    }
  }
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
