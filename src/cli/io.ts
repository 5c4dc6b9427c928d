/** Where a command reads and writes; the real process in production, buffers in tests. */
export interface CliIo {
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => void };
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The working directory: where `./.env` is read (and `init` writes it). */
  readonly cwd: string;
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

/** Writes one line to a stream. */
export function writeLine(stream: NodeJS.WritableStream, line = ""): void {
  stream.write(`${line}\n`);
}

/** A command-line usage error (exit code 2), e.g. a missing or malformed argument. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
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
