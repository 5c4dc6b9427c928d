/**
 * Issue #11, with real parts: the service (EtlService, its ticks driven by the test) against a
 * 50-device fleet of the simulator over HTTP with an injected clock, the run's influxd and a
 * SQLite state file. A steady tick issues exactly the data minimum; a value id that appears on
 * one device is found by the catalog run and its history backfilled within one CATALOG_REFRESH.
 */
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import { EtlService } from "../../src/service/etl-service.js";
import type { Simulator } from "../../src/simulator/server.js";
import type { StateStore } from "../../src/state/state-store.js";
import { storedJobs } from "../support/backfill-jobs.js";
import { simulatorRecords } from "../support/expected-points.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { fleetGroupCount, groupsOf } from "../support/schema-oracle.js";
import { serviceIdle, tickSync } from "../support/service.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const MINUTE_S = 60;
const T0_S = Date.UTC(2025, 2, 10, 12) / 1000;
const DEVICES = 50;
const NEW_VALUE = "e_03_01_00_007_heat_pump_power";
const CATALOG_REFRESH_S = 3600;

/** Requests per endpoint the simulator logged since index `from`. */
function counts(sim: Simulator, from: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of sim.requests.slice(from)) out[r.endpoint] = (out[r.endpoint] ?? 0) + 1;
  return out;
}

/** A generated device whose all_data keeps its number of value groups when one value is added. */
function deviceForNewValue(sim: Simulator): string {
  const found = sim.fleet
    .deviceIds()
    .slice(4)
    .find((d) => {
      const values = sim.fleet.valueIds(d, "all_data") ?? [];
      return (
        !values.includes(NEW_VALUE) &&
        groupsOf([...values, NEW_VALUE]).length === groupsOf(values).length
      );
    });
  if (found === undefined) throw new Error("no device fits");
  return found;
}

async function pointsOfValue(db: TestInfluxDb, deviceId: string): Promise<number[]> {
  const series = await db.series(
    `SELECT "value" FROM "heat_pump_power" WHERE "device_id" = '${deviceId}'`,
  );
  return (series[0]?.values ?? []).map((row) => Number(row[0]));
}

describe("the service over a 50-device fleet", () => {
  let sim: Simulator;
  let pipeline: Pipeline;
  let state: StateStore;
  let service: EtlService;
  let db: TestInfluxDb;
  const clock = new ManualClock(T0_S * 1000);
  const nowS = () => Math.floor(clock.now() / 1000);

  beforeAll(async () => {
    sim = await startTestSimulator({
      now: clock.now,
      resolutionS: 300,
      devices: DEVICES,
      newValueShare: 0,
    });
    db = await createTestInfluxDb("fleet_ticks");
    const env = pipelineEnv(sim, db, tempStateDb(), {
      SYNC_START: "P1D",
      CATALOG_REFRESH: "PT1H",
      LOG_LEVEL: "info",
    });
    ({ pipeline, state } = await openTestPipeline(env, () => new Date(clock.now())));
    service = new EtlService(pipeline, {
      state,
      // MEMORY_BUDGET_MB's default
      memoryBudgetMb: 512,
      cron: "0 0 1 1 *",
      httpPort: 0,
      httpHost: "127.0.0.1",
      readiness: { maxLagS: 3600, failedSyncs: 3, checkIntervalMs: 30_000 },
    });
    // the first tick reads the whole catalog and one day of every device
    await service.start();
    await serviceIdle(service, 110_000);
  }, 120_000);

  afterAll(async () => {
    await service.stop(5000);
    await pipeline.close();
    await sim.close();
  });

  it("steady ticks issue exactly the data minimum; a new value is backfilled within one CATALOG_REFRESH", async () => {
    expect(pipeline.store.runs.last("sync")).toMatchObject({ status: "ok", devices: DEVICES });
    const device = deviceForNewValue(sim);
    const appearsS = T0_S + 7 * MINUTE_S;
    sim.fleet.scheduleValue(device, "all_data", NEW_VALUE, appearsS);

    const catalogRuns: number[] = [];
    let backfilledAtS: number | undefined;
    for (let tick = 1; tick <= 14 && backfilledAtS === undefined; tick++) {
      clock.advance(5 * MINUTE_S * 1000);
      const catalogBefore = pipeline.store.runs.last("catalog")?.id;
      const from = sim.requests.length;
      await tickSync(service, pipeline.store);
      await serviceIdle(service);
      const sync = pipeline.store.runs.last("sync");
      expect(sync).toMatchObject({ status: "ok", devices: DEVICES, errors: 0 });
      const catalogRun = pipeline.store.runs.last("catalog");
      if (catalogRun?.id === catalogBefore) {
        // a tick alone: one request per value group of every resource, nothing else
        expect(counts(sim, from)).toEqual({ data: fleetGroupCount(sim.fleet, nowS()) });
      } else {
        catalogRuns.push(nowS());
        expect(catalogRun).toMatchObject({ status: "ok", devices: DEVICES });
      }
      const job = storedJobs(state).findLast(
        (j) => j.reason === "new_value" && j.deviceId === device,
      );
      if (job?.status === "done") backfilledAtS = nowS();
    }
    // the catalog was read again once, CATALOG_REFRESH after the first read, between ticks
    expect(catalogRuns).toEqual([T0_S + CATALOG_REFRESH_S]);
    expect(backfilledAtS).toBeDefined();
    expect((backfilledAtS ?? Number.POSITIVE_INFINITY) - appearsS).toBeLessThanOrEqual(
      CATALOG_REFRESH_S,
    );
    // its history from SYNC_START (P1D before the catalog run that found it) on is in InfluxDB
    const startS = T0_S + CATALOG_REFRESH_S - 86_400;
    const expected = simulatorRecords(sim.fleet, device, "all_data", startS, nowS())
      .filter((r) => r[NEW_VALUE] !== undefined && r[NEW_VALUE] !== null)
      .map((r) => Date.parse(`${r.timestamp}Z`) / 1000);
    const stored = await pointsOfValue(db, device);
    expect(stored.length).toBeGreaterThanOrEqual(288);
    expect(stored).toEqual(expected);
  }, 240_000);
});
