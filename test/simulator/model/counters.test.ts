import type { DataRecord } from "../../../src/records/data-record.js";
import { createFleet } from "../../../src/simulator/model/fleet.js";
import { clearHistories } from "../../../src/simulator/model/history.js";
import { parseValueId } from "../../../src/simulator/model/values.js";
import { dayStart, num, requestable, secondsOf } from "./helpers.js";

const fleet = createFleet({ seed: 3 });
const P = {
  solar: "e_03_01_00_000_total_solar_power",
  load: "e_03_01_00_000_total_load_power",
  battery: "e_03_01_00_000_total_battery_power",
  genset: "e_03_01_00_000_genset_power",
  other: "e_03_01_00_000_total_other_power",
};
/** Two values rounded to 3 decimals differ from the exact difference by at most 0.001. */
const ROUNDING = 0.0011;
const pos = (x: number) => Math.max(0, x);
const neg = (x: number) => Math.max(0, -x);
const id = (x: number) => x;

/** [device, counter, power it integrates, part counted, scale to the counter's unit] */
const COUNTERS: [string, string, string, (p: number) => number, number][] = [
  ["hybrid-site-01", "e_03_07_04_000_total_solar_energy", P.solar, id, 1],
  ["hybrid-site-01", "e_03_07_04_000_total_load_energy", P.load, id, 1],
  ["hybrid-site-01", "e_03_07_04_000_total_battery_energy", P.battery, pos, 1],
  ["hybrid-site-01", "e_03_07_04_000_total_export_energy", P.other, neg, 1],
  ["hybrid-site-01", "e_03_07_04_000_total_other_energy", P.other, pos, 1],
  ["hybrid-site-01", "e_03_08_04_001_reactive_energy", "e_03_15_00_001_AC_reactivepower", id, 1],
  ["hybrid-site-01", "e_03_30_04_001_apparent_energy", "e_00_09_00_001_AC_apparentpower", id, 1e-3],
  ["hybrid-site-01", "e_00_16_04_005_run_hours", "e_00_00_02_005_running", id, 1],
  ["offgrid-genset-02", "e_03_07_04_000_genset_energy", P.genset, id, 1],
  ["offgrid-genset-02", "e_03_07_04_000_total_battery_energy", P.battery, pos, 1],
  ["audit-box-03", "e_03_07_04_000_total_other_energy", P.other, pos, 1],
  ["audit-box-03", "e_03_07_04_000_genset_energy", P.genset, id, 1],
  ["site A+1", "e_03_07_04_000_total_export_energy", P.other, neg, 1],
  ["site A+1", "e_02_07_04_001_lifetime_energy", "e_03_01_00_001_AC_activepower_L1", id, 1e-3],
];

/** [device, daily counter, power, part counted] */
const DAILY: [string, string, string, (p: number) => number][] = [
  ["hybrid-site-01", "e_03_07_05_001_energy_today", P.solar, id],
  ["hybrid-site-01", "e_03_07_05_002_charge_energy_today", P.battery, neg],
  ["hybrid-site-01", "e_03_07_05_002_discharge_energy_today", P.battery, pos],
  ["site A+1", "e_03_07_05_001_energy_today", "e_03_01_00_001_AC_activepower_L1", id],
];

/** Values of `ids` per timestamp, merged over the readout rows. */
function table(device: string, ids: string[], fromS: number, toS: number): Map<number, DataRecord> {
  const out = new Map<number, DataRecord>();
  for (const r of fleet.records(device, "all_data", ids, fromS, toS)) {
    const t = secondsOf(r);
    const merged = out.get(t) ?? { timestamp: r.timestamp };
    for (const k of ids) if (r[k] !== null && r[k] !== undefined) merged[k] = r[k] ?? null;
    out.set(t, merged);
  }
  return out;
}

