import { z } from "zod";
import { dataRecordSchema } from "../../../src/records/data-record.js";
import { COMMISSIONED_AT_S, createFleet } from "../../../src/simulator/model/fleet.js";
import { readoutOf } from "../../../src/simulator/model/values.js";
import { dayStart, num, requestable, secondsOf } from "./helpers.js";

/** GET /data/<device_id>/<resource_id> (spec 4.4). */
const dataResponseSchema = z.array(dataRecordSchema);

const fleet = createFleet({ seed: 11 });
const DEVICES = fleet.deviceIds();
const SOLAR = "e_03_01_00_000_total_solar_power";
const SOC = "e_00_05_00_002_battery_SOC";
const L1 = "e_03_01_00_001_AC_activepower_L1";
const MODE = "e_00_00_03_001_operating_mode";

describe("records: rows and null semantics", () => {
  const from = dayStart(40) + 12 * 3600;
  const ids = [SOC, SOLAR, L1, MODE, "alarm_name", "protocol_id"];
  const records = fleet.records("hybrid-site-01", "all_data", ids, from, from + 180);

  it("validates against the API's record schema", () => {
    expect(dataResponseSchema.safeParse(records).success).toBe(true);
  });

  it("writes one row per readout with a requested value, ordered by values_id, per timestamp", () => {
    expect(records.map((r) => [r.timestamp, r.values_id])).toEqual(
      [0, 60, 120, 180].flatMap((dt) => {
        const ts = new Date((from + dt) * 1000).toISOString().slice(0, 19);
        return [0, 1, 2].map((readout) => [ts, readout]);
      }),
    );
  });

  it("holds every requested value as a member, values of other readouts null", () => {
    for (const r of records) {
      expect(Object.keys(r).sort()).toEqual(["timestamp", "values_id", ...ids].sort());
      for (const id of ids) {
        const mine = readoutOf(id) === r.values_id;
        if (!mine) expect(r[id]).toBeNull();
        else if (id !== "alarm_name") expect(r[id]).not.toBeNull();
      }
    }
  });

  it("types the members: numbers, text as strings, values_id a number", () => {
    const [r0, r1, r2] = records;
    expect(typeof r0?.values_id).toBe("number");
    expect(typeof num(r0, SOLAR)).toBe("number");
    expect(num(r0, "protocol_id")).toBe(12);
    expect(typeof r1?.[MODE]).toBe("string");
    expect(num(r2, SOC)).toBeGreaterThanOrEqual(0);
    expect(num(r2, SOC)).toBeLessThanOrEqual(100);
  });

  it("formats timestamps as YYYY-MM-DDTHH:MM:SS UTC", () => {
    expect(records[0]?.timestamp).toBe(new Date(from * 1000).toISOString().slice(0, 19));
    for (const r of records) expect(r.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/);
  });

  it("ignores values_id and duplicates in the request", () => {
    const a = fleet.records("hybrid-site-01", "all_data", [SOLAR, "values_id", SOLAR], from, from);
    expect(a).toEqual(fleet.records("hybrid-site-01", "all_data", [SOLAR], from, from));
  });
});

