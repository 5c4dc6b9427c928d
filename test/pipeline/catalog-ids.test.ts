/**
 * Issue 40 items 3 and 6a: ids of the API's lists that energy-etl cannot use are skipped with one
 * warning per catalog read, and the other devices sync (the simulator over real HTTP, the tests'
 * influxd, a SQLite state file): an empty device id, a device listed twice, and distinct device
 * or value ids that InfluxDB would store as one series (`a\b` and `a/b`, `x\ny` and `x y`).
 */
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import { runSync } from "../../src/pipeline/sync.js";
import type { Simulator } from "../../src/simulator/server.js";
import { dropTestDb } from "../support/bad-data.js";
import { createTestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";

const NOW_MS = Date.UTC(2026, 5, 15, 12);
const HOUR_MS = 3_600_000;
const WARNING = "ids the API lists that energy-etl cannot use";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Two default devices, `extraDevices` listed after them, a pipeline over 3 hours. */
async function setUp(
  name: string,
  extraDevices: readonly string[],
  added: (sim: Simulator) => void = () => {},
): Promise<{ sim: Simulator; pipeline: Pipeline; logLines: string[] }> {
  const sim = await startTestSimulator({
    now: () => NOW_MS,
    devices: 2,
    resolutionS: 900,
    extraListedDeviceIds: extraDevices,
  });
  cleanups.push(() => sim.close());
  added(sim);
  const db = await createTestInfluxDb(name);
  cleanups.push(() => dropTestDb(db));
  const env = pipelineEnv(sim, db, tempStateDb(), {
    SYNC_START: new Date(NOW_MS - 3 * HOUR_MS).toISOString(),
  });
  const { pipeline, logLines } = await openTestPipeline(env, () => new Date(NOW_MS));
  cleanups.push(() => pipeline.close());
  return { sim, pipeline, logLines };
}

/** The skipped ids of each warning logged (one entry per warning). */
type Skipped = { list: string; id: string; reason: string };
function warnings(logLines: readonly string[]): Skipped[][] {
  return logLines
    .map((line) => JSON.parse(line) as { msg?: string; skipped?: Skipped[] })
    .filter((entry) => entry.msg?.startsWith(WARNING))
    .map((entry) => entry.skipped ?? []);
}

it("an empty device id in GET /devices: skipped with one warning; every other device syncs, every tick", async () => {
  const { pipeline, logLines } = await setUp("ids_empty", [""]);
  const first = await runSync(pipeline);
  expect(first.status).toBe("ok");
  expect(first.devices.map((d) => d.deviceId)).toEqual(["hybrid-site-01", "offgrid-genset-02"]);
  expect(first.devices.every((d) => d.points > 0)).toBe(true);
  expect(warnings(logLines)).toEqual([
    [{ list: "device", id: "", reason: expect.stringMatching(/URL path/) }],
  ]);
  // the next tick uses the stored list: no second warning, the same devices
  const second = await runSync(pipeline);
  expect(second.status).toBe("ok");
  expect(second.devices.map((d) => d.deviceId)).toEqual(["hybrid-site-01", "offgrid-genset-02"]);
  expect(warnings(logLines)).toHaveLength(1);
}, 60_000);

it("a device listed twice is synced once, each of its requests made once", async () => {
  const { sim, pipeline, logLines } = await setUp("ids_twice", ["hybrid-site-01"]);
  const result = await runSync(pipeline);
  expect(result.status).toBe("ok");
  expect(result.devices.map((d) => d.deviceId)).toEqual(["hybrid-site-01", "offgrid-genset-02"]);
  const data = sim.requests
    .filter((r) => r.endpoint === "data" && r.segments[1] === "hybrid-site-01")
    .map((r) => JSON.stringify([r.segments, r.query]));
  expect(data.length).toBeGreaterThan(0);
  expect(new Set(data).size).toBe(data.length);
  expect(warnings(logLines)).toEqual([
    [{ list: "device", id: "hybrid-site-01", reason: expect.stringMatching(/listed twice/) }],
  ]);
}, 60_000);

it("device ids and value ids stored as one series: one warning per catalog read naming both; the second is not synced", async () => {
  const device = "values-box";
  const { pipeline, logLines } = await setUp("ids_same_series", [], (sim) => {
    for (const id of ["a\\b", "a/b", "x\ny", "x y", device]) sim.fleet.addDevice(id, "gridtied");
    for (const id of ["u\\v", "u/v"]) sim.fleet.addValue(device, "res", id);
  });
  const result = await runSync(pipeline);
  expect(result.status).toBe("ok");
  // neither was known before: the first in code unit order is kept
  const synced = result.devices.map((d) => d.deviceId);
  expect(synced).toEqual(expect.arrayContaining(["a/b", "x\ny", device]));
  expect(synced).not.toContain("a\\b");
  expect(synced).not.toContain("x y");
  const seen = warnings(logLines);
  expect(seen[0]).toEqual([
    { list: "device", id: "a\\b", reason: expect.stringContaining('same series as "a/b"') },
    { list: "device", id: "x y", reason: expect.stringContaining('same series as "x\\ny"') },
  ]);
  // one warning for the device's catalog read, naming the id in both resources that list it
  const valueWarnings = seen.filter((w) => w.some((s) => s.id === "u\\v"));
  expect(valueWarnings).toHaveLength(1);
  const named = (valueWarnings[0] ?? []).sort((a, b) => a.list.localeCompare(b.list));
  const reason = expect.stringContaining('same series as "u/v"');
  expect(named).toEqual([
    { list: "values of all_data", id: "u\\v", reason },
    { list: "values of res", id: "u\\v", reason },
  ]);
  expect(pipeline.store.catalog.list(device, "res")).toContain("u/v");
  expect(pipeline.store.catalog.list(device, "res")).not.toContain("u\\v");
  // the next tick reads no catalog: no new warning
  await runSync(pipeline);
  expect(warnings(logLines)).toEqual(seen);
}, 60_000);
