import { spawn } from "node:child_process";
import type { Simulator } from "../../src/simulator/server.js";
import { builtCli } from "../support/cli-child.js";
import { sortPoints, storedPoints } from "../support/expected-points.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { collect, trackExit } from "../support/reliability-bounds.js";
import { startTestSimulator } from "../support/simulator.js";
import { waitUntil } from "../support/wait.js";

const NOW_MS = Date.UTC(2026, 5, 15, 12);
const FROM = "2026-03-17T12:00:00Z";
const TO = "2026-06-15T12:00:00Z";
const CONCURRENCY = 2;

/** One process may take this long before the test fails (it is SIGKILLed then). */
const PROCESS_DEADLINE_MS = 20_000;

function backfill(env: Record<string, string>) {
  const child = spawn(
    process.execPath,
    [builtCli(), "backfill", "--device", "hybrid-site-01", "--from", FROM, "--to", TO],
    { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] },
  );
  const exit = trackExit(child);
  const out = collect(child.stdout);
  /** Its exit code, within PROCESS_DEADLINE_MS. */
  const exitCode = async (what: string) => (await exit.wait(PROCESS_DEADLINE_MS, what)).code;
  return { child, exited: exit.exited, exitCode, out };
}

/** Key of one data request: which values over which window. */
const chunkKey = (q: Readonly<Record<string, string>>) => `${q.values}|${q.from}|${q.to}`;

describe("backfill killed with SIGKILL midway, then run again", () => {
  let sim: Simulator;
  let crashed: TestInfluxDb;
  let clean: TestInfluxDb;

  beforeAll(async () => {
    sim = await startTestSimulator({ now: () => NOW_MS, resolutionS: 3600, latencyMs: 60 });
    crashed = await createTestInfluxDb("crashed");
    clean = await createTestInfluxDb("clean");
  });
  afterAll(() => sim.close());

  it("ends with InfluxDB identical to a clean run, repeating at most the chunks in flight", async () => {
    const extra = { API_CONCURRENCY: String(CONCURRENCY), LOG_LEVEL: "warn" };
    const cleanRun = backfill(pipelineEnv(sim, clean, tempStateDb(), extra));
    expect(await cleanRun.exitCode("the clean backfill")).toBe(0);
    const planned = sim.count("data", 200);
    expect(planned).toBe(65);
    sim.resetLog();

    const state = tempStateDb();
    const env = pipelineEnv(sim, crashed, state, extra);
    const first = backfill(env);
    await waitUntil(() => sim.count("data") >= 20, "the first backfill's 20th data request", {
      timeoutMs: 30_000,
      intervalMs: 20,
      stopIf: first.exited,
    });
    first.child.kill("SIGKILL");
    expect(await first.exitCode("the first backfill after SIGKILL")).toBeNull();
    const beforeRestart = sim.count("data");
    expect(beforeRestart).toBeLessThan(planned);

    const second = backfill(env);
    expect(await second.exitCode("the second backfill")).toBe(0);
    expect(second.out()).toMatch(/2\/2 jobs done, 65\/65 chunks/);

    const counts = new Map<string, number>();
    for (const r of sim.requests.filter((q) => q.endpoint === "data")) {
      counts.set(chunkKey(r.query), (counts.get(chunkKey(r.query)) ?? 0) + 1);
    }
    expect(counts.size).toBe(planned);
    const repeated = [...counts.values()].filter((n) => n > 1).length;
    expect(repeated).toBeLessThanOrEqual(CONCURRENCY);
    expect(sim.count("data")).toBeLessThanOrEqual(planned + CONCURRENCY);

    // the data is identical; the runs' own health points (etl_run, etl_lag) differ by nature
    const data = async (db: TestInfluxDb) =>
      sortPoints((await storedPoints(db)).filter((p) => !p.measurement.startsWith("etl_")));
    expect(await data(crashed)).toEqual(await data(clean));
  });
});
