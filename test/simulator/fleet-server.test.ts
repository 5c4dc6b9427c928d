import got from "got";
import { NEW_VALUE_SPREAD_S, type Simulator } from "../../src/simulator/server.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const NOW = Date.UTC(2026, 10, 20, 12, 0, 0);
const NOW_S = NOW / 1000;
const DEVICE = "site-00020";
const NEW_ID = "e_00_04_00_010_inlet_temperature";
const SOLAR = "e_03_01_00_000_total_solar_power";

const http = got.extend({ throwHttpErrors: false, retry: { limit: 0 } });

/** A started simulator with a manual clock and a token of the demo user. */
async function harness(options: Parameters<typeof startTestSimulator>[0]) {
  const clock = new ManualClock(NOW);
  const sim = await startTestSimulator({ now: clock.now, ...options });
  const created = await http.post(`${sim.url}/create_token`, {
    headers: {
      "x-api-key": sim.apiKey,
      authorization: `Basic ${Buffer.from("demo:demo-password").toString("base64")}`,
    },
  });
  const { token } = JSON.parse(created.body) as { token: string };
  /** The answer's status and body text (a raw GET: the API client would refuse faulty data). */
  const raw = async (path: string, searchParams?: Record<string, string>) => {
    const res = await http.get(`${sim.url}/${path}`, {
      headers: { authorization: `Bearer ${token}` },
      searchParams,
    });
    return { status: res.statusCode, text: res.body };
  };
  const get = async (path: string, searchParams?: Record<string, string>) => {
    const { status, text } = await raw(path, searchParams);
    return { status, body: JSON.parse(text) as Record<string, unknown> };
  };
  return { sim, clock, get, raw };
}

describe("a simulator of many devices over HTTP", () => {
  let sim: Simulator | undefined;
  afterEach(() => sim?.close());

  it("lists every device and answers for generated ones", async () => {
    const h = await harness({ devices: 300 });
    sim = h.sim;
    const devices = await h.get("devices");
    expect(devices.body.device_ids).toHaveLength(300);
    expect(sim.fleet.builtDevices()).toBe(0);
    const resources = await h.get(`${DEVICE}/resources`);
    expect(resources.body.resource_ids).toEqual(sim.fleet.resourceIds(DEVICE));
    const data = await h.get(`data/${DEVICE}/all_data`, {
      values: SOLAR,
      from: "20250301T120000",
      to: "20250301T121000",
    });
    expect(data.status).toBe(200);
    expect(data.body).toHaveLength(11);
    expect((await h.get("site-00301/resources")).status).toBe(404);
  });

  it("shows a scheduled value exactly from its time on, and refuses its data before", async () => {
    const h = await harness({ devices: 50, newValueShare: 0 });
    sim = h.sim;
    const atS = NOW_S + 3_600;
    sim.fleet.scheduleValue(DEVICE, "all_data", NEW_ID, atS);
    const query = { values: NEW_ID, from: "20250101T000000", to: "20250101T000500" };
    const unknown = { ...query, values: "e_00_04_00_010_never_listed" };

    h.clock.nowMs = (atS - 1) * 1000;
    expect((await h.get(`${DEVICE}/all_data/values`)).body.values).not.toContain(NEW_ID);
    const early = await h.get(`data/${DEVICE}/all_data`, query);
    const never = await h.get(`data/${DEVICE}/all_data`, unknown);
    expect(early.status).toBe(404);
    expect(never.status).toBe(404);
    expect(early.body).toEqual({ error: `unknown value id: ${NEW_ID}` });
    expect(never.body).toEqual({ error: "unknown value id: e_00_04_00_010_never_listed" });

    h.clock.nowMs = atS * 1000;
    expect((await h.get(`${DEVICE}/all_data/values`)).body.values).toContain(NEW_ID);
    const data = await h.get(`data/${DEVICE}/all_data`, query);
    expect(data.status).toBe(200);
    expect(data.body).toHaveLength(6);
    const [fromS, toS] = [Date.UTC(2025, 0, 1), Date.UTC(2025, 0, 1, 0, 5)].map((ms) => ms / 1000);
    expect(data.body).toEqual(
      sim.fleet.records(DEVICE, "all_data", [NEW_ID], fromS ?? 0, toS ?? 0),
    );
  });

  it("schedules seeded new values within 7 days of its clock at start", async () => {
    const h = await harness({ devices: 200, tokenTtlS: 2 * NEW_VALUE_SPREAD_S });
    sim = h.sim;
    const scheduled = sim.fleet.scheduledValues();
    expect(scheduled.length).toBeGreaterThan(0);
    for (const s of scheduled) {
      expect(s.atS).toBeGreaterThanOrEqual(NOW_S);
      expect(s.atS).toBeLessThan(NOW_S + NEW_VALUE_SPREAD_S);
    }
    const [s] = scheduled;
    if (s === undefined) throw new Error("no scheduled value");
    const listed = async () => {
      const values = await h.get(`${s.deviceId}/${s.resourceId}/values`);
      const all = await h.get(`${s.deviceId}/all_data/values`);
      return [values, all].map((a) => (a.body.values as string[]).includes(s.valueId));
    };
    h.clock.nowMs = (s.atS - 1) * 1000;
    expect(await listed()).toEqual([false, false]);
    h.clock.nowMs = s.atS * 1000;
    expect(await listed()).toEqual([true, true]);
  });

  it("applies the data faults to generated devices", async () => {
    const h = await harness({
      devices: 30,
      dataFaults: {
        poisonRate: 1,
        outages: [{ deviceId: "site-00007", fromS: NOW_S - 86_400, toS: NOW_S + 86_400 }],
      },
    });
    sim = h.sim;
    const poisoned = await h.raw("data/site-00012/all_data", {
      values: SOLAR,
      from: "20250301T120000",
      to: "20250301T120100",
    });
    expect(poisoned.text).toContain(`"${SOLAR}":1e400`);
    expect(sim.rowHasFault("poison", "site-00012", "2025-03-01T12:00:00", 0)).toBe(true);
    expect(sim.isVisible("site-00007", NOW_S - 3_600, NOW_S)).toBe(false);
    expect(sim.isVisible("site-00008", NOW_S - 3_600, NOW_S)).toBe(true);
  });
});
