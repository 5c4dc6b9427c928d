import { EtlService } from "../../src/service/etl-service.js";
import type { Simulator } from "../../src/simulator/server.js";
import { createTestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { SERVICE_STEP_MS, serviceIdle } from "../support/service.js";
import { startTestSimulator } from "../support/simulator.js";
import { waitUntil, withDeadline } from "../support/wait.js";

const NOW_MS = Date.UTC(2026, 5, 15, 12);

describe("EtlService", () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startTestSimulator({ now: () => NOW_MS, latencyMs: 50 });
  });
  afterAll(() => sim.close());

  it("skips a tick while the previous sync still works, and records an interrupted run on stop", async () => {
    const db = await createTestInfluxDb("service");
    const env = pipelineEnv(sim, db, tempStateDb(), { SYNC_START: "P20D", API_CONCURRENCY: "1" });
    const { pipeline, state, logLines } = await openTestPipeline(env, () => new Date(NOW_MS));
    const service = new EtlService(pipeline, {
      state,
      // MEMORY_BUDGET_MB's default
      memoryBudgetMb: 512,
      cron: "0 0 1 1 *",
      httpPort: 0,
      httpHost: "127.0.0.1",
      readiness: { maxLagS: 3600, failedSyncs: 3, checkIntervalMs: 30_000 },
    });
    await service.start();
    expect(service.tick()).toBeUndefined();
    expect(
      logLines.some((l) => l.includes("previous sync still running: this tick is skipped")),
    ).toBe(true);
    const health = await fetch(`http://127.0.0.1:${service.port}/healthz`);
    expect(await health.json()).toEqual({ status: "ok" });

    await waitUntil(() => sim.count("data") >= 3, "the first sync's third data request", {
      timeoutMs: 30_000,
      intervalMs: 20,
    });
    await service.stop(5_000);
    expect(pipeline.store.runs.last("sync")).toMatchObject({ status: "interrupted" });
    const requestsAtStop = sim.count();
    // everything the service started (runs, queued requests) settles: none of it asks the API
    await serviceIdle(service);
    await withDeadline(pipeline.chunks.onIdle(), SERVICE_STEP_MS, "the request queue to empty");
    expect(sim.count()).toBe(requestsAtStop);
    await pipeline.close();
  });
});
