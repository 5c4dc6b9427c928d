import { closeSync, openSync, statSync } from "node:fs";
import { type FileHandle, open, rename, rm } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import type { Writable } from "node:stream";
import { type LineBatch, linesOf } from "../transform/line-protocol.js";
import { ensureDirectory } from "../util/ensure-dir.js";
import { errnoOf, messageOf } from "../util/errors.js";
import type { PointSink, WriteOutcome } from "./point-sink.js";
import { abortedError, InfluxWriteError } from "./write-errors.js";

/** How a {@link LineProtocolFileSink} rotates its file (never stdout). */
export interface LineProtocolFileOptions {
  /**
   * Rotate (FILE -> FILE.1 …) before the file passes this size; lines never split (default never).
   */
  readonly maxBytes?: number;
  /** Rotated copies kept, FILE.1 the newest; 0 keeps none. Default 3. */
  readonly keep?: number;
  /** Where `-` writes (default process.stdout). */
  readonly stdout?: Writable;
}

const DEFAULT_ROTATED_FILES_KEPT = 3;

/**
 * Writes line protocol to a file (appending, in the order of the calls) or to stdout (`-`),
 * loadable with `influx write --precision s --file FILE`: OUTPUT_FILE, `--output`, the demo.
 */
export class LineProtocolFileSink implements PointSink {
  readonly target: string;
  /** The file's absolute path; undefined for stdout. */
  private readonly file: string | undefined;
  private readonly stdout: Writable;
  private readonly maxBytes: number;
  /** The file is a regular one (a device such as /dev/null, or a pipe, is never rotated). */
  private regular = true;
  private readonly keep: number;
  private handle: FileHandle | undefined;
  /** Bytes in the open file (its size when opened plus what this sink appended). */
  private size = 0;
  private queue: Promise<void> = Promise.resolve();
  /** The first failure (disk full, a closed pipe…): every later write rejects with it. */
  private failure: InfluxWriteError | undefined;

  constructor(path: string, options: LineProtocolFileOptions = {}) {
    this.stdout = options.stdout ?? process.stdout;
    this.maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
    this.keep = Math.max(0, Math.floor(options.keep ?? DEFAULT_ROTATED_FILES_KEPT));
    if (path === "-") {
      this.file = undefined;
      this.target = "stdout (line protocol)";
      this.stdout.on("error", (error: Error) => void this.fail(error));
    } else {
      this.file = resolve(path);
      ensureDirectory(dirname(this.file));
      probeWritable(this.file);
      this.target = `line-protocol file ${this.file}`;
    }
  }

  /** Resolves once the lines are handed to the operating system; none is ever rejected. */
  async write(batch: LineBatch): Promise<WriteOutcome> {
    if (this.failure) throw this.failure;
    if (batch.lines === 0) return { written: 0, rejected: [] };
    // writes (and rotations) run one after the other
    const run = this.queue.then(() => {
      if (this.failure) throw this.failure;
      return this.file === undefined ? this.toStdout(batch) : this.append(batch);
    });
    this.queue = run.catch(() => undefined);
    await run;
    return { written: batch.lines, rejected: [] };
  }

  /** Resolves once every write started before it has settled. */
  async flush(): Promise<void> {
    await this.queue;
  }

  /** Later writes reject (`aborted: <reason>`, fatal); the ones queued finish (local, quick). */
  abort(reason = "the line-protocol sink was aborted"): void {
    this.failure ??= abortedError(reason);
  }

  async close(): Promise<void> {
    await this.flush();
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close().catch(() => undefined);
  }