describe("cumulative counters", () => {
  it.each(COUNTERS)(
    "%s: %s grows by the sum of its power over the samples in between",
    (device, counter, power, part, scale) => {
      const from = dayStart(61) + 5 * 3600;
      const to = from + 36 * 3600;
      const rows = [...table(device, [counter, power], from, to).values()];
      let integral = 0;
      let worst = 0;
      let previous = num(rows[0], counter);
      const start = previous;
      for (const r of rows.slice(1)) {
        integral += (part(num(r, power)) * scale * 60) / 3600;
        const c = num(r, counter);
        expect(c).toBeGreaterThanOrEqual(previous);
        previous = c;
        worst = Math.max(worst, Math.abs(c - start - integral));
      }
      expect(worst).toBeLessThan(ROUNDING);
    },
  );

  it.each(COUNTERS)(
    "%s: %s rises from one day's end to the next by dayEnergyKwh",
    (device, counter) => {
      const ends = [40, 41, 42].map((d) =>
        num(
          fleet.records(device, "all_data", [counter], dayStart(d) - 60, dayStart(d) - 60)[0],
          counter,
        ),
      );
      for (const k of [1, 2]) {
        const rise = (ends[k] ?? 0) - (ends[k - 1] ?? 0);
        const day = fleet.dayEnergyKwh(device, counter, dayStart(39 + k));
        expect(Math.abs(rise - day)).toBeLessThan(ROUNDING);
      }
    },
  );

  it.each(["hybrid-site-01", "offgrid-genset-02", "audit-box-03", "site A+1"])(
    "%s: all type 04 and 05 values are non-decreasing within a day",
    (device) => {
      const counters = requestable(fleet, device).filter((v) =>
        [4, 5].includes(parseValueId(v)?.type ?? -1),
      );
      expect(counters.length).toBeGreaterThanOrEqual(10);
      const rows = table(device, counters, dayStart(70), dayStart(71) - 60);
      for (const c of counters) {
        const values = [...rows.values()].map((r) => num(r, c));
        for (let k = 1; k < values.length; k++)
          expect(values[k]).toBeGreaterThanOrEqual(values[k - 1] ?? 0);
      }
    },
  );

  it("holds the sum since commissioning even 600 days later", () => {
    clearHistories();
    const late = createFleet({ seed: 3 });
    const solar = "e_03_07_04_000_total_solar_energy";
    const at = dayStart(600) + 12 * 3600;
    const first = late.records("hybrid-site-01", "all_data", [solar], at, at);
    let sum = 0;
    for (let d = 0; d < 600; d++) sum += late.dayEnergyKwh("hybrid-site-01", solar, dayStart(d));
    const today = table("hybrid-site-01", [P.solar], dayStart(600), at);
    for (const r of today.values()) sum += num(r, P.solar) / 60;
    expect(num(first[0], solar)).toBeCloseTo(sum, 2);
    expect(sum).toBeGreaterThan(600 * 20);
    const again = late.records("hybrid-site-01", "all_data", [solar], at - 86_400, at);
    expect(again.at(-1)).toEqual(first[0]);
  });

  it.each(["hybrid-site-01", "offgrid-genset-02", "audit-box-03", "site A+1"])(
    "%s: savings are the solar energy counter times their multipliers",
    (device) => {
      const pairs: [string, string][] = [
        ["e_00_00_04_000_money_saved", "e_00_00_00_000_money_per_kWh"],
        ["e_00_00_04_000_revenue_created", "e_00_00_00_000_revenue_per_kWh"],
        ["e_03_23_04_000_CO2_saved", "e_00_00_00_000_CO2_saved_per_kWh"],
        ["e_00_00_04_000_trees_saved", "e_00_00_00_000_trees_saved_per_kWh"],
      ];
      const ids = ["e_03_07_04_000_total_solar_energy", ...pairs.flat()];
      for (const r of fleet.records(
        device,
        "all_data",
        ids,
        dayStart(90) + 43_200,
        dayStart(90) + 46_800,
      )) {
        const solar = num(r, "e_03_07_04_000_total_solar_energy");
        for (const [saved, per] of pairs) {
          expect(num(r, per)).toBeGreaterThan(0);
          expect(Math.abs(num(r, saved) - solar * num(r, per))).toBeLessThan(
            0.002 + 0.0005 * num(r, per),
          );
        }
      }
    },
  );
});

