import got from "got";
import type { DataRecord } from "../../src/records/data-record.js";
import {
  extraMembersFor,
  isVisibleAt,
  renderFaultedRecords,
} from "../../src/simulator/data-faults.js";
import {
  type DataFaultOptions,
  FAR_FUTURE_TIMESTAMP,
  POISON_TEXT,
  type Simulator,
  type SimulatorOptions,
  YEAR_ZERO_TIMESTAMP,
} from "../../src/simulator/server.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const NOW = Date.UTC(2026, 10, 20, 12, 0, 0);
const NOW_S = NOW / 1000;
const HOUR = 3600;
const DEV = "hybrid-site-01";
const SOLAR = "e_03_01_00_000_total_solar_power";
const LOAD = "e_03_01_00_000_total_load_power";
const SOC = "e_00_05_00_002_battery_SOC";
const VOLTAGE = "e_00_02_00_002_battery_voltage";

/** `YYYYMMDDTHHMMSS` of epoch seconds. */
const q = (s: number): string => new Date(s * 1000).toISOString().slice(0, 19).replace(/[-:]/g, "");
const sec = (timestamp: string): number => Date.parse(`${timestamp}Z`) / 1000;
const key = (r: DataRecord): string => `${r.timestamp}/${String(r.values_id)}`;

const http = got.extend({ throwHttpErrors: false, retry: { limit: 0 } });

interface Harness {
  sim: Simulator;
  clock: ManualClock;
  /** A raw GET (the API client would refuse the faulty data). */
  get(path: string): Promise<{ status: number; body: string; date: string | undefined }>;
  /** A raw GET of /data/<device>/<resource>. */
  data(
    device: string,
    resource: string,
    values: readonly string[],
    fromS: number,
    toS: number,
  ): Promise<string>;
}

const open: Harness[] = [];

