/**
 * The catalog at its own cadence (issue #11), with real parts: the simulator over HTTP with an
 * injected clock, the run's influxd, a SQLite state file. A steady sync issues data requests only;
 * the device list, resources and value lists are read again after CATALOG_REFRESH (by the CLI's
 * sync before its data, by the service's catalog run between ticks), and at once when a data
 * answer says a value is unknown.
 */

import { runCatalogRefresh } from "../../src/pipeline/catalog-refresh.js";
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import { runSync } from "../../src/pipeline/sync.js";
import type { Endpoint, Simulator } from "../../src/simulator/server.js";
import { createTestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { fleetGroupCount } from "../support/schema-oracle.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const MINUTE_MS = 60_000;
const T0_MS = Date.UTC(2026, 5, 15, 12);
const CATALOG: readonly Endpoint[] = ["devices", "resources", "values"];

/** Requests per endpoint the simulator logged since index `from`. */
function counts(sim: Simulator, from: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of sim.requests.slice(from)) out[r.endpoint] = (out[r.endpoint] ?? 0) + 1;
  return out;
}

/** The catalog requests one full read takes: the device list, and per device 1 + resources. */
function catalogRead(sim: Simulator): Record<string, number> {
  const devices = sim.fleet.deviceIds();
  const resources = devices.reduce((n, d) => n + (sim.fleet.resourceIds(d)?.length ?? 0), 0);
  return { devices: 1, resources: devices.length, values: resources };
}

const catalogOf = (c: Record<string, number>) =>
  Object.fromEntries(CATALOG.map((e) => [e, c[e] ?? 0]));

async function setUp(extra: Record<string, string> = {}) {
  const clock = new ManualClock(T0_MS);
  const sim = await startTestSimulator({ now: clock.now, resolutionS: 300 });
  const db = await createTestInfluxDb("catalog_cadence");
  const env = pipelineEnv(sim, db, tempStateDb(), { SYNC_START: "PT1H", ...extra });
  const { pipeline, logLines } = await openTestPipeline(env, () => new Date(clock.now()));
  return { clock, sim, pipeline, logLines, env };
}

async function tearDown(parts: { pipeline: Pipeline; sim: Simulator }): Promise<void> {
  await parts.pipeline.close();
  await parts.sim.close();
}

describe("a steady sync", () => {
  it("issues the data minimum and nothing else; the catalog is read again after CATALOG_REFRESH", async () => {
    const parts = await setUp();
    const { clock, sim, pipeline } = parts;
    try {
      let from = sim.requests.length;
      expect((await runSync(pipeline)).status).toBe("ok");
      expect(catalogOf(counts(sim, from))).toEqual(catalogRead(sim));

      for (let tick = 1; tick <= 11; tick++) {
        clock.advance(5 * MINUTE_MS);
        from = sim.requests.length;
        const result = await runSync(pipeline);
        expect(result.status).toBe("ok");
        // the token is reused; nothing but one request per value group and resource
        expect(counts(sim, from)).toEqual({ data: fleetGroupCount(sim.fleet) });
        expect(result.counters.catalogReads).toBe(0);
      }
      // 60 minutes after the first read: the CLI's sync reads the catalog again first
      clock.advance(5 * MINUTE_MS);
      from = sim.requests.length;
      const due = await runSync(pipeline);
      expect(catalogOf(counts(sim, from))).toEqual(catalogRead(sim));
      expect(counts(sim, from).data).toBe(fleetGroupCount(sim.fleet));
      expect(due.counters.catalogReads).toBe(sim.fleet.deviceIds().length);
    } finally {
      await tearDown(parts);
    }
  });

  it("in the service, a tick uses the stored catalog and the catalog run refreshes what is due", async () => {
    const parts = await setUp();
    const { clock, sim, pipeline } = parts;
    try {
      await runSync(pipeline, { catalog: "stored" });
      expect(await runCatalogRefresh(pipeline)).toBeUndefined();

      clock.advance(65 * MINUTE_MS);
      let from = sim.requests.length;
      await runSync(pipeline, { catalog: "stored" });
      expect(Object.keys(counts(sim, from))).toEqual(["data"]);

      from = sim.requests.length;
      const refresh = await runCatalogRefresh(pipeline);
      expect(counts(sim, from)).toEqual(catalogRead(sim));
      const reads = Object.values(catalogRead(sim)).reduce((a, b) => a + b, 0);
      expect(refresh).toMatchObject({
        status: "ok",
        devices: sim.fleet.deviceIds().length,
        requests: reads,
        errors: 0,
      });
      expect(pipeline.store.runs.last("catalog")).toMatchObject({
        status: "ok",
        requests: reads,
        devices: 4,
      });
      // nothing is due again for another CATALOG_REFRESH
      expect(await runCatalogRefresh(pipeline)).toBeUndefined();
      clock.advance(59 * MINUTE_MS);
      expect(await runCatalogRefresh(pipeline)).toBeUndefined();
      clock.advance(1 * MINUTE_MS);
      expect((await runCatalogRefresh(pipeline))?.devices).toBe(4);
    } finally {
      await tearDown(parts);
    }
  });
});

