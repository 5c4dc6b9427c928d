import { resolve } from "node:path";
import { PassThrough, Writable } from "node:stream";
import type { CliIo } from "../../src/cli/io.js";

/**
 * The working directory of CLI tests: it holds no .env, so a developer's own ./.env in the
 * repository never reaches a test (see its README).
 */
export const NO_ENV_DIR = resolve("test/fixtures/no-env");

/**
 * In-memory stdout/stderr for running the CLI in-process, in `cwd` (default {@link NO_ENV_DIR}):
 * the directory whose ./.env the commands read.
 */
export function bufferIo(
  env: Record<string, string | undefined> = {},
  cwd: string = NO_ENV_DIR,
): CliIo & {
  out: () => string;
  err: () => string;
} {
  let out = "";
  let err = "";
  const sink = (append: (s: string) => void) =>
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        append(chunk.toString("utf8"));
        cb();
      },
    });
  return {
    stdout: sink((s) => {
      out += s;
    }),
    stderr: sink((s) => {
      err += s;
    }),
    stdin: new PassThrough(),
    env,
    cwd,
    // in-process, the process is jest's worker: its memory holds every test file it ran (853 MB
    // once in a full run, which ended a backfill over MEMORY_BUDGET_MB); the budget's rule has
    // tests of its own (test/pipeline/memory-budget.test.ts)
    residentMb: () => 0,
    out: () => out,
    err: () => err,
  };
}
