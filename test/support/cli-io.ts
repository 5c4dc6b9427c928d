import { PassThrough, Writable } from "node:stream";
import type { CliIo } from "../../src/cli/io.js";

/** In-memory stdout/stderr for running the CLI in-process. */
export function bufferIo(env: Record<string, string | undefined> = {}): CliIo & {
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
    out: () => out,
    err: () => err,
  };
}