describe("daily-reset counters", () => {
  it.each(DAILY)(
    "%s: %s restarts at 00:00 UTC and ends the day at dayEnergyKwh",
    (device, counter, power, part) => {
      const d = 52;
      const rows = table(device, [counter, power], dayStart(d) - 120, dayStart(d + 1) + 60);
      const at = (t: number) => rows.get(t);
      const last = num(at(dayStart(d + 1) - 60), counter);
      expect(last).toBeCloseTo(fleet.dayEnergyKwh(device, counter, dayStart(d)), 3);
      expect(last).toBeGreaterThan(0);
      for (const t of [dayStart(d), dayStart(d + 1)]) {
        const own = (part(num(at(t), power)) * 60) / 3600;
        expect(num(at(t), counter)).toBeCloseTo(own, 3);
        expect(num(at(t), counter)).toBeLessThanOrEqual(num(at(t - 60), counter));
      }
      let sum = 0;
      for (let t = dayStart(d); t < dayStart(d + 1); t += 60) {
        sum += (part(num(at(t), power)) * 60) / 3600;
        expect(Math.abs(num(at(t), counter) - sum)).toBeLessThan(ROUNDING);
      }
    },
  );

  it("tells the day's energy of the site counters", () => {
    const day = dayStart(15);
    const rows = [...table("hybrid-site-01", [P.solar], day, day + 86_399).values()];
    const expected = rows.reduce((s, r) => s + num(r, P.solar) / 60, 0);
    expect(
      fleet.dayEnergyKwh("hybrid-site-01", "e_03_07_04_000_total_solar_energy", day),
    ).toBeCloseTo(expected, 6);
    expect(
      fleet.dayEnergyKwh("hybrid-site-01", "e_03_07_04_000_total_solar_energy", dayStart(-3)),
    ).toBe(0);
  });

  it("rejects non-counters, unknown devices and days not at 00:00 UTC", () => {
    expect(() => fleet.dayEnergyKwh("hybrid-site-01", P.solar, dayStart(1))).toThrow();
    expect(() =>
      fleet.dayEnergyKwh("nope", "e_03_07_04_000_total_solar_energy", dayStart(1)),
    ).toThrow();
    expect(() =>
      fleet.dayEnergyKwh("hybrid-site-01", "e_03_07_04_000_total_solar_energy", dayStart(1) + 5),
    ).toThrow(RangeError);
  });
});

describe("power balance", () => {
  it.each(["hybrid-site-01", "offgrid-genset-02", "audit-box-03", "site A+1"])(
    "%s: load = solar + battery + genset + other at every sample",
    (device) => {
      const rows = fleet.records(device, "all_data", Object.values(P), dayStart(33), dayStart(35));
      for (const r of rows) {
        const rest =
          num(r, P.load) - num(r, P.solar) - num(r, P.battery) - num(r, P.genset) - num(r, P.other);
        expect(Math.abs(rest)).toBeLessThan(1e-9);
      }
    },
  );

  it("holds with other resolutions too", () => {
    const coarse = createFleet({ seed: 3, resolutionS: 900 });
    const counter = "e_03_07_04_000_total_load_energy";
    const rows = coarse.records(
      "offgrid-genset-02",
      "all_data",
      [counter, P.load],
      dayStart(5),
      dayStart(6),
    );
    const c0 = num(rows[0], counter);
    const integral = rows.slice(1).reduce((s, r) => s + (num(r, P.load) * 900) / 3600, 0);
    expect(num(rows.at(-1), counter)).toBeCloseTo(c0 + integral, 2);
  });
});
