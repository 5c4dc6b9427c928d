import { COMMISSIONED_AT_S, createFleet } from "../../../src/simulator/model/fleet.js";
import { dayStart, num, requestable, secondsOf } from "./helpers.js";

const SOLAR = "e_03_01_00_000_total_solar_power";

describe("addDevice", () => {
  it.each([
    ["a/../devices", "hybrid"],
    ["weird id with spaces & ümlauts", "offgrid"],
    ["%2F", "auditbox"],
    ["", "gridtied"],
  ] as const)("adds %j as a %s device with that kind's values", (id, kind) => {
    const fleet = createFleet({ seed: 1 });
    const template = {
      hybrid: "hybrid-site-01",
      offgrid: "offgrid-genset-02",
      auditbox: "audit-box-03",
      gridtied: "site A+1",
    }[kind];
    fleet.addDevice(id, kind);
    expect(fleet.deviceIds()).toEqual([
      "hybrid-site-01",
      "offgrid-genset-02",
      "audit-box-03",
      "site A+1",
      id,
    ]);
    expect(fleet.resourceIds(id)).toEqual(fleet.resourceIds(template));
    expect(fleet.valueIds(id, "all_data")).toEqual(fleet.valueIds(template, "all_data"));
    const mine = fleet.records(id, "all_data", [SOLAR], dayStart(4), dayStart(5));
    const theirs = fleet.records(template, "all_data", [SOLAR], dayStart(4), dayStart(5));
    expect(mine.map((r) => r.timestamp)).toEqual(theirs.map((r) => r.timestamp));
    expect(mine.map((r) => r[SOLAR])).not.toEqual(theirs.map((r) => r[SOLAR]));
  });

  it("refuses an id that exists", () => {
    const fleet = createFleet({ seed: 1 });
    expect(() => fleet.addDevice("site A+1", "gridtied")).toThrow();
  });

  it("does not change the default devices' data", () => {
    const plain = createFleet({ seed: 1 });
    const more = createFleet({ seed: 1 });
    more.addDevice("extra", "hybrid");
    const ids = requestable(plain, "hybrid-site-01");
    expect(more.records("hybrid-site-01", "all_data", ids, dayStart(2), dayStart(2) + 600)).toEqual(
      plain.records("hybrid-site-01", "all_data", ids, dayStart(2), dayStart(2) + 600),
    );
  });
});

