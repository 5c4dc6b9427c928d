import got from "got";
import type { DataRecord } from "../../../src/records/data-record.js";
import {
  type CounterFall,
  type CounterFaultOptions,
  checkCounterFaults,
  counterFaultsActive,
  counterTypeOf,
  dailyOffsetFor,
  decimalsOf,
  fallenReading,
  fallFor,
} from "../../../src/simulator/model/counter-faults.js";
import { createFleet, type FleetOptions } from "../../../src/simulator/model/fleet.js";
import { startTestSimulator } from "../../support/simulator.js";
import { dayStart, requestable, secondsOf } from "./helpers.js";

const RES = 300;
const SEED = 7;
const FROM = dayStart(150);
/** Two days of 5-minute records. */
const TO = dayStart(152) - RES;
const ON: CounterFaultOptions = {
  shallowDipRate: 0.15,
  deepDipRate: 0.15,
  zeroRate: 0.15,
  dailyOffsetMax: 0.5,
};
const HYBRID = "hybrid-site-01";
const SOLAR_TOTAL = "e_03_07_04_000_total_solar_energy";
const TODAY = "e_03_07_05_001_energy_today";
const CHARGE_TODAY = "e_03_07_05_002_charge_energy_today";
const SOLAR_POWER = "e_03_01_00_000_total_solar_power";

/** [device, counter, its type code] */
const COUNTERS: [string, string, 4 | 5][] = [
  [HYBRID, SOLAR_TOTAL, 4],
  [HYBRID, "e_03_07_04_000_total_load_energy", 4],
  ["site A+1", "e_02_07_04_001_lifetime_energy", 4],
  [HYBRID, TODAY, 5],
  [HYBRID, CHARGE_TODAY, 5],
  ["offgrid-genset-02", "e_00_24_05_003_pump_runtime_today", 5],
];

const r3 = (x: number): number => Math.round(x * 1000) / 1000;
const fleetWith = (options: Partial<FleetOptions> = {}) =>
  createFleet({ seed: SEED, resolutionS: RES, ...options });

/** [timestamp, reading] of one counter's numeric members. */
function readings(
  options: Partial<FleetOptions>,
  device: string,
  id: string,
  ids: readonly string[] = [id],
  resource = "all_data",
): [string, number][] {
  return fleetWith(options)
    .records(device, resource, ids, FROM, TO)
    .flatMap((r): [string, number][] => {
      const v = r[id];
      return typeof v === "number" ? [[r.timestamp, v]] : [];
    });
}

type Seen = "none" | "shallow" | "deep" | "zero" | "other";

/** What happened to a reading, by the documented ranges: shallow 0.001 to 8 % off, deep 15 to 60 %, zero. */
function seen(served: number, truth: number): Seen {
  if (served === truth) return "none";
  if (served === 0 && truth > 0) return "zero";
  const off = truth - served;
  if (off >= 0.001 - 1e-9 && served >= 0.92 * truth - 0.0005) return "shallow";
  if (served >= 0.4 * truth - 0.0005 && served <= 0.85 * truth + 0.0005) return "deep";
  return "other";
}

/** The most common value of a list. */
function mode(values: readonly number[]): number {
  const counts = new Map<number, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? Number.NaN;
}

/** The truth as served: a type-05 counter's readings plus its day's offset (the most common difference of the day). */
function shiftedTruth(served: [string, number][], truth: [string, number][]): number[] {
  const offsets = new Map<string, number[]>();
  truth.forEach(([timestamp, t], i) => {
    const day = timestamp.slice(0, 10);
    const list = offsets.get(day) ?? [];
    list.push(r3((served[i]?.[1] ?? Number.NaN) - t));
    offsets.set(day, list);
  });
  return truth.map(([timestamp, t]) => r3(t + mode(offsets.get(timestamp.slice(0, 10)) ?? [])));
}

