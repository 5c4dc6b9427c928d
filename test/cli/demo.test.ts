import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { createTestInfluxDb } from "../support/influx-db.js";

const run = promisify(execFile);
const CLI = resolve("dist/cli.js");

describe("energy-etl demo (npm run demo)", () => {
  it("without INFLUX_URL: fills line protocol under ./data/demo/ and prints a summary", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "demo-"));
    const { stdout, stderr } = await run(process.execPath, [CLI, "demo"], {
      cwd,
      env: { ...process.env, INFLUX_URL: "", LOG_LEVEL: "info" },
    });
    expect(stdout).toMatch(/demo finished:\n {2}devices {3}4\n {2}values {4}\d+/);
    expect(stdout).toMatch(/points {4}[1-9]\d+/);
    expect(stdout).toMatch(/data {6}line-protocol file .*data\/demo\/energy\.lp/);
    expect(stderr).toMatch(/"msg":"backfill progress"/);
    const lines = readFileSync(join(cwd, "data/demo/energy.lp"), "utf8").trim().split("\n");
    expect(lines.length).toBeGreaterThan(100_000);
    expect(lines.some((l) => l.startsWith("total_solar_power,device_id=hybrid-site-01,"))).toBe(
      true,
    );
    expect(lines.some((l) => l.startsWith("etl_run,kind=sync,status=ok "))).toBe(true);
    expect(existsSync(join(cwd, "data/demo/state.db"))).toBe(true);
  });

  it("with INFLUX_URL: writes into InfluxDB", async () => {
    const db = await createTestInfluxDb("demo");
    const cwd = mkdtempSync(join(tmpdir(), "demo-"));
    const env = {
      INFLUX_URL: db.url,
      INFLUX_TOKEN: db.token,
      INFLUX_ORG: db.org,
      INFLUX_BUCKET: db.bucket,
    };
    const { stdout } = await run(process.execPath, [CLI, "demo"], {
      cwd,
      env: { ...process.env, ...env, LOG_LEVEL: "warn" },
    });
    expect(stdout).toMatch(new RegExp(`data {6}InfluxDB ${db.url} bucket ${db.bucket}`));
    const [series] = await db.series(
      'SELECT count("value") FROM "total_load_power" GROUP BY "device_id"',
    );
    expect(series?.values[0]?.[1]).toBeGreaterThanOrEqual(2 * 1440);
  });
});
