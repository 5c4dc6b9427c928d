/**
 * Value ids a `values=` list cannot carry (#33, item 5): the API's value list may hold an id with a
 * comma or white space, but GET /data takes "one value id, or several separated by commas, with no
 * spaces" (spec 4.4), so such an id would be cut in two (both halves unknown) or spoil its whole
 * request. Real parts: the simulator over HTTP listing such ids on every resource, an injected
 * clock, the run's influxd, a SQLite state file. The ids are refused at the catalog read with one
 * warning naming them, never stored, never requested; every other value is fetched as before.
 */

import { runSync } from "../../src/pipeline/sync.js";
import { createTestInfluxDb } from "../support/influx-db.js";
import { logEntries } from "../support/influx-writer.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const T0_MS = Date.UTC(2026, 5, 15, 12);
const HOUR_MS = 3_600_000;
/** Listed by every resource besides its own ids: none may travel in a values= list. */
const ODD = ["e_03_02_00_001_a,b", "e_03_02_00_001_two words", "e_03_02_00_001_tab\there", ""];
const WARNING =
  "value ids the API lists but cannot take in a values= list (a comma or white space): never fetched";

describe("value ids with a comma or white space", () => {
  it("are refused at each catalog read with one warning naming them, never stored or requested", async () => {
    const clock = new ManualClock(T0_MS);
    const sim = await startTestSimulator({
      now: clock.now,
      resolutionS: 300,
      extraListedValueIds: ODD,
    });
    const db = await createTestInfluxDb("unrequestable_values");
    const env = pipelineEnv(sim, db, tempStateDb(), {
      SYNC_START: "PT2H",
      CATALOG_REFRESH: "PT1H",
    });
    const { pipeline, logLines } = await openTestPipeline(env, () => new Date(clock.now()));
    try {
      const devices = sim.fleet.deviceIds();
      expect(devices.length).toBeGreaterThan(1);

      const first = await runSync(pipeline);
      expect(first.status).toBe("ok");
      clock.advance(5 * 60_000);
      expect((await runSync(pipeline)).status).toBe("ok"); // no catalog read: no warning
      clock.advance(HOUR_MS);
      expect((await runSync(pipeline)).status).toBe("ok"); // read again: warned again

      // one warning per device and catalog read (two reads), naming each odd id of each resource
      const warnings = logEntries(logLines, WARNING);
      expect(warnings).toHaveLength(2 * devices.length);
      for (const device of devices) {
        const own = warnings.filter((w) => w.device === device);
        expect(own).toHaveLength(2);
        const resources = sim.fleet.resourceIds(device) ?? [];
        const expected = resources.flatMap((resource) => ODD.map((value) => ({ resource, value })));
        for (const w of own) expect(w.refused).toEqual(expected);
      }

      // the state holds every listed id but the odd ones
      for (const device of devices) {
        for (const r of pipeline.store.catalog.device(device).resources) {
          const listed = sim.fleet.valueIds(device, r.resourceId) ?? [];
          expect([...r.values].sort()).toEqual([...listed].sort());
          for (const odd of ODD) expect(r.values).not.toContain(odd);
        }
      }

      // every data request asked for listed ids only, and the API answered each with 200
      const data = sim.requests.filter((r) => r.endpoint === "data");
      expect(data.length).toBeGreaterThan(0);
      for (const request of data) {
        expect(request.status).toBe(200);
        const [, device = "", resource = ""] = request.segments; // data/<device>/<resource>
        const listed = new Set(sim.fleet.valueIds(device, resource) ?? []);
        for (const id of (request.query.values ?? "").split(","))
          expect([id, listed.has(id)]).toEqual([id, true]);
      }
    } finally {
      await pipeline.close();
      await sim.close();
    }
  });
});