describe("counter faults: the pure functions", () => {
  it.each([
    [SOLAR_TOTAL, 4],
    ["e_02_07_04_001_lifetime_energy", 4],
    [TODAY, 5],
    ["e_00_24_05_003_pump_runtime_today", 5],
    [SOLAR_POWER, undefined],
    ["e_00_00_03_001_operating_mode", undefined],
    ["values_id", undefined],
    ["alarm_name", undefined],
    ["e_03_07_4_000_short_code", undefined],
    ["total_energy_04", undefined],
  ])("counterTypeOf(%s) = %s", (id, type) => {
    expect(counterTypeOf(id)).toBe(type);
  });

  const RATES: CounterFaultOptions = { shallowDipRate: 0.1, deepDipRate: 0.2, zeroRate: 0.3 };
  it.each<[number, number, CounterFall | undefined]>([
    [0, 0.5, { kind: "shallow-dip", depth: 0.001 + 0.079 * (0.25 / 0.75) }],
    [0.05, 0.1, { kind: "shallow-dip", depth: 0 }],
    [0.0999, 0.25, { kind: "shallow-dip", depth: 0.001 }],
    [0.1, 0, { kind: "deep-dip", depth: 0.15 }],
    [0.2999, 0.5, { kind: "deep-dip", depth: 0.375 }],
    [0.3001, 0.9, { kind: "zero" }],
    [0.5999, 0, { kind: "zero" }],
    [0.6001, 0, undefined],
    [0.99, 0.5, undefined],
  ])("fallFor(rates 0.1/0.2/0.3, kind draw %s, depth draw %s)", (kindDraw, depthDraw, fall) => {
    const got = fallFor(RATES, kindDraw, depthDraw);
    expect(got?.kind).toBe(fall?.kind);
    if (got && "depth" in got && fall && "depth" in fall)
      expect(got.depth).toBeCloseTo(fall.depth, 12);
  });

  it("fallFor draws nothing when every rate is 0", () => {
    expect(fallFor({}, 0, 0)).toBeUndefined();
    expect(fallFor({ dailyOffsetMax: 3 }, 0, 0.5)).toBeUndefined();
  });

  it.each<[number, CounterFall, number]>([
    [100, { kind: "zero" }, 0],
    [0.05, { kind: "zero" }, 0],
    [100, { kind: "deep-dip", depth: 0.25 }, 75],
    [12.345, { kind: "deep-dip", depth: 0.6 }, 4.938],
    [100, { kind: "shallow-dip", depth: 0.05 }, 95],
    [100, { kind: "shallow-dip", depth: 0 }, 99.999],
    [1, { kind: "shallow-dip", depth: 0.0004 }, 0.999],
    [0.1, { kind: "shallow-dip", depth: 0.08 }, 0.092],
    [0.099, { kind: "shallow-dip", depth: 0.08 }, 0.099],
    [0.099, { kind: "deep-dip", depth: 0.5 }, 0.099],
    [0, { kind: "deep-dip", depth: 0.5 }, 0],
    [16.809606, { kind: "shallow-dip", depth: 0 }, 16.808606],
    [16.809606, { kind: "deep-dip", depth: 0.5 }, 8.404803],
    [16.8, { kind: "deep-dip", depth: 0.5 }, 8.4],
  ])("fallenReading(%s, %j) = %s", (value, fall, reported) => {
    expect(fallenReading(value, fall)).toBe(reported);
  });

  it.each([
    [100, 3],
    [0.5, 3],
    [12.345, 3],
    [16.809606, 6],
    [1e-10, 3],
  ])("decimalsOf(%s) = %s", (value, places) => {
    expect(decimalsOf(value)).toBe(places);
  });

  it.each([
    [0.5, 0, 0.25],
    [0.5, 0.5, 0.375],
    [0.5, 0.9999999, 0.5],
    [2, 0.1, 1.1],
    [0.0001, 0.5, 0.001],
    [0, 0.5, 0],
  ])("dailyOffsetFor(max %s, draw %s) = %s", (max, draw, offset) => {
    expect(dailyOffsetFor(max, draw)).toBe(offset);
  });

  it.each<[string, CounterFaultOptions | undefined, boolean]>([
    ["absent", undefined, false],
    ["empty", {}, false],
    ["all 0", { shallowDipRate: 0, deepDipRate: 0, zeroRate: 0, dailyOffsetMax: 0 }, false],
    ["no device", { deviceIds: [], zeroRate: 0.5 }, false],
    ["a shallow rate", { shallowDipRate: 0.01 }, true],
    ["a deep rate", { deepDipRate: 0.01 }, true],
    ["a zero rate", { zeroRate: 0.01 }, true],
    ["a daily offset", { dailyOffsetMax: 0.1 }, true],
    ["one device", { deviceIds: [HYBRID], zeroRate: 0.5 }, true],
  ])("counterFaultsActive: %s -> %s", (_name, faults, active) => {
    expect(counterFaultsActive(faults)).toBe(active);
  });

  it.each<[string, CounterFaultOptions]>([
    ["a rate above 1", { zeroRate: 1.5 }],
    ["a negative rate", { shallowDipRate: -0.1 }],
    ["a NaN rate", { deepDipRate: Number.NaN }],
    ["rates over 1 in all", { shallowDipRate: 0.5, deepDipRate: 0.3, zeroRate: 0.3 }],
    ["a negative offset", { dailyOffsetMax: -1 }],
    ["an infinite offset", { dailyOffsetMax: Number.POSITIVE_INFINITY }],
  ])("refuses %s (checkCounterFaults and createFleet)", (_name, faults) => {
    expect(() => checkCounterFaults(faults)).toThrow(RangeError);
    expect(() => fleetWith({ counterFaults: faults })).toThrow(RangeError);
  });
});

