import type { DataRecord } from "../../../src/records/data-record.js";
import { createFleet } from "../../../src/simulator/model/fleet.js";
import { dayStart, num, rowsOf, secondsOf } from "./helpers.js";

const DEVICES = ["hybrid-site-01", "offgrid-genset-02", "audit-box-03", "site A+1"];
const P = {
  solar: "e_03_01_00_000_total_solar_power",
  load: "e_03_01_00_000_total_load_power",
  battery: "e_03_01_00_000_total_battery_power",
  genset: "e_03_01_00_000_genset_power",
  other: "e_03_01_00_000_total_other_power",
};
const MODE = "e_00_00_03_001_operating_mode";
const fleet = createFleet({ seed: 2 });
/** A coarse fleet of the same seed, for checks over a whole year. */
const quarterHourly = createFleet({ seed: 2, resolutionS: 900 });
const hourOf = (r: DataRecord) => (secondsOf(r) % 86_400) / 3600;

function site(f: typeof fleet, device: string, fromDay: number, toDay: number): DataRecord[] {
  return f.records(device, "all_data", Object.values(P), dayStart(fromDay), dayStart(toDay) - 1);
}

function byDay(rows: DataRecord[]): Map<number, DataRecord[]> {
  const days = new Map<number, DataRecord[]>();
  for (const r of rows) {
    const d = Math.floor(secondsOf(r) / 86_400);
    days.set(d, [...(days.get(d) ?? []), r]);
  }
  return days;
}

describe("solar", () => {
  it.each(DEVICES)("%s: is 0 at night and positive at noon, every day for two months", (device) => {
    for (let d = 100; d < 160; d++) {
      for (const h of [0, 2, 4, 21, 23]) {
        const r = fleet.records(
          device,
          "all_data",
          [P.solar],
          dayStart(d) + h * 3600,
          dayStart(d) + h * 3600,
        );
        expect(num(r[0], P.solar)).toBe(0);
      }
      const noon = fleet.records(
        device,
        "all_data",
        [P.solar],
        dayStart(d) + 12 * 3600,
        dayStart(d) + 12 * 3600,
      );
      expect(num(noon[0], P.solar)).toBeGreaterThan(0);
    }
  });

  it("follows a day curve with sunrise around 6 h and sunset around 18-19 h UTC", () => {
    for (const d of [10, 180]) {
      const rows = fleet.records(
        "site A+1",
        "all_data",
        [P.solar],
        dayStart(d),
        dayStart(d + 1) - 60,
      );
      const lit = rows.filter((r) => num(r, P.solar) > 0).map(hourOf);
      expect(Math.min(...lit)).toBeGreaterThan(5);
      expect(Math.min(...lit)).toBeLessThan(7.5);
      expect(Math.max(...lit)).toBeGreaterThan(17);
      expect(Math.max(...lit)).toBeLessThan(19.5);
    }
  });

  it("changes with the weather from day to day and smoothly within a day", () => {
    const days = byDay(site(quarterHourly, "hybrid-site-01", 0, 120));
    const yields = [...days.values()].map((rows) =>
      rows.reduce((s, r) => s + num(r, P.solar) / 4, 0),
    );
    expect(Math.min(...yields)).toBeLessThan(0.5 * Math.max(...yields));
    expect(Math.max(...yields)).toBeLessThan(95);
    const minutes = site(fleet, "hybrid-site-01", 130, 131).map((r) => num(r, P.solar));
    const jumps = minutes.slice(1).map((v, k) => Math.abs(v - (minutes[k] ?? 0)));
    expect(Math.max(...jumps)).toBeLessThan(1.5);
  });
});

describe("hybrid site", () => {
  const rows = site(fleet, "hybrid-site-01", 140, 154);

  it("charges the battery on solar surplus and discharges it in the evening", () => {
    const charging = rows.filter((r) => num(r, P.battery) < 0);
    expect(charging.length).toBeGreaterThan(100);
    for (const r of charging) expect(num(r, P.solar)).toBeGreaterThan(0);
    const evenings = [...byDay(rows).values()].filter((day) =>
      day.some((r) => hourOf(r) >= 18 && hourOf(r) < 23 && num(r, P.battery) > 0.5),
    );
    expect(evenings.length).toBeGreaterThanOrEqual(12);
  });

  it("imports from the grid when short and exports in surplus", () => {
    expect(rows.some((r) => hourOf(r) < 5 && num(r, P.other) > 0)).toBe(true);
    const exporting = rows.filter((r) => num(r, P.other) < 0);
    expect(exporting.length).toBeGreaterThan(100);
    for (const r of exporting) expect(num(r, P.solar)).toBeGreaterThan(num(r, P.load));
  });

  it("keeps the battery between its limits", () => {
    const soc = fleet.records(
      "hybrid-site-01",
      "battery_bank",
      ["e_00_05_00_002_battery_SOC"],
      dayStart(140),
      dayStart(147),
    );
    const values = soc.map((r) => num(r, "e_00_05_00_002_battery_SOC"));
    expect(Math.min(...values)).toBeGreaterThanOrEqual(19.5);
    expect(Math.max(...values)).toBeLessThanOrEqual(95.5);
  });

  it("runs its standby genset only while the grid is down", () => {
    const ids = [P.genset, "e_00_02_00_003_grid_voltage", "e_00_00_02_005_running"];
    const year = quarterHourly.records(
      "hybrid-site-01",
      "all_data",
      ids,
      dayStart(0),
      dayStart(365),
    );
    const byTime = new Map<string, DataRecord[]>();
    for (const r of year) byTime.set(r.timestamp, [...(byTime.get(r.timestamp) ?? []), r]);
    let running = 0;
    for (const [, [r0, r3, r5]] of byTime) {
      if (num(r0, P.genset) > 0) {
        running++;
        expect(num(r3, "e_00_02_00_003_grid_voltage")).toBe(0);
        expect(num(r5, "e_00_00_02_005_running")).toBe(1);
      }
    }
    expect(running).toBeLessThan(byTime.size / 50);
  });

  it("reports inverter phases that add up to the site's solar power, and a text mode", () => {
    const ids = [
      P.solar,
      "e_03_01_00_001_AC_activepower_L1",
      "e_03_01_00_001_AC_activepower_L2",
      "e_03_01_00_001_AC_activepower_L3",
      "e_00_00_03_001_operating_mode",
      "e_00_06_00_001_AC_frequency",
    ];
    const recs = fleet.records(
      "hybrid-site-01",
      "all_data",
      ids,
      dayStart(141),
      dayStart(142) - 60,
    );
    const site0 = rowsOf(recs, 0);
    const inverter = rowsOf(recs, 1);
    expect(inverter).toHaveLength(site0.length);
    inverter.forEach((r, k) => {
      const sum = num(r, ids[1] ?? "") + num(r, ids[2] ?? "") + num(r, ids[3] ?? "");
      expect(sum).toBeCloseTo(num(site0[k], P.solar), 6);
      expect(["MPPT", "Standby", "Derating", "Backup"]).toContain(r[MODE]);
      expect(Math.abs(num(r, "e_00_06_00_001_AC_frequency") - 50)).toBeLessThan(0.2);
    });
    expect(inverter[0]?.[MODE]).toBe("Standby");
    expect(inverter[720]?.[MODE]).not.toBe("Standby");
  });
});

