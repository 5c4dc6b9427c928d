import { UNIT_PREFIXES, UNITS, VALUE_TYPES } from "../../src/transform/units.js";
import { decodeValueId, ValueIdDecoder } from "../../src/transform/value-id.js";
import { captureLogger } from "../support/log-capture.js";

describe("code tables (spec 2.3)", () => {
  it.each([
    ["00", ""],
    ["01", "m"],
    ["02", "M"],
    ["03", "k"],
  ])("unit prefix %s is %j", (code, symbol) => {
    expect(UNIT_PREFIXES.get(code)).toBe(symbol);
    // with unit W, so the prefix shows on its own
    expect(decodeValueId(`e_${code}_01_00_000_x`).unit).toBe(`${symbol}W`);
  });

  const units: [string, string][] = [
    ["00", ""],
    ["01", "W"],
    ["02", "V"],
    ["03", "A"],
    ["04", "°C"],
    ["05", "%"],
    ["06", "Hz"],
    ["07", "Wh"],
    ["08", "Varh"],
    ["09", "VA"],
    ["10", "pH"],
    ["11", "bar"],
    ["12", "W/m²"],
    ["13", "RPM"],
    ["14", "m³/h"],
    ["15", "var"],
    ["16", "h"],
    ["17", "Degree"],
    ["18", "m/Min"],
    ["19", "liter"],
    ["20", "m"],
    ["21", "Ohm"],
    ["22", "Pa"],
    ["23", "g"],
    ["24", "min"],
    ["25", "day"],
    ["26", "month"],
    ["27", "Ah"],
    ["28", "byte"],
    ["29", "m/s"],
    ["30", "Vah"],
  ];
  it.each(units)("unit %s is %j", (code, symbol) => {
    expect(UNITS.get(code)).toBe(symbol);
    const decoded = decodeValueId(`e_00_${code}_00_000_x`);
    expect(decoded.unit).toBe(symbol || "none");
    expect(decoded.unknownCodes).toEqual([]);
  });

  const types: [string, string][] = [
    ["00", "continuous"],
    ["01", "pulse"],
    ["02", "digital"],
    ["03", "text"],
    ["04", "cumulative"],
    ["05", "cumulative_daily_reset"],
    ["06", "status"],
  ];
  it.each(types)("value type %s is %s", (code, name) => {
    expect(VALUE_TYPES.get(code)).toBe(name);
    expect(decodeValueId(`e_00_00_${code}_000_x`).type).toBe(name);
  });

  it("the tables hold exactly the spec's codes", () => {
    expect([...UNIT_PREFIXES.keys()]).toEqual(["00", "01", "02", "03"]);
    expect([...UNITS.keys()]).toEqual(units.map(([code]) => code));
    expect([...VALUE_TYPES.keys()]).toEqual(types.map(([code]) => code));
  });
});