describe("records: window", () => {
  it.each(DEVICES)("%s: bounds are inclusive and samples sit on the resolution grid", (device) => {
    const from = dayStart(3) + 600;
    const recs = fleet.records(device, "all_data", [SOLAR], from, from + 3600);
    expect(recs).toHaveLength(61);
    expect(secondsOf(recs[0] ?? { timestamp: "" })).toBe(from);
    expect(secondsOf(recs[60] ?? { timestamp: "" })).toBe(from + 3600);
    const times = recs.map(secondsOf);
    for (const t of times) expect(t % 60).toBe(0);
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });

  it("rounds a window that is off the grid inwards", () => {
    const from = dayStart(3);
    const recs = fleet.records("site A+1", "all_data", [SOLAR], from + 1, from + 119);
    expect(recs.map(secondsOf)).toEqual([from + 60]);
  });

  it("returns nothing for an empty window", () => {
    expect(
      fleet.records("site A+1", "all_data", [SOLAR], dayStart(3) + 1, dayStart(3) + 59),
    ).toEqual([]);
    expect(fleet.records("site A+1", "all_data", [SOLAR], dayStart(4), dayStart(3))).toEqual([]);
  });

  it.each(DEVICES)("%s: nothing exists before COMMISSIONED_AT_S", (device) => {
    const before = fleet.records(
      device,
      "all_data",
      requestable(fleet, device),
      0,
      COMMISSIONED_AT_S - 1,
    );
    expect(before).toEqual([]);
    const across = fleet.records(
      device,
      "all_data",
      [SOLAR],
      COMMISSIONED_AT_S - 86_400,
      COMMISSIONED_AT_S + 120,
    );
    expect(across.map(secondsOf)).toEqual([
      COMMISSIONED_AT_S,
      COMMISSIONED_AT_S + 60,
      COMMISSIONED_AT_S + 120,
    ]);
  });

  it("crosses UTC midnight without gaps or duplicates", () => {
    const recs = fleet.records(
      "offgrid-genset-02",
      "all_data",
      [SOLAR],
      dayStart(9) - 300,
      dayStart(9) + 300,
    );
    expect(recs.map(secondsOf)).toEqual(
      Array.from({ length: 11 }, (_, k) => dayStart(9) - 300 + 60 * k),
    );
  });

  it.each([300, 900, 3600])("respects a resolution of %i s", (resolutionS) => {
    const coarse = createFleet({ seed: 11, resolutionS });
    expect(coarse.resolutionS).toBe(resolutionS);
    const recs = coarse.records("hybrid-site-01", "all_data", [SOLAR], dayStart(2), dayStart(3));
    expect(recs).toHaveLength(86_400 / resolutionS + 1);
    for (const r of recs) expect(secondsOf(r) % resolutionS).toBe(0);
  });

  it("defaults to a resolution of 60 s and rejects a bad one", () => {
    expect(createFleet({ seed: 1 }).resolutionS).toBe(60);
    expect(() => createFleet({ seed: 1, resolutionS: 0 })).toThrow(RangeError);
    expect(() => createFleet({ seed: 1, resolutionS: 1.5 })).toThrow(RangeError);
  });

  it("works with a resolution that does not divide a day", () => {
    const odd = createFleet({ seed: 11, resolutionS: 7 });
    const recs = odd.records("site A+1", "all_data", [SOLAR], dayStart(1) - 20, dayStart(1) + 20);
    expect(recs.map(secondsOf)).toEqual(
      [-14, -7, 0, 7, 14].map((d) => dayStart(1) + d - (dayStart(1) % 7)),
    );
  });
});

describe("records: every value of every device", () => {
  it.each(DEVICES)("%s: a day of all values validates and has the expected members", (device) => {
    const ids = requestable(fleet, device);
    const recs = fleet.records(device, "all_data", ids, dayStart(20), dayStart(20) + 86_399);
    const readouts = new Set(ids.map(readoutOf));
    expect(recs).toHaveLength(1440 * readouts.size);
    expect(dataResponseSchema.safeParse(recs.filter((_, k) => k % 97 === 0)).success).toBe(true);
    const bad: string[] = [];
    const seen = new Set<string>();
    for (const r of recs) {
      for (const id of ids) {
        const v = r[id];
        if (v !== null) seen.add(id);
        if (!(v === null || typeof v === "string" || Number.isFinite(v))) bad.push(`${id}=${v}`);
      }
    }
    expect(bad).toEqual([]);
    expect(
      ids.filter((id) => !seen.has(id) && id !== "alarm_index" && id !== "alarm_name"),
    ).toEqual([]);
  });

  it("serves the battery_bank resource and rejects values it does not list", () => {
    const bank = (fleet.valueIds("hybrid-site-01", "battery_bank") ?? []).filter(
      (id) => id !== "values_id",
    );
    const recs = fleet.records("hybrid-site-01", "battery_bank", bank, dayStart(5), dayStart(5));
    expect(recs.map((r) => r.values_id)).toEqual([0, 2]);
    expect(() =>
      fleet.records("hybrid-site-01", "battery_bank", [SOLAR], dayStart(5), dayStart(5)),
    ).toThrow();
  });

  it("throws for unknown devices, resources and values", () => {
    expect(() => fleet.records("nope", "all_data", [SOLAR], dayStart(1), dayStart(1))).toThrow();
    expect(() => fleet.records("site A+1", "nope", [SOLAR], dayStart(1), dayStart(1))).toThrow();
    expect(() =>
      fleet.records("site A+1", "all_data", ["e_00_00_00_000_x"], dayStart(1), dayStart(1)),
    ).toThrow();
  });
});