describe("off-grid site", () => {
  const year = site(quarterHourly, "offgrid-genset-02", 0, 365);

  it("has no grid: nothing imported or exported", () => {
    expect(year.filter((r) => num(r, P.other) !== 0)).toEqual([]);
  });

  it("runs the genset in the evening, on cloudy days", () => {
    const days = [...byDay(year).values()];
    const withGenset = days.filter((day) => day.some((r) => num(r, P.genset) > 0));
    expect(withGenset.length).toBeGreaterThanOrEqual(5);
    expect(withGenset.length).toBeLessThan(120);
    const running = year.filter((r) => num(r, P.genset) > 0);
    expect(running.filter((r) => hourOf(r) >= 16).length / running.length).toBeGreaterThan(0.8);
    const solarOf = (day: DataRecord[]) => day.reduce((s, r) => s + num(r, P.solar), 0);
    const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
    expect(mean(withGenset.map(solarOf))).toBeLessThan(mean(days.map(solarOf)));
  });

  it("reads a water pump and tank", () => {
    const ids = [
      "e_00_14_00_003_pump_flow",
      "e_00_20_00_003_tank_level",
      "e_00_10_00_003_water_pH",
    ];
    const recs = fleet.records(
      "offgrid-genset-02",
      "all_data",
      ids,
      dayStart(150),
      dayStart(151) - 60,
    );
    const flows = recs.map((r) => num(r, ids[0] ?? ""));
    expect(flows.filter((q) => q > 0).length).toBeGreaterThan(60);
    expect(flows.filter((q) => q === 0).length).toBeGreaterThan(600);
    for (const r of recs) {
      expect(num(r, ids[1] ?? "")).toBeGreaterThanOrEqual(0.1);
      expect(num(r, ids[1] ?? "")).toBeLessThanOrEqual(3.2);
      expect(Math.abs(num(r, ids[2] ?? "") - 7.15)).toBeLessThan(0.5);
    }
  });
});

describe("other devices", () => {
  it("the grid-tied site has neither battery nor genset", () => {
    const rows = site(fleet, "site A+1", 60, 67);
    expect(rows.filter((r) => num(r, P.battery) !== 0 || num(r, P.genset) !== 0)).toEqual([]);
  });

  it("the Audit Box counts its remaining days down by one per day", () => {
    const id = "e_00_00_00_000_days_remaining";
    const days = Array.from({ length: 30 }, (_, k) =>
      num(
        fleet.records("audit-box-03", "all_data", [id], dayStart(k) + 3600, dayStart(k) + 3600)[0],
        id,
      ),
    );
    for (const v of days) expect(Number.isInteger(v)).toBe(true);
    const steps = days.slice(1).map((v, k) => v - (days[k] ?? 0));
    expect(steps.filter((s) => s === -1).length).toBeGreaterThanOrEqual(28);
    const sameDay = fleet.records("audit-box-03", "all_data", [id], dayStart(3), dayStart(4) - 60);
    expect(new Set(sameDay.map((r) => r[id])).size).toBe(1);
  });
});

describe("meta values", () => {
  it.each(DEVICES)("%s: protocol_id is constant, alarms come now and then", (device) => {
    const ids = ["protocol_id", "alarm_index", "alarm_name"];
    const recs = fleet.records(device, "all_data", ids, dayStart(200), dayStart(214) - 60);
    expect(new Set(recs.map((r) => r.protocol_id)).size).toBe(1);
    const active = recs.filter((r) => r.alarm_index !== null);
    expect(active.length).toBeGreaterThan(0);
    expect(active.length).toBeLessThan(recs.length * 0.1);
    expect(recs.filter((r) => (r.alarm_name === null) !== (r.alarm_index === null))).toEqual([]);
    for (const r of active) {
      expect(Number.isInteger(r.alarm_index)).toBe(true);
      expect(typeof r.alarm_name).toBe("string");
    }
  });

  it("gives each device its own protocol_id", () => {
    const ids = DEVICES.map(
      (d) =>
        fleet.records(d, "all_data", ["protocol_id"], dayStart(1), dayStart(1))[0]?.protocol_id,
    );
    expect(new Set(ids).size).toBe(DEVICES.length);
  });
});
