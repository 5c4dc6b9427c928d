/**
 * A backfill (the built CLI, as a child process) SIGKILLed again and again at seeded moments and
 * restarted with the same command each time, until it exits 0: the end state must be the one of a
 * run that was never killed. Every wait is bounded in count and time.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import type { Simulator } from "../../src/simulator/server.js";
import { StateStore } from "../../src/state/state-store.js";
import { storedJobs } from "../support/backfill-jobs.js";
import { builtCli } from "../support/cli-child.js";
import { sortPoints, storedPoints } from "../support/expected-points.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { collect, seededRandom, trackExit } from "../support/reliability-bounds.js";
import { requestCount, requestsFor } from "../support/schema-oracle.js";
import { startTestSimulator } from "../support/simulator.js";
import { waitUntil } from "../support/wait.js";

const SEED = 20260615;
const DEVICE = "hybrid-site-01";
const NOW_MS = Date.UTC(2026, 5, 15, 12);
const TO = "2026-06-15T12:00:00Z";
const FROM = "2026-04-16T12:00:00Z"; // 60 days
const TO_S = Date.parse(TO) / 1000;
const FROM_S = Date.parse(FROM) / 1000;
const CONCURRENCY = 2;
const LATENCY_MS = 60;
const KILLS = 8;
/** Upper bound of the loop: the kills, the run that finishes, and slack. */
const MAX_STARTS = KILLS + 3;
/** One process may take this long before the test fails (it is SIGKILLed then). */
const PROCESS_DEADLINE_MS = 20_000;

function backfill(env: Record<string, string>): ChildProcess {
  return spawn(
    process.execPath,
    [builtCli(), "backfill", "--device", DEVICE, "--from", FROM, "--to", TO],
    { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] },
  );
}

/** When to kill one process: after some data requests (plus a delay), or a delay after spawn. */
type KillPlan =
  | { readonly kind: "after-requests"; readonly requests: number; readonly delayMs: number }
  | { readonly kind: "after-spawn"; readonly delayMs: number };

function killPlans(seed: number): KillPlan[] {
  const random = seededRandom(seed);
  return Array.from(
    { length: KILLS },
    (_, i): KillPlan =>
      // the first kill and about one in four of the others hit start-up (config, migration,
      // catalog) or the first requests; the others come after 1 to 4 answered data requests
      i === 0 || random.next() < 0.25
        ? { kind: "after-spawn", delayMs: random.int(80, 700) }
        : { kind: "after-requests", requests: random.int(1, 4), delayMs: random.int(0, 40) },
  );
}

