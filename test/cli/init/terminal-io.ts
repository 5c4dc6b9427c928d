import { readFileSync } from "node:fs";
import { PassThrough, Writable } from "node:stream";
import { bufferIo } from "../../support/cli-io.js";

/**
 * A terminal: stdin is a TTY, and each prompt written to stderr (text ending in ": " or "] ") is
 * answered with the next of `answers`, as a user would type it.
 */
export function terminalIo(answers: string[], env: Record<string, string> = {}) {
  const base = bufferIo({ LOG_LEVEL: "warn", ...env });
  const stdin = Object.assign(new PassThrough(), {
    isTTY: true,
    setRawMode: (_raw: boolean) => undefined,
  });
  let err = "";
  const prompts: string[] = [];
  const stderr = new Writable({
    write(chunk: Buffer, _enc, cb) {
      const text = chunk.toString("utf8");
      err += text;
      if (/(: |\] )$/.test(text)) {
        prompts.push(text);
        const next = answers.shift();
        if (next !== undefined) setImmediate(() => stdin.write(`${next}\n`));
      }
      cb();
    },
  });
  return {
    ...base,
    stdin,
    stderr,
    err: () => err,
    prompts: () => prompts,
  };
}

/** The variables of a .env file (single quotes removed), in the file's order. */
export function readEnv(path: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const line of readFileSync(path, "utf8").split("\n")) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line);
    if (!m?.[1] || m[2] === undefined) continue;
    vars[m[1]] = m[2].replace(/^'(.*)'$/, "$1");
  }
  return vars;
}
