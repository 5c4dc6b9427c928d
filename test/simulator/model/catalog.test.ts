import {
  COMMON_VALUE_IDS,
  createFleet,
  DAYS_REMAINING_ID,
} from "../../../src/simulator/model/fleet.js";
import { parseValueId } from "../../../src/simulator/model/values.js";

const fleet = createFleet({ seed: 1 });
const DEVICES = ["hybrid-site-01", "offgrid-genset-02", "audit-box-03", "site A+1"];

/** The 23 ids of spec 2.3 "present for every device". */
const SPEC_COMMON = [
  "values_id",
  "protocol_id",
  "alarm_index",
  "alarm_name",
  "e_03_07_04_000_total_solar_energy",
  "e_03_07_04_000_total_load_energy",
  "e_03_07_04_000_total_battery_energy",
  "e_03_07_04_000_genset_energy",
  "e_03_07_04_000_total_export_energy",
  "e_03_07_04_000_total_other_energy",
  "e_03_01_00_000_total_solar_power",
  "e_03_01_00_000_total_load_power",
  "e_03_01_00_000_total_battery_power",
  "e_03_01_00_000_genset_power",
  "e_03_01_00_000_total_other_power",
  "e_00_00_04_000_money_saved",
  "e_00_00_04_000_revenue_created",
  "e_03_23_04_000_CO2_saved",
  "e_00_00_04_000_trees_saved",
  "e_00_00_00_000_money_per_kWh",
  "e_00_00_00_000_revenue_per_kWh",
  "e_00_00_00_000_CO2_saved_per_kWh",
  "e_00_00_00_000_trees_saved_per_kWh",
];

const allValues = (device: string): string[] => fleet.valueIds(device, "all_data") ?? [];
const specific = (device: string): string[] =>
  allValues(device).filter((id) => !SPEC_COMMON.includes(id) && id !== DAYS_REMAINING_ID);

describe("fleet catalog", () => {
  it("lists the default devices with fixed ids, whatever the seed", () => {
    expect(fleet.deviceIds()).toEqual(DEVICES);
    expect(createFleet({ seed: 99 }).deviceIds()).toEqual(DEVICES);
  });

  it("exports the spec's common ids", () => {
    expect([...COMMON_VALUE_IDS]).toEqual(SPEC_COMMON);
  });

  it.each(DEVICES)("%s lists every value spec 2.3 gives for every device", (device) => {
    expect(allValues(device).slice(0, SPEC_COMMON.length)).toEqual(SPEC_COMMON);
    expect(new Set(allValues(device)).size).toBe(allValues(device).length);
  });

  it.each([
    ["hybrid-site-01", 55, 62],
    ["offgrid-genset-02", 25, 31],
    ["audit-box-03", 25, 35],
    ["site A+1", 25, 32],
  ])("%s has between %i and %i values", (device, min, max) => {
    expect(allValues(device).length).toBeGreaterThanOrEqual(min);
    expect(allValues(device).length).toBeLessThanOrEqual(max);
  });

  it("has days_remaining only on the Audit Box", () => {
    expect(allValues("audit-box-03")).toContain(DAYS_REMAINING_ID);
    for (const device of DEVICES.filter((d) => d !== "audit-box-03")) {
      expect(allValues(device)).not.toContain(DAYS_REMAINING_ID);
    }
  });

  it.each(DEVICES)(
    "%s: device-specific values are coded ids of readouts other than 000",
    (device) => {
      const ids = specific(device);
      expect(ids.length).toBeGreaterThan(0);
      for (const id of ids) {
        const coded = parseValueId(id);
        expect(coded).toBeDefined();
        expect(coded?.readout).toBeGreaterThan(0);
      }
    },
  );

  it("covers all 31 unit codes, all 7 type codes and all 4 prefixes with device-specific values", () => {
    const coded = DEVICES.flatMap(specific).map((id) => parseValueId(id));
    const units = new Set(coded.map((c) => c?.unit));
    const types = new Set(coded.map((c) => c?.type));
    const prefixes = new Set(coded.map((c) => c?.prefix));
    expect([...units].sort((a = 0, b = 0) => a - b)).toEqual(
      Array.from({ length: 31 }, (_, i) => i),
    );
    expect([...types].sort((a = 0, b = 0) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect([...prefixes].sort((a = 0, b = 0) => a - b)).toEqual([0, 1, 2, 3]);
  });

  it("uses several readouts per device", () => {
    const readouts = (device: string) =>
      new Set(allValues(device).map((id) => parseValueId(id)?.readout ?? 0));
    expect(readouts("hybrid-site-01")).toEqual(new Set([0, 1, 2, 3, 4, 5]));
    expect(readouts("offgrid-genset-02").size).toBeGreaterThanOrEqual(3);
    expect(readouts("audit-box-03").size).toBeGreaterThanOrEqual(3);
    expect(readouts("site A+1").size).toBeGreaterThanOrEqual(2);
  });

  it("gives the hybrid a battery_bank resource with the battery readout and the meta values", () => {
    expect(fleet.resourceIds("hybrid-site-01")).toEqual(["all_data", "battery_bank"]);
    const bank = fleet.valueIds("hybrid-site-01", "battery_bank") ?? [];
    expect(bank.slice(0, 4)).toEqual(["values_id", "protocol_id", "alarm_index", "alarm_name"]);
    const rest = bank.slice(4);
    expect(rest.length).toBeGreaterThanOrEqual(5);
    for (const id of rest) expect(parseValueId(id)?.readout).toBe(2);
    expect(rest).toContain("e_00_05_00_002_battery_SOC");
  });

  it.each(DEVICES.slice(1))("%s has only all_data", (device) => {
    expect(fleet.resourceIds(device)).toEqual(["all_data"]);
  });

  it("answers undefined for unknown devices and resources", () => {
    expect(fleet.resourceIds("nope")).toBeUndefined();
    expect(fleet.valueIds("nope", "all_data")).toBeUndefined();
    expect(fleet.valueIds("hybrid-site-01", "nope")).toBeUndefined();
    expect(fleet.valueIds("site A+1", "battery_bank")).toBeUndefined();
  });

  it("hands out copies of its lists", () => {
    fleet.deviceIds().push("x");
    fleet.valueIds("hybrid-site-01", "all_data")?.push("x");
    expect(fleet.deviceIds()).toHaveLength(4);
    expect(fleet.valueIds("hybrid-site-01", "all_data")).not.toContain("x");
  });
});

describe("parseValueId", () => {
  it.each([
    [
      "e_03_01_00_001_AC_activepower_L1",
      { prefix: 3, unit: 1, type: 0, readout: 1, name: "AC_activepower_L1" },
    ],
    ["e_00_99_42_123_odd_name", { prefix: 0, unit: 99, type: 42, readout: 123, name: "odd_name" }],
  ])("parses %s", (id, parts) => {
    expect(parseValueId(id)).toEqual(parts);
  });

  it.each(["values_id", "alarm_name", "e_3_01_00_001_x", "e_03_01_00_1_x", "e_03_01_00_001_"])(
    "leaves %s uncoded",
    (id) => {
      expect(parseValueId(id)).toBeUndefined();
    },
  );
});