describe("decodeValueId", () => {
  it.each([
    ["03", "07", "kWh"],
    ["01", "03", "mA"],
    ["00", "05", "%"],
    ["03", "00", "k"],
    ["00", "00", "none"],
    ["02", "01", "MW"],
  ])("prefix %s + unit %s -> %s (spec examples)", (prefix, unit, expected) => {
    expect(decodeValueId(`e_${prefix}_${unit}_00_000_x`).unit).toBe(expected);
  });

  it.each([
    ["e_03_07_04_000_total_solar_energy", "total_solar_energy", "kWh", "cumulative"],
    ["e_03_07_04_000_total_load_energy", "total_load_energy", "kWh", "cumulative"],
    ["e_03_07_04_000_total_battery_energy", "total_battery_energy", "kWh", "cumulative"],
    ["e_03_07_04_000_genset_energy", "genset_energy", "kWh", "cumulative"],
    ["e_03_07_04_000_total_export_energy", "total_export_energy", "kWh", "cumulative"],
    ["e_03_07_04_000_total_other_energy", "total_other_energy", "kWh", "cumulative"],
    ["e_03_01_00_000_total_solar_power", "total_solar_power", "kW", "continuous"],
    ["e_03_01_00_000_total_load_power", "total_load_power", "kW", "continuous"],
    ["e_03_01_00_000_total_battery_power", "total_battery_power", "kW", "continuous"],
    ["e_03_01_00_000_genset_power", "genset_power", "kW", "continuous"],
    ["e_03_01_00_000_total_other_power", "total_other_power", "kW", "continuous"],
    ["e_00_00_04_000_money_saved", "money_saved", "none", "cumulative"],
    ["e_00_00_04_000_revenue_created", "revenue_created", "none", "cumulative"],
    ["e_03_23_04_000_CO2_saved", "CO2_saved", "kg", "cumulative"],
    ["e_00_00_04_000_trees_saved", "trees_saved", "none", "cumulative"],
    ["e_00_00_00_000_money_per_kWh", "money_per_kWh", "none", "continuous"],
    ["e_00_00_00_000_revenue_per_kWh", "revenue_per_kWh", "none", "continuous"],
    ["e_00_00_00_000_CO2_saved_per_kWh", "CO2_saved_per_kWh", "none", "continuous"],
    ["e_00_00_00_000_trees_saved_per_kWh", "trees_saved_per_kWh", "none", "continuous"],
    // the spec's table says "days", but the id's codes say none: the codes are what we decode
    ["e_00_00_00_000_days_remaining", "days_remaining", "none", "continuous"],
  ])("%s (present for every device)", (id, measurement, unit, type) => {
    const decoded = decodeValueId(id);
    expect(decoded).toMatchObject({ id, kind: "coded", measurement, unit, type, unknownCodes: [] });
    expect(decoded.field).toBeUndefined();
    expect(decoded.codes?.valuesId).toBe("000");
    expect(decoded.codes?.name).toBe(measurement);
  });

  it.each([
    ["values_id", { kind: "values_id", measurement: "", unit: "none", type: "meta" }],
    [
      "protocol_id",
      { kind: "protocol_id", measurement: "protocol_id", unit: "none", type: "meta" },
    ],
    [
      "alarm_index",
      { kind: "alarm", measurement: "alarm", unit: "none", type: "alarm", field: "alarm_index" },
    ],
    [
      "alarm_name",
      { kind: "alarm", measurement: "alarm", unit: "none", type: "alarm", field: "alarm_name" },
    ],
  ])("meta id %s", (id, expected) => {
    const decoded = decodeValueId(id);
    expect(decoded).toMatchObject({ id, ...expected, unknownCodes: [] });
    expect(decoded.codes).toBeUndefined();
    if (id === "values_id" || id === "protocol_id") {
      expect(decoded.field).toBeUndefined();
      // only the alarm ids have the member (decode --json prints the members there are)
      expect(decoded).not.toHaveProperty("field");
    }
  });

  it("splits the segments of a coded id; the name keeps its underscores", () => {
    expect(decodeValueId("e_03_01_00_001_AC_activepower_L1")).toEqual({
      id: "e_03_01_00_001_AC_activepower_L1",
      kind: "coded",
      measurement: "AC_activepower_L1",
      unit: "kW",
      type: "continuous",
      codes: { prefix: "03", unit: "01", type: "00", valuesId: "001", name: "AC_activepower_L1" },
      unknownCodes: [],
    });
  });

  it.each([
    ["e_03_99_04_000_x", "unknown_03_99", "cumulative", ["unit 99"]],
    ["e_03_07_42_000_x", "kWh", "unknown_42", ["type 42"]],
    ["e_07_07_04_000_x", "unknown_07_07", "cumulative", ["prefix 07"]],
    ["e_07_99_42_123_x", "unknown_07_99", "unknown_42", ["prefix 07", "unit 99", "type 42"]],
    ["e_04_00_00_000_x", "unknown_04_00", "continuous", ["prefix 04"]],
    ["e_00_31_07_000_x", "unknown_00_31", "unknown_07", ["unit 31", "type 07"]],
  ])("unknown codes in %s decode to %s / %s", (id, unit, type, unknownCodes) => {
    let decoded: ReturnType<typeof decodeValueId> | undefined;
    expect(() => {
      decoded = decodeValueId(id);
    }).not.toThrow();
    expect(decoded).toMatchObject({ kind: "coded", measurement: "x", unit, type, unknownCodes });
  });

  it.each([
    "e_03_07_04_total",
    "e_03_07",
    "e__07_04_000_x",
    "e_03_07_04_000_",
    "e_03_07_04_000",
    "e_3_07_04_000_x",
    "e_003_07_04_000_x",
    "e_03_07_04_00_x",
    "e_03_07_04_0000_x",
    "e_0a_07_04_000_x",
    "e_03_07_04_٠٠٠_x", // Arabic-Indic digits are not codes
    "E_03_07_04_000_x",
    "x_03_07_04_000_x",
    "e-03-07-04-000-x",
    " e_03_07_04_000_x",
    "",
    "e",
    "temperature",
    "VALUES_ID",
    "values_id ",
    "alarm",
  ])("%j is uncoded", (id) => {
    expect(decodeValueId(id)).toEqual({
      id,
      kind: "uncoded",
      measurement: id,
      unit: "none",
      type: "unknown",
      unknownCodes: [],
    });
  });

  it.each([
    "AC power L1",
    "a,b",
    "a=b",
    'say "hi"',
    "it's",
    "back\\slash",
    "Temperatur Außen °C ☀️",
    "温度",
    "tab\there",
    "line\nbreak",
    "_leading",
    "trailing_",
    "__",
    " ",
    "e_03_07_04_000_nested",
  ])("coded id with name %j keeps the name as measurement", (name) => {
    const decoded = decodeValueId(`e_02_02_01_017_${name}`);
    expect(decoded).toMatchObject({ kind: "coded", measurement: name, unit: "MV", type: "pulse" });
    expect(decoded.codes).toEqual({
      prefix: "02",
      unit: "02",
      type: "01",
      valuesId: "017",
      name,
    });
  });

  it("returns frozen objects", () => {
    const decoded = decodeValueId("e_03_07_04_000_x");
    expect(Object.isFrozen(decoded)).toBe(true);
    expect(Object.isFrozen(decoded.codes)).toBe(true);
    expect(Object.isFrozen(decoded.unknownCodes)).toBe(true);
  });
});