describe("addValue", () => {
  const fleet = createFleet({ seed: 9 });
  const values = (id: string, fromS: number, toS: number) =>
    fleet.records("site A+1", "all_data", [id], fromS, toS).map((r) => r[id]);

  it.each([
    ["e_00_04_00_007_cabinet_temperature", "continuous °C"],
    ["e_00_99_42_007_mystery", "unknown unit 99 and type 42"],
    ["my_plain_sensor", "an id that is not coded"],
  ])("%s (%s) is a finite number that varies", (id) => {
    fleet.addValue("site A+1", "all_data", id);
    const vs = values(id, dayStart(3), dayStart(4));
    for (const v of vs) expect(Number.isFinite(v)).toBe(true);
    expect(new Set(vs).size).toBeGreaterThan(20);
  });

  it.each([
    ["e_00_00_01_007_door_pulses", (v: unknown) => Number.isInteger(v) && (v as number) >= 0],
    ["e_00_00_02_007_door_open", (v: unknown) => v === 0 || v === 1],
    ["e_00_00_03_007_cabinet_state", (v: unknown) => typeof v === "string" && v.length > 0],
    [
      "e_00_00_06_007_fan_status",
      (v: unknown) => Number.isInteger(v) && (v as number) >= 0 && (v as number) < 10,
    ],
  ])("%s holds values of its type", (id, ok) => {
    fleet.addValue("site A+1", "all_data", id);
    const vs = values(id, dayStart(3), dayStart(5));
    expect(vs.filter((v) => !ok(v))).toEqual([]);
  });

  it("gives a cumulative value (type 04) history back to commissioning, non-decreasing", () => {
    const id = "e_03_07_04_008_feeder_energy";
    fleet.addValue("site A+1", "all_data", id);
    const first = fleet.records("site A+1", "all_data", [id], 0, COMMISSIONED_AT_S + 600);
    expect(secondsOf(first[0] ?? { timestamp: "" })).toBe(COMMISSIONED_AT_S);
    const later = values(id, dayStart(30), dayStart(31)).map(Number);
    for (let k = 1; k < later.length; k++)
      expect(later[k]).toBeGreaterThanOrEqual(later[k - 1] ?? 0);
    expect(later[0]).toBeGreaterThan(num(first[0], id));
    const dayRise =
      num(
        fleet.records("site A+1", "all_data", [id], dayStart(31) - 60, dayStart(31) - 60)[0],
        id,
      ) -
      num(fleet.records("site A+1", "all_data", [id], dayStart(30) - 60, dayStart(30) - 60)[0], id);
    expect(Math.abs(dayRise - fleet.dayEnergyKwh("site A+1", id, dayStart(30)))).toBeLessThan(
      0.0011,
    );
  });

  it("gives a daily-reset value (type 05) that restarts at 00:00 UTC", () => {
    const id = "e_00_24_05_008_fan_minutes_today";
    fleet.addValue("site A+1", "all_data", id);
    const vs = values(id, dayStart(6) - 60, dayStart(6)).map(Number);
    expect(vs[1]).toBeLessThan(vs[0] ?? 0);
    expect(vs[0]).toBeCloseTo(fleet.dayEnergyKwh("site A+1", id, dayStart(5)), 3);
  });

  it("lists the value in the resource and in all_data, with a row of its own readout", () => {
    const f = createFleet({ seed: 9 });
    const id = "e_00_28_00_009_bms_buffer";
    f.addValue("hybrid-site-01", "battery_bank", id);
    f.addValue("hybrid-site-01", "battery_bank", id);
    expect(f.valueIds("hybrid-site-01", "battery_bank")?.filter((v) => v === id)).toHaveLength(1);
    expect(f.valueIds("hybrid-site-01", "all_data")).toContain(id);
    const recs = f.records(
      "hybrid-site-01",
      "battery_bank",
      ["e_00_05_00_002_battery_SOC", id],
      dayStart(1),
      dayStart(1),
    );
    expect(recs.map((r) => r.values_id)).toEqual([2, 9]);
    expect(recs[0]?.[id]).toBeNull();
    expect(typeof recs[1]?.[id]).toBe("number");
  });

  it("keeps a known value as it is", () => {
    const f = createFleet({ seed: 9 });
    const before = f.records("site A+1", "all_data", [SOLAR], dayStart(2), dayStart(2) + 3600);
    f.addValue("site A+1", "all_data", SOLAR);
    expect(f.valueIds("site A+1", "all_data")?.filter((v) => v === SOLAR)).toHaveLength(1);
    expect(f.records("site A+1", "all_data", [SOLAR], dayStart(2), dayStart(2) + 3600)).toEqual(
      before,
    );
  });

  it("creates a missing resource and refuses an unknown device", () => {
    const f = createFleet({ seed: 9 });
    f.addValue("site A+1", "sensors", "e_00_05_00_004_humidity");
    expect(f.resourceIds("site A+1")).toEqual(["all_data", "sensors"]);
    expect(f.valueIds("site A+1", "sensors")).toContain("e_00_05_00_004_humidity");
    expect(() => f.addValue("nope", "all_data", "e_00_05_00_004_humidity")).toThrow();
  });

  it("is the same in two fleets of one seed", () => {
    const a = createFleet({ seed: 13 });
    const b = createFleet({ seed: 13 });
    const id = "e_00_13_00_006_fan_speed";
    a.addValue("audit-box-03", "all_data", id);
    b.addValue("audit-box-03", "all_data", id);
    expect(a.records("audit-box-03", "all_data", [id], dayStart(8), dayStart(9))).toEqual(
      b.records("audit-box-03", "all_data", [id], dayStart(8), dayStart(9)),
    );
  });
});
