/**
 * Issue 42, item 1, as an operator runs it: Debian's `apt-get install influxdb` (1.6.7, no
 * /api/v2/write, no auth, no token) and the built CLI pointed at it DIRECTLY, no proxy anywhere.
 * Each step is one command, one child process, as the operator types it.
 */
import type { Simulator } from "../../src/simulator/server.js";
import { readJobs } from "../support/backfill-jobs.js";
import { killCliChildren, spawnCli } from "../support/cli-child.js";
import {
  expectedPoints,
  rawPoints,
  simulatorRecords,
  sortPoints,
} from "../support/expected-points.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";

/** One command of the walk-through that takes longer fails the test. */
const STEP_DEADLINE_MS = 120_000;

describe("InfluxDB 1.6.7 as Debian installs it, written directly by the built CLI", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  let stateDb: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    // the real clock: `--from -14d` is relative to the CLI's now; hourly records keep it cheap
    sim = await startTestSimulator({ resolutionS: 3600 });
    db = await createTestInfluxDb("v1_deploy");
    stateDb = tempStateDb(); // removed with its directory after the file (tempDir)
    env = {
      ENERGY_API_URL: sim.url,
      ENERGY_API_KEY: sim.apiKey,
      ENERGY_API_USER: "demo",
      ENERGY_API_PASSWORD: "demo-password",
      // influxd itself: what `apt-get install influxdb` serves on :8086, no token, no org
      INFLUX_URL: db.rawUrl,
      INFLUX_BUCKET: db.bucket,
      INFLUX_TOKEN: "",
      INFLUX_ORG: "",
      INFLUX_USERNAME: "",
      INFLUX_PASSWORD: "",
      STATE_DB: stateDb,
      API_RATE_LIMIT: "1000",
      LOG_LEVEL: "info",
    };
  });
  afterEach(() => killCliChildren());
  afterAll(() => sim.close());

  /** Runs one step to its end: its exit code and output. */
  async function step(...args: string[]) {
    const child = spawnCli(args, env);
    const { code } = await child.wait(STEP_DEADLINE_MS, `energy-etl ${args.join(" ")}`);
    return { code, out: child.stdout(), err: child.stderr(), child };
  }

  it("backfill --all --from -14d: v1 detected from /ping; influxd holds exactly the simulator's truth", async () => {
    const { code, err, child } = await step("backfill", "--all", "--from", "-14d");
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
    const { code, out, err } = await step("audit", "--from", "-14d");
    expect({ code, err: code === 0 ? "" : err }).toEqual({ code: 0, err: "" });
    expect(out).toMatch(/^audit .*: no holes$/m);
  });
});
