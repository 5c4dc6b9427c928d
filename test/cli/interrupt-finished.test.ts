/**
 * Ctrl-C after the work is done (#42): a backfill whose jobs are all done, stopped by SIGINT
 * during its last steps (the rollups after the jobs), exits 0 saying "finished", not "stopped …
 * run the same command again" with 130; its jobs and chunks stay committed as done, so `run`
 * continues nothing. The built CLI as a child process; InfluxDB behind a proxy that holds the rollups'
 * queries, so the SIGINT comes while the backfill is in its last steps: events counted, no sleeps.
 */
import type { Simulator } from "../../src/simulator/server.js";
import { StateStore } from "../../src/state/state-store.js";
import { storedJobs } from "../support/backfill-jobs.js";
import { killCliChildren, spawnCli } from "../support/cli-child.js";
import { type HangProxy, startHangProxy } from "../support/hang-proxy.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";
import { waitUntil } from "../support/wait.js";

const SIM_NOW_MS = Date.UTC(2026, 5, 15, 12);
const DEVICE = "hybrid-site-01";
const FROM = "2026-06-12T00:00:00Z";
const TO = "2026-06-14T00:00:00Z";
/** A step that takes longer fails the test (a bound, not a measured time). */
const STEP_MS = 30_000;

describe("Ctrl-C after a backfill's jobs are all done", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  let influx: HangProxy;
  let stateDb: string;

  beforeAll(async () => {
    sim = await startTestSimulator({ now: () => SIM_NOW_MS, resolutionS: 3600 });
    db = await createTestInfluxDb("cli_interrupt_finished");
    stateDb = tempStateDb();
  });
  afterAll(async () => {
    await killCliChildren();
    await influx.close();
    await sim.close();
  });

  /** The state file's unfinished jobs and the chunks done of its first job. */
  function jobs() {
    const store = StateStore.open(stateDb);
    try {
      return { unfinished: store.jobs.unfinished().length, chunks: store.jobs.completedChunks(1) };
    } finally {
      store.close();
    }
  }

  it("exits 0 saying finished; every job and chunk stays committed as done", async () => {
    // the rollups' queries once data was written are held: the backfill waits in its last steps
    let proxy: HangProxy | undefined;
    const written = () => (proxy?.count({ path: /write/ }) ?? 0) > 0;
    influx = await startHangProxy(db.url, "hang", {
      only: (url) => url.startsWith("/query") && written(),
    });
    proxy = influx;
    const env = {
      ...pipelineEnv(sim, db, stateDb, { LOG_LEVEL: "info", SHUTDOWN_TIMEOUT_MS: "20000" }),
      INFLUX_URL: influx.url,
    };
    const backfill = spawnCli(["backfill", "--device", DEVICE, "--from", FROM, "--to", TO], env);
    await waitUntil(() => influx.hanging() > 0, "a rollups query held", {
      timeoutMs: STEP_MS,
      stopIf: backfill.exited,
    });
    // every job done (its chunks recorded) while the rollups wait: the work is whole
    await waitUntil(
      () => {
        const { unfinished, chunks } = jobs();
        return unfinished === 0 && chunks.size > 0;
      },
      "every backfill job done",
      { timeoutMs: STEP_MS, stopIf: backfill.exited },
    );
    expect(backfill.exited()).toBe(false);
    const dataRequests = sim.count("data", 200);
    expect(dataRequests).toBeGreaterThan(0);

    backfill.child.kill("SIGINT");
    // the stop is seen while the rollups wait; then InfluxDB answers them again
    await backfill.waitForLog("stopping: finishing the requests in flight", STEP_MS);
    influx.setMode("pass");
    influx.release();
    const exit = await backfill.wait(STEP_MS, "the backfill to end after SIGINT");
    expect({ code: exit.code, stderr: backfill.stderr() }).toEqual({
      code: 0,
      stderr: expect.stringContaining("energy-etl: finished (SIGINT came after the work was done)"),
    });
    expect(backfill.stderr()).not.toContain("run the same command again");
    expect(backfill.stdout()).toMatch(/^backfill: (\d+)\/\1 jobs done, /m);

    // committed: every job done with all its chunks, none left for `run` or a rerun to continue
    const store = StateStore.open(stateDb);
    try {
      const stored = storedJobs(store);
      expect(stored.length).toBeGreaterThan(0);
      expect(store.jobs.unfinished()).toEqual([]);
      for (const job of stored) {
        expect([job.status, store.jobs.completedChunks(job.id).size]).toEqual([
          "done",
          job.chunksTotal,
        ]);
      }
    } finally {
      store.close();
    }
    expect(sim.count("data", 200)).toBe(dataRequests);
  });
});