describe("counter faults through the fleet", () => {
  it.each(COUNTERS)("%s %s (type %s): every kind of fall, over 2 days at 300 s", (device, id) => {
    const served = readings({ counterFaults: ON }, device, id);
    const truth = readings({}, device, id);
    expect(served.map(([t]) => t)).toEqual(truth.map(([t]) => t));
    expect(served).toHaveLength(2 * 288);
    const shifted =
      id.split("_")[3] === "05" ? shiftedTruth(served, truth) : truth.map(([, v]) => v);
    const kinds = served.map(([, v], i) => seen(v, shifted[i] ?? Number.NaN));
    const count = (k: Seen) => kinds.filter((x) => x === k).length;
    expect(count("other")).toBe(0);
    // 0.15 each of 576 readings: about 86 each; far from it is a broken draw
    for (const k of ["shallow", "deep", "zero"] as const) {
      expect(count(k)).toBeGreaterThan(50);
      expect(count(k)).toBeLessThan(130);
    }
    // a jitter (0.001 off) among the shallow dips
    expect(served.some(([, v], i) => r3((shifted[i] ?? 0) - v) === 0.001)).toBe(true);
    // several falls (a reading below the one before) in most hours
    const falls = new Map<string, number>();
    served.forEach(([timestamp, v], i) => {
      const before = served[i - 1]?.[1];
      if (before !== undefined && v < before) {
        falls.set(timestamp.slice(0, 13), (falls.get(timestamp.slice(0, 13)) ?? 0) + 1);
      }
    });
    expect([...falls.values()].filter((n) => n >= 2).length).toBeGreaterThanOrEqual(36);
  });

  it.each(COUNTERS.filter(([, , type]) => type === 5))(
    "%s %s: with dailyOffsetMax alone every day starts above 0, and falls at midnight",
    (device, id) => {
      const max = 0.5;
      const served = readings({ counterFaults: { dailyOffsetMax: max } }, device, id);
      const truth = readings({}, device, id);
      const offsets = new Map<string, Set<number>>();
      served.forEach(([timestamp, v], i) => {
        const day = timestamp.slice(0, 10);
        offsets.set(day, (offsets.get(day) ?? new Set()).add(r3(v - (truth[i]?.[1] ?? 0))));
      });
      expect([...offsets.keys()]).toHaveLength(2);
      for (const set of offsets.values()) {
        expect(set.size).toBe(1);
        const [offset = 0] = set;
        expect(offset).toBeGreaterThanOrEqual(max / 2);
        expect(offset).toBeLessThanOrEqual(max);
      }
      const firsts = served.filter(([timestamp]) => timestamp.endsWith("T00:00:00"));
      expect(firsts).toHaveLength(2);
      for (const [timestamp, v] of firsts) {
        expect(truth.find(([t]) => t === timestamp)?.[1]).toBe(0);
        expect(v).toBeGreaterThan(0);
      }
      const midnight = served.findIndex(([timestamp]) => timestamp === firsts[1]?.[0]);
      const dayEnd = truth[midnight - 1]?.[1] ?? 0;
      if (dayEnd > max) expect(served[midnight]?.[1]).toBeLessThan(served[midnight - 1]?.[1] ?? 0);
    },
  );

  it("shifts only type-05 counters by the day's offset", () => {
    for (const [device, id] of COUNTERS.filter(([, , type]) => type === 4)) {
      expect(readings({ counterFaults: { dailyOffsetMax: 5 } }, device, id)).toEqual(
        readings({}, device, id),
      );
    }
  });

  it.each(COUNTERS)(
    "%s %s: a reading is the same alone, with others and in another window",
    (device, id) => {
      const faulted = fleetWith({ counterFaults: ON });
      const ids = requestable(faulted, device);
      const at = (records: DataRecord[]) =>
        new Map(
          records.flatMap((r) => {
            const v = r[id];
            return typeof v === "number" ? [[`${r.timestamp}/${String(r.values_id)}`, v]] : [];
          }),
        );
      const alone = at(faulted.records(device, "all_data", [id], FROM, TO));
      const all = at(fleetWith({ counterFaults: ON }).records(device, "all_data", ids, FROM, TO));
      const later = at(
        faulted.records(device, "all_data", [id, SOLAR_POWER], FROM + 7 * 3600 + 300, TO - 3600),
      );
      expect(all).toEqual(alone);
      expect(later.size).toBeGreaterThan(400);
      for (const [key, v] of later) expect(v).toBe(alone.get(key));
      if (faulted.valueIds(device, "battery_bank")?.includes(id)) {
        const bank = at(faulted.records(device, "battery_bank", [id], FROM, TO));
        expect(bank).toEqual(alone);
      }
    },
  );

  it("changes only counter values, only of the listed devices", () => {
    const faults = { ...ON, deviceIds: [HYBRID] };
    for (const device of ["hybrid-site-01", "offgrid-genset-02", "site A+1"]) {
      const plain = fleetWith();
      const ids = requestable(plain, device);
      const truth = plain.records(device, "all_data", ids, FROM, FROM + 6 * 3600);
      const served = fleetWith({ counterFaults: faults }).records(
        device,
        "all_data",
        ids,
        FROM,
        FROM + 6 * 3600,
      );
      if (device !== HYBRID) {
        expect(JSON.stringify(served)).toBe(JSON.stringify(truth));
        continue;
      }
      const isCounter = (id: string) => /^e_\d{2}_\d{2}_0[45]_\d{3}_/.test(id);
      const strip = (records: DataRecord[]) =>
        records.map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => !isCounter(k))));
      expect(strip(served)).toEqual(strip(truth));
      expect(served).not.toEqual(truth);
    }
  });

  it.each<[string, CounterFaultOptions | undefined]>([
    ["absent", undefined],
    ["{}", {}],
    ["every rate 0", { shallowDipRate: 0, deepDipRate: 0, zeroRate: 0, dailyOffsetMax: 0 }],
    ["no device listed", { deviceIds: [], shallowDipRate: 0.3, zeroRate: 0.3 }],
  ])("with the knob off (%s) the records are those of a fleet without it", (_name, faults) => {
    for (const device of ["hybrid-site-01", "offgrid-genset-02", "audit-box-03", "site A+1"]) {
      const plain = fleetWith();
      const ids = requestable(plain, device);
      const off = fleetWith(faults === undefined ? {} : { counterFaults: faults });
      const a = JSON.stringify(off.records(device, "all_data", ids, FROM, FROM + 86_400));
      expect(a).toBe(JSON.stringify(plain.records(device, "all_data", ids, FROM, FROM + 86_400)));
    }
  });

  it("applies after counterResets: falls are relative to the reset counter", () => {
    const reset = { deviceId: HYBRID, valueId: SOLAR_TOTAL, atS: FROM + 86_400 + 3600 };
    const served = readings({ counterResets: [reset], counterFaults: ON }, HYBRID, SOLAR_TOTAL);
    const truth = readings({ counterResets: [reset] }, HYBRID, SOLAR_TOTAL);
    const kinds = served.map(([, v], i) => seen(v, truth[i]?.[1] ?? Number.NaN));
    expect(kinds.filter((k) => k === "other")).toEqual([]);
    const after = truth.findIndex(([timestamp]) => secondsOf({ timestamp }) >= reset.atS);
    expect(truth[after]?.[1]).toBeLessThan(10);
  });

  it("leaves the fleet's truth helpers fault-free (dayEnergyKwh)", () => {
    const faulted = fleetWith({ counterFaults: ON });
    const day = faulted.dayEnergyKwh(HYBRID, SOLAR_TOTAL, FROM);
    expect(day).toBeGreaterThan(1);
    expect(day).toBe(fleetWith().dayEnergyKwh(HYBRID, SOLAR_TOTAL, FROM));
  });
});

