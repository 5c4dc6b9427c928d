import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { killCliChildren, spawnCli } from "../support/cli-child.js";
import { createTestInfluxDb } from "../support/influx-db.js";
import { tempDir } from "../support/temp-dir.js";

/** A bound on one demo (it takes seconds); reaching it fails the test. */
const DEMO_DEADLINE_MS = 45_000;

/** `energy-etl demo` in `cwd` with `env` added; resolves with its output once it exited 0. */
async function run(env: Record<string, string>, cwd: string) {
  const demo = spawnCli(["demo"], env, { cwd });
  const exit = await demo.wait(DEMO_DEADLINE_MS, "energy-etl demo");
  expect({ ...exit, stderr: exit.code === 0 ? "" : demo.stderr() }).toEqual({
    code: 0,
    signal: null,
    stderr: "",
  });
  return { stdout: demo.stdout(), stderr: demo.stderr() };
}

afterEach(killCliChildren);

describe("energy-etl demo (npm run demo)", () => {
  it("without INFLUX_URL: fills line protocol under ./data/demo/ and prints a summary", async () => {
    const cwd = tempDir("demo-");
    const { stdout, stderr } = await run({ INFLUX_URL: "", LOG_LEVEL: "info" }, cwd);
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

  it("with STATE_DB elsewhere (the image's /data/state.db): state and files go to demo/ next to it, nothing to the working directory", async () => {
    const cwd = tempDir("demo-cwd-");
    const data = tempDir("demo-data-");
    const { stdout } = await run(
      { INFLUX_URL: "", LOG_LEVEL: "warn", STATE_DB: join(data, "state.db") },
      cwd,
    );
    expect(stdout).toContain(`data      line-protocol file ${join(data, "demo", "energy.lp")}`);
    expect(stdout).toContain(
      `status    energy-etl status --state-db ${join(data, "demo", "state.db")}`,
    );
    expect(readdirSync(cwd)).toEqual([]);
    expect(readdirSync(join(data, "demo")).sort()).toEqual(
      expect.arrayContaining(["energy.lp", "state.db"]),
    );
  });

  it("with INFLUX_URL: writes into InfluxDB", async () => {
    const db = await createTestInfluxDb("demo");
    const cwd = tempDir("demo-");
    const env = {
      INFLUX_URL: db.url,
      INFLUX_TOKEN: db.token,
      INFLUX_ORG: db.org,
      INFLUX_BUCKET: db.bucket,
    };
    const { stdout } = await run({ ...env, LOG_LEVEL: "warn" }, cwd);
    expect(stdout).toMatch(new RegExp(`data {6}InfluxDB ${db.url} bucket ${db.bucket}`));
    const [series] = await db.series(
      'SELECT count("value") FROM "total_load_power" GROUP BY "device_id"',
    );
    expect(series?.values[0]?.[1]).toBeGreaterThanOrEqual(2 * 1440);
  });
});
