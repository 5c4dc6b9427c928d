import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import { join, resolve } from "node:path";
import { dropTestDb } from "../support/bad-data.js";
import { builtCli, killCliChildren, spawnCli, trackCli } from "../support/cli-child.js";
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
  it("without INFLUX_URL: fills line protocol under ./data/demo/, prints a summary whose status command works and says how to load the file", async () => {
    // the README's set-up: a clone where `npm run demo` built dist/ and ran node dist/cli.js demo
    const cwd = tempDir("demo-");
    symlinkSync(resolve(builtCli(), ".."), join(cwd, "dist"), "dir");
    const demo = trackCli(
      spawn(process.execPath, [join("dist", "cli.js"), "demo"], {
        cwd,
        env: { ...process.env, INFLUX_URL: "", LOG_LEVEL: "info" },
        stdio: ["ignore", "pipe", "pipe"],
      }),
      ["demo"],
    );
    const exit = await demo.wait(DEMO_DEADLINE_MS, "node dist/cli.js demo");
    const [stdout, stderr] = [demo.stdout(), demo.stderr()];
    expect({ code: exit.code, stderr: exit.code === 0 ? "" : stderr }).toEqual({
      code: 0,
      stderr: "",
    });
    expect(stdout).toMatch(/demo finished:\n {2}devices {3}4\n {2}values {4}\d+/);
    expect(stdout).toMatch(/points {4}[1-9]\d+/);
    expect(stdout).toMatch(/data {6}line-protocol file .*data\/demo\/energy\.lp/);
    expect(stderr).toMatch(/"msg":"backfill progress"/);
    const file = join(cwd, "data/demo/energy.lp");
    const lines = readFileSync(file, "utf8").trim().split("\n");
    expect(lines.length).toBeGreaterThan(100_000);
    expect(lines.some((l) => l.startsWith("total_solar_power,device_id=hybrid-site-01,"))).toBe(
      true,
    );
    expect(lines.some((l) => l.startsWith("etl_run,kind=sync,status=ok "))).toBe(true);
    expect(existsSync(join(cwd, "data/demo/state.db"))).toBe(true);

    // its status line is a command that works where the demo ran (energy-etl is not on the PATH)
    const status = /^ {2}status {4}(.+)$/m.exec(stdout)?.[1] ?? "";
    expect(status).toBe(`node dist/cli.js status --state-db ${join(cwd, "data/demo/state.db")}`);
    const ran = spawnSync("sh", ["-c", status], { cwd, encoding: "utf8", env: process.env });
    expect({ code: ran.status, stderr: ran.stderr }).toEqual({ code: 0, stderr: "" });
    expect(ran.stdout).toContain("hybrid-site-01");

    // how to load the file: influx write with the file's precision, seconds
    expect(stdout).toContain(
      `  load it   influx write --org energy --bucket energy --precision s --file ${file}`,
    );
    const nowS = Date.now() / 1000;
    const stamps = lines.map((l) => Number(l.slice(l.lastIndexOf(" ") + 1)));
    expect(stamps.filter((t) => !(t > nowS - 3 * 86_400 && t <= nowS + 60))).toEqual([]);
    // what `influx write --precision s` sends (POST /api/v2/write?precision=s), on influxd: the
    // points land in the demo's two days, not in 1970
    const db = await createTestInfluxDb("demo_load");
    const body = lines.filter((l) => l.startsWith("total_solar_power,")).join("\n");
    const written = await fetch(`${db.url}/api/v2/write?bucket=${db.bucket}&precision=s`, {
      method: "POST",
      headers: { Authorization: `Token ${db.token}` },
      body,
    });
    expect(written.status).toBe(204);
    // all of them (a point the sync fetched again is one point), none outside the demo's days
    const points = new Set(
      body.split("\n").map((l) => {
        const [series, , at] = l.split(/(?<!\\) /);
        return `${series} ${at}`;
      }),
    );
    const [stored] = await db.series(
      'SELECT count("value") FROM "total_solar_power" WHERE time > now() - 3d',
    );
    expect(stored?.values[0]?.[1]).toBe(points.size);
    await dropTestDb(db);
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
      `status    node ${builtCli()} status --state-db ${join(data, "demo", "state.db")}`,
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
