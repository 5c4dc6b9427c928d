import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { loadConfig } from "../../src/config.js";
import { CoalescingSink } from "../../src/influx/coalescing-sink.js";
import { openRollupSink, pointSinkOpener } from "../../src/influx/create-sink.js";
import { LineProtocolFileSink } from "../../src/influx/line-protocol-file-sink.js";
import { InfluxWriteError } from "../../src/influx/write-errors.js";
import { lineBatch } from "../../src/transform/line-protocol.js";
import { createTestInfluxDb } from "../support/influx-db.js";
import { influxql } from "../support/influxd.js";
import { captureLogger } from "../support/log-capture.js";
import { tempDir } from "../support/temp-dir.js";

const LINES = ["m,device_id=a value=1 1700000000", 'm,device_id=a text="x y" 1700000060'];

describe("pointSinkOpener", () => {
  const { logger } = captureLogger();

  it("writes line protocol to a file with --output, appending", async () => {
    const file = join(tempDir("lp-"), "sub", "out.lp");
    for (let i = 0; i < 2; i++) {
      const sink = await pointSinkOpener(loadConfig(), logger, file)();
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

  it("a directory is refused when the sink is made, before anything is fetched", () => {
    const dir = tempDir("lp-dir-");
    expect(() => new LineProtocolFileSink(dir)).toThrow(/^is a directory: name a file/);
  });

  it("a file that cannot be written rejects every write with a clear error, never crashes", async () => {
    const dir = tempDir("lp-dir-");
    const file = join(dir, "points.lp");
    const sink = new LineProtocolFileSink(file);
    // the file becomes a directory after the sink was made
    rmSync(file, { force: true });
    mkdirSync(file);
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
    const sink = await pointSinkOpener(config, logger)();
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
    await expect(pointSinkOpener(config, logger)()).rejects.toThrow(
      /^InfluxDB refused the token \(HTTP 401\)/,
    );
  });
});

describe("openRollupSink", () => {
  const { logger } = captureLogger();

  it("opens none unless ROLLUP_BUCKET is set, the rollups on and the points go to InfluxDB", async () => {
    const base = { INFLUX_URL: "http://127.0.0.1:1", INFLUX_BUCKET: "energy" };
    for (const env of [
      base,
      { ...base, ROLLUP_BUCKET: "energy/rollups", ROLLUPS: "false" },
      { ...base, ROLLUP_BUCKET: "energy/rollups", INFLUX_URL: "" },
    ]) {
      expect(await openRollupSink(loadConfig({ env }), logger)).toBeUndefined();
    }
  });

  it("writes into ROLLUP_BUCKET's retention policy; once the policy is gone a write fails for good, naming ROLLUP_BUCKET", async () => {
    const db = await createTestInfluxDb("rollup_sink");
    await influxql(
      db.rawUrl,
      db.bucket,
      `CREATE RETENTION POLICY "rollups" ON "${db.bucket}" DURATION INF REPLICATION 1 SHARD DURATION 52w`,
    );
    const config = loadConfig({
      env: {
        INFLUX_URL: db.url,
        INFLUX_TOKEN: db.token,
        INFLUX_ORG: db.org,
        INFLUX_BUCKET: db.bucket,
        ROLLUP_BUCKET: `${db.bucket}/rollups`,
        INFLUX_RETRIES: "0",
      },
    });
    const sink = await openRollupSink(config, logger);
    if (sink === undefined) throw new Error("no rollup sink");
    expect(sink).toBeInstanceOf(CoalescingSink);
    expect(sink.target).toBe(`InfluxDB ${db.url} bucket ${db.bucket}/rollups`);
    const line = "rollup_day,tz=UTC increase=1.5 1700000000";
    await expect(sink.write(lineBatch([line]), { now: true })).resolves.toEqual({
      written: 1,
      rejected: [],
    });
    expect(await db.series('SELECT * FROM "rollups"."rollup_day"')).toHaveLength(1);
    expect(await db.series('SELECT * FROM "autogen"."rollup_day"')).toEqual([]);

    await influxql(db.rawUrl, db.bucket, `DROP RETENTION POLICY "rollups" ON "${db.bucket}"`);
    const refused = sink.write(lineBatch([line]), { now: true });
    await expect(refused).rejects.toThrow(
      `InfluxDB has no bucket ${db.bucket}/rollups (HTTP 500: retention policy not found: ` +
        "rollups): create it or fix ROLLUP_BUCKET and INFLUX_ORG",
    );
    await expect(refused).rejects.toMatchObject({ code: "bucket_not_found", fatal: true });
    await expect(refused).rejects.toBeInstanceOf(InfluxWriteError);
    await sink.close();
  });
});
