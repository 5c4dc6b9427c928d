/**
 * The /readyz unit (src/service/readiness.ts) on a real state file, its clocks injected: InfluxDB
 * and the API asked at most once per interval (a pending answer shared), the failed-syncs and lag
 * rules, the state file, and what the route answers.
 */
import { Readiness, type ReadinessParts } from "../../src/service/readiness.js";
import { StateStore } from "../../src/state/state-store.js";
import { tempStateDb } from "../support/pipeline.js";

const NOW_MS = Date.UTC(2026, 5, 15, 12);
const NOW_S = NOW_MS / 1000;
const INTERVAL_MS = 30_000;

/** A readiness over `store` with counting checks; `nowMs` moves the cache's clock. */
function readinessOn(store: StateStore, parts: Partial<ReadinessParts> = {}) {
  const asked = { influxdb: 0, api: 0 };
  let nowMs = NOW_MS;
  let apiFails: string | undefined;
  const readiness = new Readiness({
    rules: { maxLagS: 3600, failedSyncs: 2, checkIntervalMs: INTERVAL_MS },
    stopping: () => false,
    sink: {
      check: async () => {
        asked.influxdb++;
      },
    },
    client: {
      accessToken: async () => {
        asked.api++;
        if (apiFails !== undefined) throw new Error(apiFails);
        return "token";
      },
    },
    scheduler: { state: () => "ok" },
    store,
    apiNow: () => new Date(NOW_MS),
    silenceAt: () => ({ silentAfterS: 86_400 }),
    nowMs: () => nowMs,
    ...parts,
  });
  return {
    readiness,
    asked,
    at: (ms: number) => {
      nowMs = ms;
    },
    failApi: (message: string | undefined) => {
      apiFails = message;
    },
  };
}

describe("Readiness", () => {
  let store: StateStore;
  beforeEach(() => {
    store = StateStore.open(tempStateDb());
  });
  afterEach(() => store.close());

  it("asks InfluxDB and the API at most once per interval, sharing an answer under way", async () => {
    const { readiness, asked, at } = readinessOn(store);
    const [first, second] = await Promise.all([readiness.check(), readiness.check()]);
    const ready = {
      influxdb: "ok",
      api: "ok",
      scheduler: "ok",
      syncs: "ok",
      lag: "ok",
      state: "ok",
    };
    expect(first).toEqual(ready);
    expect(second).toEqual(ready);
    expect(asked).toEqual({ influxdb: 1, api: 1 });
    at(NOW_MS + INTERVAL_MS - 1);
    await readiness.check();
    expect(asked).toEqual({ influxdb: 1, api: 1 });
    at(NOW_MS + INTERVAL_MS);
    await readiness.check();
    expect(asked).toEqual({ influxdb: 2, api: 2 });
  });

  it("a failed check says why, and the route answers 503 with the reasons until it passes", async () => {
    const { readiness, at, failApi } = readinessOn(store);
    failApi("401 Unauthorized");
    const failed = await readiness.route();
    expect(failed.status).toBe(503);
    expect(JSON.parse(failed.body)).toMatchObject({
      status: "not ready",
      reason: "api: 401 Unauthorized",
      checks: { api: "401 Unauthorized", influxdb: "ok" },
    });
    failApi(undefined);
    at(NOW_MS + INTERVAL_MS);
    const passed = await readiness.route();
    expect(passed.status).toBe(200);
    expect(JSON.parse(passed.body)).toMatchObject({ status: "ready" });
  });

  it("asks nothing while the service stops; claims no InfluxDB check for a sink without one", async () => {
    const stopping = readinessOn(store, { stopping: () => true });
    expect(await stopping.readiness.check()).toEqual({ service: "stopping" });
    expect(stopping.asked).toEqual({ influxdb: 0, api: 0 });
    const fileSink = readinessOn(store, { sink: {} });
    const checks = await fileSink.readiness.check();
    expect(checks).not.toHaveProperty("influxdb");
    expect(checks.api).toBe("ok");
  });

  it("is not ready after READY_FAILED_SYNCS failed syncs in a row, nor when a resource lags", async () => {
    const { readiness } = readinessOn(store);
    for (const detail of ["first", "second"]) {
      const id = store.runs.start("sync", new Date(NOW_MS));
      const summary = { devices: 0, requests: 0, points: 0, errors: 1, detail };
      store.runs.finish(id, { status: "failed", ...summary }, new Date(NOW_MS));
    }
    const cursor = store.cursors.begin("d1", "r1", NOW_S - 7200, new Date(NOW_MS));
    const checks = await readiness.check();
    expect(checks.syncs).toBe("the last 2 syncs failed: second");
    const lagS = NOW_S - cursor.fetchedUntilS;
    expect(lagS).toBeGreaterThan(3600);
    expect(checks.lag).toBe(`d1/r1 lags ${lagS} s (READY_MAX_LAG 3600 s)`);
    // a silent resource does not make the ETL unready
    const silent = readinessOn(store, { silenceAt: () => ({ silentAfterS: 60 }) });
    expect((await silent.readiness.check()).lag).toBe("ok");
  });

  it("the state file must be the one in use", async () => {
    const { readiness } = readinessOn(store, {
      store: {
        runs: store.runs,
        cursors: store.cursors,
        checkFile: () => {
          throw new Error("state database was deleted while in use");
        },
      },
    });
    expect((await readiness.check()).state).toBe("state database was deleted while in use");
  });
});
