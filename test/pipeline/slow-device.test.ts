/**
 * One slow device never holds the other devices' work: a device whose data requests hang (until
 * API_DEADLINE_MS) gets at most API_CONCURRENCY - 1 request slots, so the others sync meanwhile.
 */
import { runSync } from "../../src/pipeline/sync.js";
import type { Simulator } from "../../src/simulator/server.js";
import { startHangProxy } from "../support/hang-proxy.js";
import { createTestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const NOW_MS = Date.UTC(2026, 5, 15, 12);
const SLOW = "hybrid-site-01";
const FAST = "site A+1";

describe("a device whose requests hang", () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startTestSimulator({ now: new ManualClock(NOW_MS).now });
  });
  afterAll(() => sim.close());

  it("never holds the other devices' work: they sync while it waits for its deadline", async () => {
    const proxy = await startHangProxy(sim.url);
    // hybrid-site-01's data requests (5 chunks) hang; everything else passes
    proxy.setMode("hang", { only: (url) => url.startsWith("/data/hybrid-site-01/") });
    const db = await createTestInfluxDb("slowdevice");
    const env = pipelineEnv(sim, db, tempStateDb(), {
      ENERGY_API_URL: proxy.url,
      SYNC_START: "PT2H",
      API_CONCURRENCY: "2",
      API_DEADLINE_MS: "3000",
      API_RETRIES: "0",
    });
    const { pipeline } = await openTestPipeline(env, () => new Date(NOW_MS));
    try {
      const result = await runSync(pipeline, { deviceIds: [SLOW, FAST] });
      const fast = result.devices.find((d) => d.deviceId === FAST);
      const slow = result.devices.find((d) => d.deviceId === SLOW);
      expect(fast?.error).toBeUndefined();
      expect(fast?.points).toBeGreaterThan(0);
      expect(slow?.error).toMatch(/API_DEADLINE_MS/);
      // in arrival order: the slow device had at most one request out (its share of the two
      // slots) before the fast device's data requests came; they were not queued behind it
      const isFast = (path: string) => path.startsWith("/data/site%20A%2B1/");
      const isSlow = (path: string) => path.startsWith("/data/hybrid-site-01/");
      const order = proxy.requests.map((r) => r.path);
      expect(order.filter(isFast)).toHaveLength(2);
      const firstFast = order.findIndex(isFast);
      expect(order.slice(0, firstFast).filter(isSlow).length).toBeLessThanOrEqual(1);
      expect(order.filter(isSlow).length).toBeGreaterThan(0);
    } finally {
      await pipeline.close();
      await proxy.close();
    }
  }, 60_000);
});