  private toStdout(batch: LineBatch): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.stdout.write(Buffer.concat([batch.bytes, NEWLINE]), (error) =>
        error ? reject(this.fail(error)) : resolve(),
      );
    });
  }

  /** Appends whole lines, rotating first whenever the next line would take the file past maxBytes. */
  private async append(batch: LineBatch): Promise<void> {
    try {
      let handle = await this.open();
      const whole = Buffer.concat([batch.bytes, NEWLINE]);
      if (!this.regular || this.size + whole.length <= this.maxBytes) {
        await this.appendBytes(handle, whole);
        return;
      }
      // rotation falls inside the batch: line by line
      const lines = linesOf(batch);
      let chunk: string[] = [];
      let chunkBytes = 0;
      for (const line of lines) {
        const bytes = Buffer.byteLength(line, "utf8") + 1;
        if (this.size + chunkBytes + bytes > this.maxBytes && this.size + chunkBytes > 0) {
          await this.appendText(handle, chunk);
          chunk = [];
          chunkBytes = 0;
          await this.rotate();
          handle = await this.open();
        }
        chunk.push(line);
        chunkBytes += bytes;
      }
      await this.appendText(handle, chunk);
    } catch (error) {
      throw this.fail(error);
    }
  }

  private async appendText(handle: FileHandle, lines: string[]): Promise<void> {
    if (lines.length === 0) return;
    await this.appendBytes(handle, Buffer.from(`${lines.join("\n")}\n`, "utf8"));
  }

  private async appendBytes(handle: FileHandle, buffer: Buffer): Promise<void> {
    for (let offset = 0; offset < buffer.length; ) {
      const { bytesWritten } = await handle.write(buffer, offset);
      offset += bytesWritten;
    }
    this.size += buffer.length;
  }

  /** The open file; opening it (appending) takes its size, so a restart resumes the count. */
  private async open(): Promise<FileHandle> {
    if (this.handle) return this.handle;
    if (this.file === undefined) throw new Error("stdout has no file");
    const handle = await open(this.file, "a");
    try {
      const stat = await handle.stat();
      // only a regular file is rotated: renaming /dev/null or a pipe would break the system
      this.regular = stat.isFile();
      this.size = stat.size;
    } catch (error) {
      await handle.close().catch(() => undefined);
      throw error;
    }
    this.handle = handle;
    return handle;
  }

  /** Closes the file and shifts FILE -> FILE.1 -> … -> FILE.keep (the oldest dropped). */
  private async rotate(): Promise<void> {
    const file = this.file;
    if (file === undefined) return;
    const handle = this.handle;
    this.handle = undefined;
    this.size = 0;
    await handle?.close();
    if (this.keep === 0) {
      await rm(file, { force: true });
      return;
    }
    for (let i = this.keep - 1; i >= 1; i--) {
      await rename(`${file}.${i}`, `${file}.${i + 1}`).catch((error: unknown) => {
        if (errnoOf(error) !== "ENOENT") throw error;
      });
    }
    await rename(file, `${file}.1`);
  }

  /** The sink's first failure (disk full, a closed pipe…): every later write fails with it. */
  private fail(error: unknown): InfluxWriteError {
    if (error instanceof InfluxWriteError) return error;
    const message = `cannot write ${this.target}: ${messageOf(error)}`;
    this.failure ??= new InfluxWriteError(message, "unavailable", undefined, true);
    return this.failure;
  }
}

const NEWLINE = Buffer.from("\n");

/**
 * Opens `file` for appending once (creating it) and closes it: a directory or a path that cannot
 * be written fails now, before anything is fetched. A FIFO or a device is left alone (opening a
 * FIFO would wait for its reader); it is opened at the first write as before.
 */
function probeWritable(file: string): void {
  let kind: ReturnType<typeof statSync> | undefined;
  try {
    kind = statSync(file);
  } catch (error) {
    if (errnoOf(error) !== "ENOENT") throw error;
  }
  if (kind?.isDirectory()) {
    throw Object.assign(new Error("is a directory: name a file (in it, or elsewhere)"), {
      code: "EISDIR",
    });
  }
  if (kind !== undefined && !kind.isFile()) return;
  closeSync(openSync(file, "a"));
}