async function harness(options: SimulatorOptions = {}): Promise<Harness> {
  const clock = new ManualClock(NOW);
  const sim = await startTestSimulator({ now: clock.now, rateClock: clock.now, ...options });
  const created = await http.post(`${sim.url}/create_token`, {
    headers: {
      authorization: `Basic ${Buffer.from("demo:demo-password").toString("base64")}`,
      "x-api-key": sim.apiKey,
    },
  });
  const { token } = JSON.parse(created.body) as { token: string };
  const get = async (path: string) => {
    const res = await http.get(`${sim.url}/${path}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    return { status: res.statusCode, body: res.body, date: res.headers.date };
  };
  const data = async (
    device: string,
    resource: string,
    values: readonly string[],
    fromS: number,
    toS: number,
  ) => {
    const query = `values=${values.join(",")}&from=${q(fromS)}&to=${q(toS)}`;
    const res = await get(
      `data/${encodeURIComponent(device)}/${encodeURIComponent(resource)}?${query}`,
    );
    expect(res.status).toBe(200);
    return res.body;
  };
  const h = { sim, clock, get, data };
  open.push(h);
  return h;
}

afterEach(async () => {
  for (const h of open.splice(0)) await h.sim.close();
});

/** The rows the fleet has (the truth before faults). */
const truth = (
  sim: Simulator,
  device: string,
  values: readonly string[],
  fromS: number,
  toS: number,
  resource = "all_data",
): DataRecord[] => sim.fleet.records(device, resource, values, fromS, toS);

describe("gateway outages", () => {
  it("pure rule: hidden while now < visibleAtS if fromS <= t < max(toS, visibleAtS)", () => {
    const o = [{ deviceId: "d", fromS: 100, toS: 200, visibleAtS: 300 }];
    expect(isVisibleAt(o, "d", 99, 250)).toBe(true);
    expect(isVisibleAt(o, "d", 100, 250)).toBe(false);
    expect(isVisibleAt(o, "d", 250, 250)).toBe(false);
    expect(isVisibleAt(o, "d", 299, 299)).toBe(false);
    expect(isVisibleAt(o, "d", 300, 299)).toBe(true);
    expect(isVisibleAt(o, "d", 150, 300)).toBe(true);
    expect(isVisibleAt(o, "other", 150, 250)).toBe(true);
    const plain = [{ deviceId: "d", fromS: 100, toS: 200 }];
    expect(isVisibleAt(plain, "d", 199, 199.5)).toBe(false);
    expect(isVisibleAt(plain, "d", 199, 200)).toBe(true);
    const dead = [{ deviceId: "d", fromS: 100, toS: 200, visibleAtS: Infinity }];
    expect(isVisibleAt(dead, "d", 1e9, 2e9)).toBe(false);
    expect(isVisibleAt(dead, "d", 99, 2e9)).toBe(true);
  });

  it("hides exactly the outage's rows, on every resource, until the uplink is back", async () => {
    const outage = { deviceId: DEV, fromS: NOW_S - 2 * HOUR, toS: NOW_S + 30 * 60 };
    const { sim, clock, data } = await harness({ dataFaults: { outages: [outage] } });
    const from = NOW_S - 3 * HOUR;
    const to = NOW_S + HOUR;

    const before = JSON.parse(await data(DEV, "all_data", [SOLAR], from, to)) as DataRecord[];
    expect(before).toEqual(truth(sim, DEV, [SOLAR], from, outage.fromS - 1));
    expect(before).toHaveLength(60);
    const battery = JSON.parse(await data(DEV, "battery_bank", [SOC], from, to)) as DataRecord[];
    expect(battery).toEqual(truth(sim, DEV, [SOC], from, outage.fromS - 1, "battery_bank"));
    const other = await data("site A+1", "all_data", [SOLAR], from, to);
    expect(other).toBe(JSON.stringify(truth(sim, "site A+1", [SOLAR], from, NOW_S)));

    clock.advance(30 * 60 * 1000 - 1000);
    const almost = JSON.parse(await data(DEV, "all_data", [SOLAR], from, to)) as DataRecord[];
    expect(almost).toHaveLength(60);
    clock.advance(1000);
    const after = await data(DEV, "all_data", [SOLAR], from, to);
    expect(after).toBe(JSON.stringify(truth(sim, DEV, [SOLAR], from, outage.toS)));
  });

  it("keeps records after the uplink is back behind the buffer until visibleAtS (FIFO)", async () => {
    const outage = {
      deviceId: DEV,
      fromS: NOW_S - 2 * HOUR,
      toS: NOW_S - HOUR,
      visibleAtS: NOW_S + 15 * 60,
    };
    const { sim, clock, data } = await harness({
      cacheResponses: true,
      dataFaults: { outages: [outage] },
    });
    const from = NOW_S - 3 * HOUR;
    const to = NOW_S + HOUR;
    const at = async () =>
      JSON.parse(await data(DEV, "all_data", [SOLAR], from, to)) as DataRecord[];
    const expected = () =>
      truth(sim, DEV, [SOLAR], from, Math.min(to, clock.nowMs / 1000)).filter((r) =>
        sim.isVisible(DEV, sec(r.timestamp), clock.nowMs / 1000),
      );

    const now = await at();
    expect(now).toEqual(expected());
    expect(now.at(-1)?.timestamp).toBe("2026-11-20T09:59:00");
    clock.advance(10 * 60 * 1000);
    expect(await at()).toEqual(now);
    clock.advance(5 * 60 * 1000);
    const uploaded = await at();
    expect(uploaded).toEqual(expected());
    expect(uploaded).toHaveLength(3 * 60 + 15 + 1);
    expect(uploaded.at(-1)?.timestamp).toBe("2026-11-20T12:15:00");
  });

  it("never shows a dead gateway's records (visibleAtS Infinity)", async () => {
    const outage = {
      deviceId: DEV,
      fromS: NOW_S - HOUR,
      toS: NOW_S - 30 * 60,
      visibleAtS: Infinity,
    };
    const { sim, clock, data } = await harness({
      tokenTtlS: 365 * 86_400,
      dataFaults: { outages: [outage] },
    });
    const rows = async (fromS: number, toS: number) =>
      JSON.parse(await data(DEV, "all_data", [SOLAR, SOC], fromS, toS)) as DataRecord[];
    expect(await rows(NOW_S - 2 * HOUR, NOW_S)).toEqual(
      truth(sim, DEV, [SOLAR, SOC], NOW_S - 2 * HOUR, outage.fromS - 1),
    );
    clock.advance(30 * 86_400 * 1000);
    expect(await rows(NOW_S - 2 * HOUR, NOW_S)).toHaveLength(2 * 60);
    expect(await rows(NOW_S + 29 * 86_400, NOW_S + 30 * 86_400)).toEqual([]);
    expect(sim.isVisible(DEV, NOW_S + 29 * 86_400, clock.nowMs / 1000)).toBe(false);
  });
});

describe("poison rows", () => {
  it("sends chosen rows' first non-meta member as the text 1e400, the rest unchanged", async () => {
    const { sim, data } = await harness({ dataFaults: { poisonRate: 0.05 } });
    const values = ["alarm_name", SOLAR, SOC];
    const from = NOW_S - 86_400;
    const body = await data(DEV, "all_data", values, from, NOW_S);
    const rows = JSON.parse(body) as DataRecord[];
    const expected = truth(sim, DEV, values, from, NOW_S);
    expect(rows).toHaveLength(expected.length);
    let poisoned = 0;
    expected.forEach((row, i) => {
      const sent = rows[i];
      if (sim.rowHasFault("poison", DEV, row.timestamp, row.values_id)) {
        poisoned++;
        const member = row.values_id === 0 ? SOLAR : SOC;
        expect(sent).toEqual({ ...row, [member]: Infinity });
      } else {
        expect(sent).toEqual(row);
      }
    });
    expect(poisoned).toBeGreaterThan(expected.length * 0.03);
    expect(poisoned).toBeLessThan(expected.length * 0.07);
    expect(body.split(`:${POISON_TEXT}`).length - 1).toBe(poisoned);
    expect(body).toContain(`"${SOLAR}":1e400,`);
  });

  it("poisons the same rows whatever values and window are requested", async () => {
    const { data } = await harness({ dataFaults: { poisonRate: 0.1 } });
    const poisonedKeys = async (values: string[], fromS: number, toS: number) => {
      const rows = JSON.parse(await data(DEV, "all_data", values, fromS, toS)) as DataRecord[];
      return new Set(
        rows.filter((r) => Object.values(r).includes(Number.POSITIVE_INFINITY)).map((r) => key(r)),
      );
    };
    const a = await poisonedKeys([SOLAR, SOC], NOW_S - 12 * HOUR, NOW_S);
    const b = await poisonedKeys(
      [VOLTAGE, "protocol_id", LOAD],
      NOW_S - 18 * HOUR,
      NOW_S - 6 * HOUR,
    );
    const overlap = (k: string) => {
      const t = sec(k.slice(0, 19));
      return t >= NOW_S - 12 * HOUR && t <= NOW_S - 6 * HOUR;
    };
    const aOverlap = [...a].filter(overlap).sort();
    expect(aOverlap.length).toBeGreaterThan(50);
    expect([...b].filter(overlap).sort()).toEqual(aOverlap);
  });
});

describe("extra members", () => {
  it("adds etl_run, a coded id and extra_<k> (numbers) to the chosen rows", async () => {
    const { sim, data } = await harness({ dataFaults: { extraMemberRate: 0.2 } });
    const values = [SOLAR, SOC];
    const from = NOW_S - 6 * HOUR;
    const rows = JSON.parse(await data(DEV, "all_data", values, from, NOW_S)) as DataRecord[];
    const expected = truth(sim, DEV, values, from, NOW_S);
    expect(rows).toHaveLength(expected.length);
    let chosen = 0;
    expected.forEach((row, i) => {
      if (sim.rowHasFault("extra-members", DEV, row.timestamp, row.values_id)) {
        chosen++;
        expect(rows[i]).toEqual({
          ...row,
          etl_run: 1,
          e_03_01_00_000_spoofed_power: 99_999.9,
          extra_1: 1,
        });
        expect(Object.keys(rows[i] ?? {}).slice(-3)).toEqual([
          "etl_run",
          "e_03_01_00_000_spoofed_power",
          "extra_1",
        ]);
      } else {
        expect(rows[i]).toEqual(row);
      }
    });
    expect(chosen).toBeGreaterThan(expected.length * 0.12);
    expect(chosen).toBeLessThan(expected.length * 0.28);
  });

  it("sends 10,000-key records", async () => {
    const { sim, data } = await harness({
      dataFaults: { extraMemberRate: 1, extraMembers: 10_000 },
    });
    const rows = JSON.parse(
      await data(DEV, "all_data", [SOLAR, SOC], NOW_S - 120, NOW_S),
    ) as DataRecord[];
    expect(rows).toHaveLength(6);
    for (const row of rows) {
      expect(Object.keys(row)).toHaveLength(4 + 10_000);
      expect(row.extra_9998).toBe(9998);
      expect(row.etl_run).toBe(1);
    }
    expect(sim.rowHasFault("extra-members", DEV, "2026-11-20T11:58:00", 2)).toBe(true);
  });

  it("never reuses a member name the row has", () => {
    const names = extraMembersFor(4, new Set(["etl_run", "extra_1"])).map((m) => m.name);
    expect(names).toEqual(["e_03_01_00_000_spoofed_power", "extra_2", "extra_3", "extra_4"]);
    expect(extraMembersFor(1, new Set())).toEqual([{ name: "etl_run", value: 1 }]);
  });
});

describe("out-of-window rows", () => {
  it("appends rows at 2300-01-01 and 0000-01-01 with values_id and the requested members", async () => {
    const { sim, data } = await harness({ dataFaults: { outOfWindowRate: 1 } });
    const values = [SOC, SOLAR];
    const from = NOW_S - HOUR;
    const rows = JSON.parse(await data(DEV, "all_data", values, from, NOW_S)) as DataRecord[];
    const expected = truth(sim, DEV, values, from, NOW_S);
    expect(rows.slice(0, -2)).toEqual(expected);
    const [future, zero] = rows.slice(-2);
    expect(future?.timestamp).toBe(FAR_FUTURE_TIMESTAMP);
    expect(zero?.timestamp).toBe(YEAR_ZERO_TIMESTAMP);
    for (const row of [future, zero]) {
      expect(Object.keys(row ?? {})).toEqual(Object.keys(expected[0] ?? {}));
      expect(typeof row?.values_id).toBe("number");
      expect(typeof row?.[SOLAR]).toBe("number");
    }
  });

  it("chooses answers per request, as hasOutOfWindowRows says", async () => {
    const { sim, data } = await harness({ dataFaults: { outOfWindowRate: 0.5 } });
    const seen = new Set<boolean>();
    for (let i = 0; i < 12; i++) {
      const fromS = NOW_S - (i + 1) * HOUR;
      const body = await data(DEV, "all_data", [SOLAR], fromS, NOW_S);
      const has = body.includes(FAR_FUTURE_TIMESTAMP) && body.includes(YEAR_ZERO_TIMESTAMP);
      expect(has).toBe(
        sim.hasOutOfWindowRows(DEV, "all_data", { values: SOLAR, from: q(fromS), to: q(NOW_S) }),
      );
      expect(await data(DEV, "all_data", [SOLAR], fromS, NOW_S)).toBe(body);
      seen.add(has);
    }
    expect(seen).toEqual(new Set([true, false]));
  });
});

describe("duplicate rows", () => {
  it("follows chosen rows with a copy whose numbers (but values_id) are + 1", async () => {
    const { sim, data } = await harness({ dataFaults: { duplicateRate: 0.1 } });
    const values = ["protocol_id", "alarm_name", SOLAR, SOC];
    const from = NOW_S - 6 * HOUR;
    const rows = JSON.parse(await data(DEV, "all_data", values, from, NOW_S)) as DataRecord[];
    const expected = truth(sim, DEV, values, from, NOW_S);
    let at = 0;
    let copies = 0;
    for (const row of expected) {
      expect(rows[at++]).toEqual(row);
      if (!sim.rowHasFault("duplicate", DEV, row.timestamp, row.values_id)) continue;
      copies++;
      const bumped = Object.fromEntries(
        Object.entries(row).map(([k, v]) => [
          k,
          k !== "values_id" && typeof v === "number" ? v + 1 : v,
        ]),
      );
      expect(rows[at++]).toEqual(bumped);
    }
    expect(rows).toHaveLength(at);
    expect(copies).toBeGreaterThan(expected.length * 0.05);
    expect(copies).toBeLessThan(expected.length * 0.15);
  });
});

describe("all data faults together", () => {
  const ALL: DataFaultOptions = {
    outages: [
      { deviceId: DEV, fromS: NOW_S - 2 * HOUR, toS: NOW_S - HOUR, visibleAtS: NOW_S + HOUR },
    ],
    poisonRate: 0.1,
    extraMemberRate: 0.1,
    outOfWindowRate: 0.5,
    duplicateRate: 0.1,
  };
  const body = async (seed: number) => {
    const h = await harness({ seed, dataFaults: ALL });
    return h.data(DEV, "all_data", [SOLAR, SOC], NOW_S - 86_400, NOW_S);
  };

  it("is deterministic: the same seed gives the same bytes, another seed other choices", async () => {
    const [a, b, c] = [await body(5), await body(5), await body(6)];
    expect(a).toBe(b);
    expect(a).toContain(POISON_TEXT);
    expect(a).toContain("etl_run");
    expect(a).not.toBe(c);
    const [s5, s6] = [
      await harness({ seed: 5, dataFaults: ALL }),
      await harness({ seed: 6, dataFaults: ALL }),
    ];
    const rows = truth(s5.sim, DEV, [SOLAR], NOW_S - 86_400, NOW_S);
    const picks = (sim: Simulator) =>
      rows.map((r) => [
        sim.rowHasFault("poison", DEV, r.timestamp, r.values_id),
        sim.rowHasFault("extra-members", DEV, r.timestamp, r.values_id),
        sim.rowHasFault("duplicate", DEV, r.timestamp, r.values_id),
      ]);
    expect(picks(s5.sim)).toEqual(picks(s5.sim));
    expect(picks(s5.sim)).not.toEqual(picks(s6.sim));
  });

  it("chooses each fault independently (a row's fault says nothing of the others)", async () => {
    const { sim } = await harness({
      dataFaults: { poisonRate: 0.5, duplicateRate: 0.5, extraMemberRate: 0.5 },
    });
    const rows = truth(sim, DEV, [SOLAR], NOW_S - 86_400, NOW_S);
    const both = rows.filter(
      (r) =>
        sim.rowHasFault("poison", DEV, r.timestamp, r.values_id) &&
        sim.rowHasFault("duplicate", DEV, r.timestamp, r.values_id),
    ).length;
    expect(both / rows.length).toBeGreaterThan(0.2);
    expect(both / rows.length).toBeLessThan(0.3);
  });
});

describe("no data fault", () => {
  it("sends the same bytes as JSON.stringify of the records at rate 0, with or without faults set", async () => {
    const values = [SOLAR, SOC, "alarm_name"];
    const from = NOW_S - 86_400;
    const zero: DataFaultOptions = {
      outages: [],
      poisonRate: 0,
      extraMemberRate: 0,
      extraMembers: 3,
      outOfWindowRate: 0,
      duplicateRate: 0,
    };
    const { sim, data } = await harness({ dataFaults: zero, cacheResponses: true });
    const expected = JSON.stringify(truth(sim, DEV, values, from, NOW_S));
    expect(await data(DEV, "all_data", values, from, NOW_S)).toBe(expected);
    sim.dataFaults = {
      outages: [{ deviceId: "site A+1", fromS: from, toS: NOW_S }],
      poisonRate: 0,
    };
    expect(await data(DEV, "all_data", values, from, NOW_S)).toBe(expected);
    sim.dataFaults = {};
    expect(await data(DEV, "all_data", values, from, NOW_S)).toBe(expected);
  });

  it("renders records row by row exactly as JSON.stringify when no row is chosen", () => {
    const records: DataRecord[] = [
      { timestamp: "2026-01-01T00:00:00", values_id: 0, a: 1.5, b: null, c: 'x"y', d: true },
      { timestamp: "2026-01-01T00:01:00", values_id: 2, a: null, b: -0.25, c: null, d: false },
    ];
    expect(
      renderFaultedRecords({ seed: 1, faults: {}, deviceId: "d", records, appended: [] }),
    ).toBe(JSON.stringify(records));
  });
});

describe("Date header", () => {
  it("shows the simulator's clock on successes, errors, 404s and 429s", async () => {
    const { sim, clock, get } = await harness();
    const expected = () => new Date(clock.nowMs).toUTCString();
    expect((await get("devices")).date).toBe(expected());
    expect(expected()).toBe("Fri, 20 Nov 2026 12:00:00 GMT");
    clock.advance(90_500);
    const data = await get(
      `data/${DEV}/all_data?values=${SOLAR}&from=20261120T110000&to=20261120T120000`,
    );
    expect(data.status).toBe(200);
    expect(data.date).toBe("Fri, 20 Nov 2026 12:01:30 GMT");
    const missing = await get("nope/resources");
    expect([missing.status, missing.date]).toEqual([404, expected()]);
    const unauthorized = await http.get(`${sim.url}/devices`);
    expect([unauthorized.statusCode, unauthorized.headers.date]).toEqual([401, expected()]);
    const bad = await get(`data/${DEV}/all_data?values=${SOLAR}`);
    expect([bad.status, bad.date]).toEqual([400, expected()]);
    sim.rateLimit = { perSecond: 1 };
    clock.advance(1000);
    await get("devices");
    const limited = await get("devices");
    expect([limited.status, limited.date]).toEqual([429, expected()]);
    sim.rateLimit = undefined;
    sim.faults = { errorRate: 1 };
    const failed = await get("devices");
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(failed.date).toBe(expected());
  });

  it("dates Retry-After on the same clock, whatever the rate limit's clock", async () => {
    const rateClock = new ManualClock(5_000);
    const { sim, get } = await harness({ rateClock: rateClock.now });
    sim.rateLimit = { perSecond: 1, retryAfterStyle: "http-date" };
    await get("devices");
    const limited = await http.get(`${sim.url}/devices`);
    expect(limited.statusCode).toBe(429);
    expect(limited.headers.date).toBe("Fri, 20 Nov 2026 12:00:00 GMT");
    expect(limited.headers["retry-after"]).toBe("Fri, 20 Nov 2026 12:00:02 GMT");
  });
});
