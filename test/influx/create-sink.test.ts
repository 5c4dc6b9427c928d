import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { loadConfig } from "../../src/config.js";
import { CoalescingSink } from "../../src/influx/coalescing-sink.js";
import { createPointSink } from "../../src/influx/create-sink.js";
import { LineProtocolFileSink } from "../../src/influx/line-protocol-file-sink.js";
import { lineBatch } from "../../src/transform/line-protocol.js";
import { createTestInfluxDb } from "../support/influx-db.js";
import { captureLogger } from "../support/log-capture.js";
import { tempDir } from "../support/temp-dir.js";

const LINES = ["m,device_id=a value=1 1700000000", 'm,device_id=a text="x y" 1700000060'];

describe("createPointSink", () => {
  const { logger } = captureLogger();

  it("writes line protocol to a file with --output, appending", async () => {
    const file = join(tempDir("lp-"), "sub", "out.lp");
    for (let i = 0; i < 2; i++) {
      const sink = await createPointSink(loadConfig(), logger, file);
      expect(sink.target).toContain(file);
      await expect(sink.write(lineBatch(LINES))).resolves.toEqual({ written: 2, rejected: [] });
      await sink.close();
    }
    expect(readFileSync(file, "utf8")).toBe(`${[...LINES, ...LINES].join("\n")}\n`);
  });

  it("writes to stdout with -", async () => {
    const out = new PassThrough();
    let text = "";
    out.on("data", (c: Buffer) => {
      text += c.toString();
    });
    const sink = new LineProtocolFileSink("-", { stdout: out });
    await sink.write(lineBatch(LINES));
    await sink.close();
    expect(text).toBe(`${LINES.join("\n")}\n`);
  });

  it("a file that cannot be written rejects every write with a clear error, never crashes", async () => {
    const dir = tempDir("lp-dir-");
    const sink = new LineProtocolFileSink(dir);
    await expect(sink.write(lineBatch(LINES))).rejects.toThrow(
      /^cannot write line-protocol file .*EISDIR/,
    );
    await expect(sink.write(lineBatch(LINES))).rejects.toThrow(/EISDIR/);
    await sink.close();
  });

  it("goes to InfluxDB when INFLUX_URL is set, after the start-up check", async () => {
    const db = await createTestInfluxDb("sink");
    const config = loadConfig({
      env: {
        INFLUX_URL: db.url,
        INFLUX_TOKEN: db.token,
        INFLUX_ORG: db.org,
        INFLUX_BUCKET: db.bucket,
      },
    });
    const sink = await createPointSink(config, logger);
    // the writer, behind the coalescing of short writes
    expect(sink).toBeInstanceOf(CoalescingSink);
    expect(sink.target).toBe(`InfluxDB ${db.url} bucket ${db.bucket}`);
    await sink.write(lineBatch(LINES));
    await sink.close();
    const [series] = await db.series("SELECT text, value FROM m");
    expect(series?.values).toEqual([
      [1700000000, null, 1],
      [1700000060, "x y", null],
    ]);
  });

  it("stops before writing when the check fails, with a one-line reason", async () => {
    const db = await createTestInfluxDb("sink");
    const config = loadConfig({
      env: {
        INFLUX_URL: db.url,
        INFLUX_TOKEN: "nope-token",
        INFLUX_ORG: db.org,
        INFLUX_BUCKET: db.bucket,
      },
    });
    await expect(createPointSink(config, logger)).rejects.toThrow(
      /^InfluxDB refused the token \(HTTP 401\)/,
    );
  });
});