describe("ValueIdDecoder", () => {
  it("caches: the same id gives the same object", () => {
    const decoder = new ValueIdDecoder();
    const first = decoder.decode("e_03_07_04_000_total_solar_energy");
    expect(decoder.decode("e_03_07_04_000_total_solar_energy")).toBe(first);
    expect(decoder.decode("alarm_name")).toBe(decoder.decode("alarm_name"));
    expect(first).toEqual(decodeValueId("e_03_07_04_000_total_solar_energy"));
  });

  it("logs an id with unknown codes once and counts it once", () => {
    const { logger, lines } = captureLogger("debug");
    const decoder = new ValueIdDecoder(logger);
    for (let i = 0; i < 5; i++) {
      decoder.decode("e_03_99_42_000_mystery");
      decoder.decode("e_03_07_04_000_total_solar_energy");
      decoder.decode("weird id");
    }
    expect(decoder.unknownCodeIds).toBe(1);
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0] ?? "{}") as Record<string, unknown>;
    expect(line).toMatchObject({
      level: "warn",
      valueId: "e_03_99_42_000_mystery",
      unknownCodes: ["unit 99", "type 42"],
      unit: "unknown_03_99",
      type: "unknown_42",
      // an event says what happened, for an operator reading the log without the code
      msg: expect.stringContaining("codes that are not in the spec's tables"),
    });

    decoder.decode("e_07_01_00_000_other");
    decoder.decode("e_07_01_00_000_other");
    expect(decoder.unknownCodeIds).toBe(2);
    expect(lines).toHaveLength(2);
  });

  it("works without a logger and never throws", () => {
    const decoder = new ValueIdDecoder();
    expect(() => decoder.decode("e_99_99_99_999_x")).not.toThrow();
    expect(decoder.unknownCodeIds).toBe(1);
  });
});
