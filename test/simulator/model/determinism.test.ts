import { createFleet } from "../../../src/simulator/model/fleet.js";
import { clearHistories } from "../../../src/simulator/model/history.js";
import { readoutOf } from "../../../src/simulator/model/values.js";
import { dayStart, requestable } from "./helpers.js";

const DEVICES = ["hybrid-site-01", "offgrid-genset-02", "audit-box-03", "site A+1"];
const SOLAR = "e_03_01_00_000_total_solar_power";

function freshFleet(seed: number) {
  clearHistories();
  return createFleet({ seed });
}

describe("determinism", () => {
  it.each(DEVICES)("%s: the same seed gives the same records", (device) => {
    const ids = requestable(freshFleet(5), device);
    const a = freshFleet(5).records(device, "all_data", ids, dayStart(30), dayStart(31));
    const b = freshFleet(5).records(device, "all_data", ids, dayStart(30), dayStart(31));
    expect(a).toEqual(b);
  });

  it.each(DEVICES)("%s: another seed gives other data under the same ids", (device) => {
    const a = createFleet({ seed: 5 });
    const b = createFleet({ seed: 6 });
    expect(b.valueIds(device, "all_data")).toEqual(a.valueIds(device, "all_data"));
    const pa = a.records(device, "all_data", [SOLAR], dayStart(30), dayStart(31));
    const pb = b.records(device, "all_data", [SOLAR], dayStart(30), dayStart(31));
    expect(pa.map((r) => r.timestamp)).toEqual(pb.map((r) => r.timestamp));
    expect(pa.map((r) => r[SOLAR])).not.toEqual(pb.map((r) => r[SOLAR]));
  });

  it("gives every device its own data", () => {
    const fleet = createFleet({ seed: 5 });
    const curves = DEVICES.map((d) =>
      JSON.stringify(
        fleet.records(d, "all_data", [SOLAR], dayStart(3), dayStart(4)).map((r) => r[SOLAR]),
      ),
    );
    expect(new Set(curves).size).toBe(DEVICES.length);
  });

  const SAMPLES: [string, string][] = [
    ["hybrid-site-01", "e_03_01_00_000_total_battery_power"],
    ["hybrid-site-01", "e_03_07_04_000_total_solar_energy"],
    ["hybrid-site-01", "e_03_07_05_002_discharge_energy_today"],
    ["hybrid-site-01", "e_00_00_03_001_operating_mode"],
    ["hybrid-site-01", "e_00_03_00_001_AC_current_L2"],
    ["hybrid-site-01", "e_00_19_00_005_fuel_level"],
    ["hybrid-site-01", "alarm_name"],
    ["offgrid-genset-02", "e_00_20_00_003_tank_level"],
    ["offgrid-genset-02", "e_00_05_00_002_battery_SOC"],
    ["audit-box-03", "e_00_25_00_001_uptime"],
    ["audit-box-03", "e_00_00_00_000_days_remaining"],
    ["site A+1", "e_02_07_04_001_lifetime_energy"],
  ];

  it.each(SAMPLES)("%s: %s is the same alone, with others and in a sub-window", (device, id) => {
    const fleet = createFleet({ seed: 8 });
    const from = dayStart(12) + 17 * 3600;
    const alone = fleet.records(device, "all_data", [id], from, from + 6 * 3600);
    const others = requestable(fleet, device)
      .filter((x) => x !== id)
      .slice(0, 19);
    const mixed = fleet
      .records(device, "all_data", [...others, id], dayStart(12), dayStart(13) + 3600)
      .filter((r) => r.values_id === readoutOf(id));
    const byTime = new Map(mixed.map((r) => [r.timestamp, r[id]]));
    expect(alone).toHaveLength(361);
    for (const r of alone) expect(byTime.get(r.timestamp)).toEqual(r[id]);
    const sub = fleet.records(device, "all_data", [id], from + 3 * 3600, from + 3 * 3600 + 60);
    expect(sub).toEqual(alone.slice(180, 182));
  });

  it("does not depend on call order or on what the caches hold", () => {
    const ids = [
      "e_03_07_04_000_total_battery_energy",
      "e_00_05_00_002_battery_SOC",
      "e_00_16_04_005_run_hours",
    ];
    const late = (f: ReturnType<typeof createFleet>) =>
      f.records("hybrid-site-01", "all_data", ids, dayStart(120), dayStart(120) + 7200);
    const early = (f: ReturnType<typeof createFleet>) =>
      f.records("hybrid-site-01", "all_data", ids, dayStart(2), dayStart(2) + 7200);
    const a = freshFleet(21);
    const lateFirst = late(a);
    const earlyAfter = early(a);
    const b = freshFleet(21);
    const earlyFirst = early(b);
    for (let d = 0; d < 120; d += 1)
      b.records("hybrid-site-01", "all_data", [SOLAR], dayStart(d), dayStart(d));
    expect(late(b)).toEqual(lateFirst);
    expect(earlyFirst).toEqual(earlyAfter);
  });

  it("shares histories between fleets of the same seed without changing the data", () => {
    clearHistories();
    const a = createFleet({ seed: 4 }).records(
      "site A+1",
      "all_data",
      [SOLAR],
      dayStart(9),
      dayStart(9) + 600,
    );
    const b = createFleet({ seed: 4 }).records(
      "site A+1",
      "all_data",
      [SOLAR],
      dayStart(9),
      dayStart(9) + 600,
    );
    expect(b).toEqual(a);
  });
});
