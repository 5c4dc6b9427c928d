import { once } from "node:events";
import { createWriteStream, mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Writable } from "node:stream";
import type { PointSink, WriteOutcome } from "./point-sink.js";
import { InfluxWriteError } from "./write-errors.js";

/**
 * Writes line protocol to a file (appending) or to stdout (`-`), loadable with
 * `influx write --precision s --file FILE`. Used when INFLUX_URL is not set, with `--output`, by
 * the demo and by dry runs.
 */
export class LineProtocolFileSink implements PointSink {
  readonly target: string;
  private readonly stream: Writable;
  private readonly ownsStream: boolean;
  /** The stream's failure (disk full, a closed pipe…): every later write rejects with it. */
  private failure: Error | undefined;

  constructor(path: string, stdout: Writable = process.stdout) {
    if (path === "-") {
      this.stream = stdout;
      this.ownsStream = false;
      this.target = "stdout (line protocol)";
    } else {
      const file = resolve(path);
      mkdirSync(dirname(file), { recursive: true });
      this.stream = createWriteStream(file, { flags: "a" });
      this.ownsStream = true;
      this.target = `line-protocol file ${file}`;
    }
    this.stream.on("error", (error: Error) => {
      this.failure ??= error;
    });
  }

  /**
   * Resolves once the lines are handed to the operating system (they survive a killed process);
   * a file takes every line, so none is ever rejected.
   */
  async write(lines: readonly string[]): Promise<WriteOutcome> {
    if (this.failure) throw this.writeError(this.failure);
    if (lines.length === 0) return { written: 0, rejected: [] };
    await new Promise<void>((resolve, reject) => {
      this.stream.write(`${lines.join("\n")}\n`, (error) =>
        error ? reject(this.writeError(error)) : resolve(),
      );
    });
    return { written: lines.length, rejected: [] };
  }

  async flush(): Promise<void> {
    if (this.stream.writableNeedDrain) await once(this.stream, "drain");
  }

  private writeError(error: Error): InfluxWriteError {
    return new InfluxWriteError(
      `cannot write ${this.target}: ${error.message}`,
      "unavailable",
      undefined,
      true,
    );
  }

  async close(): Promise<void> {
    if (this.failure) return;
    await this.flush();
    if (!this.ownsStream) return;
    this.stream.end();
    await once(this.stream, "finish");
  }
}