describe("a data answer that says a value is unknown", () => {
  it("reads the device's catalog again at once and syncs the resource in the same run", async () => {
    const parts = await setUp();
    const { clock, sim, pipeline, logLines } = parts;
    const device = "offgrid-genset-02";
    try {
      await runSync(pipeline);
      // the stored catalog lists a value the API no longer knows (a sensor was removed)
      const listed = pipeline.store.catalog.list(device, "all_data");
      pipeline.store.catalog.refresh(
        device,
        "all_data",
        [...listed, "e_03_01_00_000_removed_power"],
        new Date(clock.now()),
      );
      clock.advance(5 * MINUTE_MS);
      const from = sim.requests.length;
      const result = await runSync(pipeline);
      expect(result.status).toBe("ok");
      const notFound = sim.requests.slice(from).filter((r) => r.status === 404);
      expect(notFound.length).toBeGreaterThan(0);
      expect(notFound.every((r) => r.endpoint === "data" && r.segments[1] === device)).toBe(true);
      // one catalog read of that device only: its resources and their value lists
      expect(catalogOf(counts(sim, from))).toEqual({
        devices: 0,
        resources: 1,
        values: sim.fleet.resourceIds(device)?.length,
      });
      expect(pipeline.store.catalog.list(device, "all_data")).toEqual(listed);
      const cursor = pipeline.store.cursors.get(device, "all_data");
      expect(cursor).toMatchObject({ failures: 0, newestRecordS: Math.floor(clock.now() / 1000) });
      expect(logLines.some((l) => l.includes("catalog out of date"))).toBe(true);
    } finally {
      await tearDown(parts);
    }
  });
});

describe("devices that come and go", () => {
  it("a device the API starts listing is synced after the next catalog run", async () => {
    const parts = await setUp();
    const { clock, sim, pipeline } = parts;
    try {
      await runSync(pipeline, { catalog: "stored" });
      sim.fleet.addDevice("site-new", "gridtied");
      clock.advance(5 * MINUTE_MS);
      await runSync(pipeline, { catalog: "stored" });
      expect(pipeline.store.cursors.get("site-new", "all_data")).toBeUndefined();

      clock.advance(60 * MINUTE_MS);
      const refresh = await runCatalogRefresh(pipeline);
      expect(refresh?.devices).toBe(5);
      const from = sim.requests.length;
      const result = await runSync(pipeline, { catalog: "stored" });
      expect(result.devices.map((d) => d.deviceId)).toContain("site-new");
      expect(Object.keys(counts(sim, from))).toEqual(["data"]);
      expect(pipeline.store.cursors.get("site-new", "all_data")?.newestRecordS).toBe(
        Math.floor(clock.now() / 1000),
      );
    } finally {
      await tearDown(parts);
    }
  });

  it("a device the API no longer knows (404) is recorded as not listed and left out", async () => {
    const parts = await setUp();
    const { clock, pipeline, logLines } = parts;
    try {
      await runSync(pipeline);
      const now = new Date(clock.now());
      pipeline.store.catalog.recordDevices(
        [...pipeline.store.catalog.listedDevices(), "gone"],
        now,
      );
      const result = await runSync(pipeline, { catalog: "stored" });
      expect(result.status).toBe("ok");
      expect(result.devices.find((d) => d.deviceId === "gone")).toMatchObject({ resources: 0 });
      expect(pipeline.store.catalog.listedDevices()).not.toContain("gone");
      expect(logLines.some((l) => l.includes("the API no longer knows the device"))).toBe(true);
    } finally {
      await tearDown(parts);
    }
  });
});
