import { execFileSync } from "node:child_process";
import {
  createReadStream,
  existsSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { loadConfig } from "../../src/config.js";
import { pointSinkOpener } from "../../src/influx/create-sink.js";
import { LineProtocolFileSink } from "../../src/influx/line-protocol-file-sink.js";
import { InfluxWriteError } from "../../src/influx/write-errors.js";
import { lineBatch } from "../../src/transform/line-protocol.js";
import { captureLogger } from "../support/log-capture.js";
import { tempDir } from "../support/temp-dir.js";

const T0 = 1_700_000_000;
const LINE_RE = /^r,device_id=d value=\d+ \d+$/;
/** `count` lines of 33-34 bytes each (newline included), numbered from `from`. */
const lines = (count: number, from = 0) =>
  Array.from({ length: count }, (_, i) => `r,device_id=d value=${from + i} ${T0 + from + i}`);

function freshFile(): string {
  return join(tempDir("lp-rotate-"), "points.lp");
}

/** The files of the rotation, oldest first: FILE.n … FILE.1, FILE. */
function rotation(file: string): string[] {
  const dir = join(file, "..");
  const numbered = readdirSync(dir)
    .map((name) => /^points\.lp\.(\d+)$/.exec(name)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number)
    .sort((a, b) => b - a)
    .map((n) => `${file}.${n}`);
  return existsSync(file) ? [...numbered, file] : numbered;
}

/** The lines of a file; fails unless it ends with a newline (no line cut in two). */
function linesOf(path: string): string[] {
  const text = readFileSync(path, "utf8");
  if (text === "") return [];
  expect(text.endsWith("\n")).toBe(true);
  return text.slice(0, -1).split("\n");
}

/** Writes `all` in writes of 1..7 lines, all started at once (the sink keeps their order). */
async function writeInPieces(sink: LineProtocolFileSink, all: readonly string[]): Promise<void> {
  const writes: Promise<unknown>[] = [];
  for (let i = 0, n = 1; i < all.length; i += n, n = (n % 7) + 1) {
    writes.push(sink.write(lineBatch(all.slice(i, i + n))));
  }
  await Promise.all(writes);
  await sink.close();
}

describe("LineProtocolFileSink rotation by size", () => {
  it("rotates before a write would pass maxBytes; whole lines only; every line kept, in order", async () => {
    const file = freshFile();
    const sink = new LineProtocolFileSink(file, { maxBytes: 200, keep: 100 });
    const all = lines(60);
    await writeInPieces(sink, all);

    const files = rotation(file);
    expect(files.length).toBeGreaterThan(5);
    expect(files.at(-1)).toBe(file);
    for (const path of files) {
      expect(statSync(path).size).toBeLessThanOrEqual(200);
      // a file is only rotated when the next line would not have fit
      if (path !== file) expect(statSync(path).size).toBeGreaterThan(200 - 37);
      for (const line of linesOf(path)) expect(line).toMatch(LINE_RE);
    }
    expect(files.flatMap(linesOf)).toEqual(all);
  });

  it("keeps `keep` rotated copies (FILE.1 newest), dropping the oldest", async () => {
    const file = freshFile();
    const sink = new LineProtocolFileSink(file, { maxBytes: 200, keep: 2 });
    const all = lines(60);
    await writeInPieces(sink, all);

    expect(rotation(file)).toEqual([`${file}.2`, `${file}.1`, file]);
    const kept = rotation(file).flatMap(linesOf);
    expect(kept.length).toBeGreaterThan(10);
    expect(kept).toEqual(all.slice(all.length - kept.length));
  });

  it("keep 0: no rotated copies, the file starts over", async () => {
    const file = freshFile();
    const sink = new LineProtocolFileSink(file, { maxBytes: 200, keep: 0 });
    const all = lines(60);
    await writeInPieces(sink, all);

    expect(rotation(file)).toEqual([file]);
    const kept = linesOf(file);
    expect(kept.length).toBeGreaterThan(0);
    expect(statSync(file).size).toBeLessThanOrEqual(200);
    expect(kept).toEqual(all.slice(all.length - kept.length));
  });

  it("resumes the size of an existing file: a restart rotates when the file is already near full", async () => {
    const file = freshFile();
    const before = lines(6);
    writeFileSync(file, `${before.join("\n")}\n`); // 198 bytes: one more line would not fit
    const sink = new LineProtocolFileSink(file, { maxBytes: 200, keep: 3 });
    await sink.write(lineBatch(lines(1, 6)));
    await sink.close();
    expect(rotation(file)).toEqual([`${file}.1`, file]);
    expect(linesOf(`${file}.1`)).toEqual(before);
    expect(linesOf(file)).toEqual(lines(1, 6));
  });

  it("spreads one large write across files at line boundaries; a line longer than maxBytes gets a file of its own", async () => {
    const file = freshFile();
    const sink = new LineProtocolFileSink(file, { maxBytes: 200, keep: 100 });
    const huge = `r,device_id=d text="${"x".repeat(300)}" ${T0}`;
    const all = [...lines(8), huge, ...lines(8, 8)];
    await expect(sink.write(lineBatch(all))).resolves.toEqual({
      written: all.length,
      rejected: [],
    });
    await sink.close();
    const files = rotation(file);
    expect(files.flatMap(linesOf)).toEqual(all);
    expect(files.map(linesOf)).toContainEqual([huge]);
    for (const path of files) {
      if (!linesOf(path).includes(huge)) expect(statSync(path).size).toBeLessThanOrEqual(200);
    }
  });

  it("stdout (-) never rotates", async () => {
    const out = new PassThrough();
    let text = "";
    out.on("data", (c: Buffer) => {
      text += c.toString();
    });
    const sink = new LineProtocolFileSink("-", { stdout: out, maxBytes: 100, keep: 1 });
    const all = lines(20);
    await writeInPieces(sink, all);
    expect(text).toBe(`${all.join("\n")}\n`);
  });

  it("abort(): later writes reject (fatal, 'aborted: <reason>'); close() resolves", async () => {
    const file = freshFile();
    const sink = new LineProtocolFileSink(file, { maxBytes: 200 });
    await sink.write(lineBatch(lines(2)));
    sink.abort("shutdown");
    sink.abort("again");
    const error = await sink.write(lineBatch(lines(1))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InfluxWriteError);
    expect(error).toMatchObject({ code: "unavailable", fatal: true, message: "aborted: shutdown" });
    await sink.close();
    expect(linesOf(file)).toEqual(lines(2));
  });
});

describe("pointSinkOpener with OUTPUT_FILE", () => {
  const { logger } = captureLogger();

  it("OUTPUT_FILE is rotated past OUTPUT_FILE_MAX_BYTES, OUTPUT_FILE_KEEP copies kept", async () => {
    const file = freshFile();
    const config = loadConfig({
      env: { OUTPUT_FILE: file, OUTPUT_FILE_MAX_BYTES: "1024", OUTPUT_FILE_KEEP: "2" },
    });
    const sink = await pointSinkOpener(config, logger)();
    expect(sink.target).toBe(`line-protocol file ${file}`);
    const all = lines(200);
    for (let i = 0; i < all.length; i += 10) await sink.write(lineBatch(all.slice(i, i + 10)));
    await sink.close();
    expect(rotation(file)).toEqual([`${file}.2`, `${file}.1`, file]);
    for (const path of rotation(file)) expect(statSync(path).size).toBeLessThanOrEqual(1024);
    const kept = rotation(file).flatMap(linesOf);
    expect(kept).toEqual(all.slice(all.length - kept.length));
  });

  it("--output wins over OUTPUT_FILE and is never rotated", async () => {
    const file = freshFile();
    const output = join(file, "..", "explicit.lp");
    const config = loadConfig({
      env: { OUTPUT_FILE: file, OUTPUT_FILE_MAX_BYTES: "1024", OUTPUT_FILE_KEEP: "2" },
    });
    const sink = await pointSinkOpener(config, logger, output)();
    const all = lines(200);
    for (let i = 0; i < all.length; i += 10) await sink.write(lineBatch(all.slice(i, i + 10)));
    await sink.close();
    expect(existsSync(file)).toBe(false);
    expect(existsSync(`${output}.1`)).toBe(false);
    expect(linesOf(output)).toEqual(all);
  });
});

describe("what is not a regular file", () => {
  it("is never rotated: a pipe (as /dev/null would be) is written to and left where it is", async () => {
    const dir = tempDir("lp-fifo-");
    const fifo = join(dir, "points.fifo");
    execFileSync("mkfifo", [fifo]);
    // a reader that drains the pipe, as a consumer of OUTPUT_FILE would
    const reader = createReadStream(fifo);
    let received = "";
    reader.on("data", (chunk) => {
      received += chunk.toString();
    });
    const sink = new LineProtocolFileSink(fifo, { maxBytes: 10, keep: 2 });
    const lines = ["m value=1 1", "m value=2 2", "m value=3 3"];
    for (const line of lines) await sink.write(lineBatch([line]));
    await sink.close();
    await new Promise<void>((resolve) => reader.on("close", () => resolve()));
    expect(received).toBe(`${lines.join("\n")}\n`);
    expect(readdirSync(dir)).toEqual(["points.fifo"]);
    expect(statSync(fifo).isFIFO()).toBe(true);
  });
});