describe("backfill SIGKILLed at seeded moments, restarted until it exits 0", () => {
  let sim: Simulator;
  let crashed: TestInfluxDb;
  let clean: TestInfluxDb;

  beforeAll(async () => {
    sim = await startTestSimulator({
      now: () => NOW_MS,
      resolutionS: 3600,
      latencyMs: LATENCY_MS,
    });
    crashed = await createTestInfluxDb("crashloop");
    clean = await createTestInfluxDb("crashloop_clean");
  });
  afterAll(() => sim.close());

  it("ends with the clean run's data, the right watermark, every chunk done, and few repeats", async () => {
    const extra = { API_CONCURRENCY: String(CONCURRENCY), LOG_LEVEL: "warn" };

    // the reference: the same backfill, never killed
    const cleanRun = backfill(pipelineEnv(sim, clean, tempStateDb(), extra));
    const cleanExit = await trackExit(cleanRun).wait(PROCESS_DEADLINE_MS, "the clean backfill");
    expect(cleanExit).toEqual({ code: 0, signal: null });
    const planned = sim.count("data", 200);
    const valueCounts = sim.fleet
      .resourceIds(DEVICE)
      ?.map((r) => (sim.fleet.valueIds(DEVICE, r) ?? []).filter((v) => v !== "values_id").length);
    expect(planned).toBe(
      (valueCounts ?? []).reduce((n, v) => n + requestCount(v, FROM_S, TO_S), 0),
    );
    expect(planned).toBe(45);
    sim.resetLog();

    const state = tempStateDb();
    const env = pipelineEnv(sim, crashed, state, extra);
    const plans = killPlans(SEED);
    let kills = 0;
    let finalOut = "";
    let finished = false;
    for (let start = 0; start < MAX_STARTS && !finished; start++) {
      const child = backfill(env);
      const exit = trackExit(child);
      const out = collect(child.stdout);
      const err = collect(child.stderr);
      try {
        const plan = plans[kills];
        if (plan) {
          const base = sim.count("data");
          const reached =
            plan.kind === "after-spawn" ||
            (await waitUntil(
              () => sim.count("data") - base >= plan.requests,
              `${plan.requests} data requests of start ${start}`,
              { timeoutMs: PROCESS_DEADLINE_MS, stopIf: exit.exited },
            ));
          if (reached) await sleep(plan.delayMs);
          if (!exit.exited()) {
            child.kill("SIGKILL");
            const killed = await exit.wait(5_000, `start ${start} after SIGKILL`);
            expect(killed.signal).toBe("SIGKILL");
            kills++;
            // requests in flight at the kill are still answered (and logged) by the simulator:
            // let them land before the next start counts its own
            await sleep(LATENCY_MS + 100);
            continue;
          }
        }
        const ended = await exit.wait(PROCESS_DEADLINE_MS, `start ${start}`);
        expect({ ...ended, stderr: err() }).toEqual({ code: 0, signal: null, stderr: "" });
        finalOut = out();
        finished = true;
      } finally {
        // a failed wait or expectation leaves no process behind
        if (!exit.exited()) child.kill("SIGKILL");
      }
    }
    expect(finished).toBe(true);
    // the seeded moments leave enough work for every planned kill to hit a running backfill
    expect(kills).toBe(KILLS);
    expect(finalOut).toMatch(new RegExp(`2/2 jobs done, ${planned}/${planned} chunks`));

    // at most the chunks in flight at each kill are fetched twice
    expect(sim.count("data")).toBeGreaterThanOrEqual(planned);
    expect(sim.count("data")).toBeLessThanOrEqual(planned + kills * CONCURRENCY);
    const windows = new Set(
      sim.requests
        .filter((r) => r.endpoint === "data")
        .map((r) => `${r.segments.join("/")}|${r.query.values}|${r.query.from}|${r.query.to}`),
    );
    expect(windows.size).toBe(planned);

    // the state: one job per resource, every planned chunk recorded, the watermark at --to
    const store = StateStore.open(state, { migrate: false });
    try {
      const jobs = storedJobs(store);
      expect(jobs.map((j) => j.resourceId).sort()).toEqual(["all_data", "battery_bank"]);
      for (const job of jobs) {
        const chunks = requestsFor(job.valueIds, job.fromS, job.toS);
        expect(job).toMatchObject({
          status: "done",
          fromS: FROM_S,
          toS: TO_S,
          chunksTotal: chunks.length,
          chunksDone: chunks.length,
        });
        const done = store.jobs.completedChunks(job.id);
        expect(done.size).toBe(job.chunksTotal);
        expect([...done].sort((a, b) => a - b)).toEqual(chunks.map((c) => c.index));
        expect(store.cursors.get(DEVICE, job.resourceId)?.newestRecordS).toBe(TO_S);
      }
    } finally {
      store.close();
    }

    // the data is the clean run's; the runs' own health points (etl_*) differ by nature
    const data = async (db: TestInfluxDb) =>
      sortPoints((await storedPoints(db)).filter((p) => !p.measurement.startsWith("etl_")));
    const expected = await data(clean);
    expect(expected.length).toBeGreaterThan(10_000);
    expect(await data(crashed)).toEqual(expected);
  });
});
