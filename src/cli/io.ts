import type { Command } from "commander";
import type { z } from "zod";
import { escapeControls } from "../util/control-chars.js";

/** Where a command reads and writes; the real process in production, buffers in tests. */
export interface CliIo {
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => void };
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The working directory: where `./.env` is read (and `init` writes it). */
  readonly cwd: string;
  /**
   * The resident memory MEMORY_BUDGET_MB judges, in MB (default: this process's). A run inside
   * another program (a test runner) gives its own: that program's memory is not the command's.
   */
  readonly residentMb?: () => number;
}

/** The process's own streams, environment and working directory. */
export const processIo: CliIo = {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  get cwd() {
    return process.cwd();
  },
};

/** How every failure the CLI prints starts: its own, commander's usage errors, configuration's. */
export const ERROR_PREFIX = "energy-etl: error: ";

/** Writes a line, every control character escaped: what data holds cannot break or colour it. */
export function writeLine(stream: NodeJS.WritableStream, line = ""): void {
  stream.write(`${escapeControls(line)}\n`);
}

/** Writes text whose line breaks and tabs are its own (a table, JSON), other controls escaped. */
export function writeText(stream: NodeJS.WritableStream, text: string): void {
  const lines = text.split("\n").map((line) => line.split("\t").map(escapeControls).join("\t"));
  stream.write(`${lines.join("\n")}\n`);
}

/** Writes `value` as indented JSON (what `--json` prints). */
export function writeJson(stream: NodeJS.WritableStream, value: unknown): void {
  writeText(stream, JSON.stringify(value, null, 2));
}

/** A command-line usage error (exit code 2), e.g. a missing or malformed argument. */
export class UsageError extends Error {
  /** About how the command was called: runCli adds where its help is, as for commander's own. */
  readonly pointAtHelp: boolean;

  constructor(message: string, options: { readonly pointAtHelp?: boolean } = {}) {
    super(message);
    this.name = "UsageError";
    this.pointAtHelp = options.pointAtHelp ?? false;
  }
}

/** `raw` parsed with `schema`, else a usage error naming the first problem. */
export function parseOptions<S extends z.ZodType>(
  schema: S,
  raw: unknown,
  pointAtHelp = true,
): z.infer<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const message = parsed.error.issues[0]?.message ?? "invalid options";
  throw new UsageError(message, { pointAtHelp });
}

/** The command did its work and reports a result by its exit code (e.g. audit: holes remain). */
export class ExitStatus extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = "ExitStatus";
  }
}

/** A commander action that gets its options parsed with `schema` (see {@link parseOptions}). */
export function parsedAction<S extends z.ZodType>(
  schema: S,
  act: (opts: z.infer<S>, command: Command) => Promise<void>,
): (rawOpts: unknown, command: Command) => Promise<void> {
  return async (rawOpts, command) => act(parseOptions(schema, rawOpts), command);
}

/** The examples after a command's options in its help, one command line each. */
export function examples(...lines: readonly string[]): string {
  return `\nExamples:\n${lines.map((line) => `  ${line}`).join("\n")}`;
}