describe("counter faults over HTTP", () => {
  it("serves fleet.records, the same from the response cache", async () => {
    const now = FROM + 2 * 86_400;
    const sim = await startTestSimulator({
      seed: SEED,
      resolutionS: RES,
      now: () => now * 1000,
      cacheResponses: true,
      counterFaults: ON,
    });
    try {
      const http = got.extend({ throwHttpErrors: false, retry: { limit: 0 } });
      const created = await http.post(`${sim.url}/create_token`, {
        headers: {
          authorization: `Basic ${Buffer.from("demo:demo-password").toString("base64")}`,
          "x-api-key": sim.apiKey,
        },
      });
      const { token } = JSON.parse(created.body) as { token: string };
      const q = (s: number) => new Date(s * 1000).toISOString().slice(0, 19).replace(/[-:]/g, "");
      const url = `${sim.url}/data/${HYBRID}/all_data?values=${TODAY},${SOLAR_TOTAL}&from=${q(FROM)}&to=${q(TO)}`;
      const headers = { authorization: `Bearer ${token}` };
      const first = await http.get(url, { headers });
      const second = await http.get(url, { headers });
      const expected = JSON.stringify(
        sim.fleet.records(HYBRID, "all_data", [TODAY, SOLAR_TOTAL], FROM, TO),
      );
      expect(first.statusCode).toBe(200);
      expect(first.body).toBe(expected);
      expect(second.body).toBe(expected);
      const plain = fleetWith().records(HYBRID, "all_data", [TODAY, SOLAR_TOTAL], FROM, TO);
      expect(first.body).not.toBe(JSON.stringify(plain));
    } finally {
      await sim.close();
    }
  });
});
