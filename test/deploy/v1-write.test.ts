/**
 * Issue 42, as an operator runs it: Debian's `apt-get install influxdb` (1.6.7, no
 * /api/v2/write, no auth, no token) and the built CLI pointed at it DIRECTLY, no proxy anywhere.
 * Each step is one command, one child process, as the operator types it, in one folder: `init`
 * (existing InfluxDB) writes its `.env`, and every later step reads only that.
 */

import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { Simulator } from "../../src/simulator/server.js";
import { expectFigures, KEYS, oracle, reportSchema } from "../report/report-oracle.js";
import { readJobs } from "../support/backfill-jobs.js";
import { killCliChildren, spawnCli } from "../support/cli-child.js";
import {
  expectedPoints,
  rawPoints,
  simulatorRecords,
  sortPoints,
} from "../support/expected-points.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { influxql } from "../support/influxd.js";
import { startTestSimulator } from "../support/simulator.js";
import { tempDir } from "../support/temp-dir.js";

/** One command of the walk-through that takes longer fails the test. */
const STEP_DEADLINE_MS = 120_000;

describe("InfluxDB 1.6.7 as Debian installs it, written directly by the built CLI", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  /** The operator's folder: init's `.env` and the state database (./data/state.db) are here. */
  let folder: string;
  let stateDb: string;
  /** What the shell adds: nothing of energy-etl's settings but a faster rate (empty = unset). */
  let env: Record<string, string>;

  beforeAll(async () => {
    // the real clock: `--from -14d` is relative to the CLI's now; hourly records keep it cheap
    sim = await startTestSimulator({ resolutionS: 3600 });
    // only for influxd's address and the oracle's reads: init makes the database itself
    const shared = await createTestInfluxDb("v1_deploy");
    const bucket = `v1_init_${randomBytes(4).toString("hex")}`;
    const series = async (q: string) =>
      (await influxql(shared.rawUrl, bucket, q)).results?.flatMap((r) => r.series ?? []) ?? [];
    db = { ...shared, bucket, series };
    folder = tempDir("energy-etl-v1-deploy-");
    stateDb = join(folder, "data", "state.db");
    const unset = [
      "ENERGY_API_URL",
      "ENERGY_API_KEY",
      "ENERGY_API_USER",
      "ENERGY_API_PASSWORD",
      "INFLUX_URL",
      "INFLUX_BUCKET",
      "INFLUX_TOKEN",
      "INFLUX_ORG",
      "INFLUX_USERNAME",
      "INFLUX_PASSWORD",
      "INFLUX_API",
      "ROLLUP_BUCKET",
      "STATE_DB",
      "CONFIG_FILE",
    ];
    env = {
      ...Object.fromEntries(unset.map((name) => [name, ""])),
      API_RATE_LIMIT: "1000",
      LOG_LEVEL: "info",
    };
  });
  afterEach(() => killCliChildren());
  afterAll(() => sim.close());

  /** Runs one step to its end in the operator's folder: its exit code and output. */
  async function step(args: readonly string[], own: Record<string, string> = {}) {
    const child = spawnCli(args, { ...env, ...own }, { cwd: folder });
    const { code } = await child.wait(STEP_DEADLINE_MS, `energy-etl ${args.join(" ")}`);
    return { code, out: child.stdout(), err: child.stderr(), child };
  }

  it("init --influx existing: makes the database and its rollups policy, writes ./.env", async () => {
    const { code, out, err } = await step(
      [
        ...["init", "--api-url", sim.url, "--user", "demo"],
        ...["--influx", "existing", "--influx-url", db.rawUrl, "--influx-bucket", db.bucket],
      ],
      // the secrets come from the environment off a terminal (never a flag)
      { ENERGY_API_KEY: sim.apiKey, ENERGY_API_PASSWORD: "demo-password" },
    );
    expect({ code, err: code === 0 ? "" : err }).toEqual({ code: 0, err: "" });
    expect(out).not.toContain(sim.apiKey);
    const policies = await db.series("SHOW RETENTION POLICIES");
    expect(policies.flatMap((s) => s.values.map((row) => row[0]))).toEqual(
      expect.arrayContaining(["autogen", "rollups"]),
    );
  });

  it("backfill --all --from -14d: v1 detected from /ping; influxd holds exactly the simulator's truth", async () => {
    const { code, err, child } = await step(["backfill", "--all", "--from", "-14d"]);
    expect({ code, err: code === 0 ? "" : err }).toEqual({ code: 0, err: "" });
    const [detected] = child.logged("InfluxDB write API");
    expect(detected).toMatchObject({ api: "v1", version: expect.stringMatching(/^1\.6\.7/) });

    const { jobs } = readJobs(stateDb);
    // every device of the fleet, each of its resources, one job each, all done
    const fleet = sim.fleet.deviceIds().length;
    expect(jobs.length).toBeGreaterThan(0);
    expect(jobs.filter((j) => j.status !== "done")).toEqual([]);
    expect(new Set(jobs.map((j) => j.deviceId)).size).toBe(fleet);
    const expected = jobs.flatMap((j) =>
      expectedPoints(
        j.deviceId,
        j.resourceId,
        simulatorRecords(sim.fleet, j.deviceId, j.resourceId, j.fromS, j.toS),
      ),
    );
    const stored = await rawPoints(db);
    expect(stored.length).toBe(expected.length);
    expect(sortPoints(stored)).toEqual(sortPoints(expected));
  });

  it("audit --from -14d: reads InfluxDB 1.6.7 over InfluxQL and finds no holes", async () => {
    const { code, out, err } = await step(["audit", "--from", "-14d"]);
    expect({ code, err: code === 0 ? "" : err }).toEqual({ code: 0, err: "" });
    expect(out).toMatch(/^audit .*: no holes$/m);
  });

  it("report --from -7d: every site's energies per day, as the simulator's readings give them", async () => {
    const { code, out, err } = await step(["report", "--from", "-7d", "--json"]);
    expect({ code, err: code === 0 ? "" : err }).toEqual({ code: 0, err: "" });
    const got = reportSchema.parse(JSON.parse(out));
    expect(got.tz).toBe("UTC");
    expect(got.periods.length).toBeGreaterThanOrEqual(7);
    // the oracle over what the backfill read (from its first reading: the counter rule needs
    // the reading before each day)
    const { jobs } = readJobs(stateDb);
    const fromS = Math.min(...jobs.map((j) => j.fromS));
    const toS = Math.max(...jobs.map((j) => j.toS));
    const want = oracle(sim, "UTC", fromS, toS);
    const compared = expectFigures(got, want, (date) => date);
    expect(compared).toBe(sim.fleet.deviceIds().length * got.periods.length * KEYS.length);
  });
});
