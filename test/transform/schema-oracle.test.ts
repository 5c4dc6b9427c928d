/**
 * The schema oracle (test/support/schema-oracle.ts) against the examples of docs/schema.md and
 * spec 2.3, against the transcoder oracle's ids decoded by hand, and src's decoder and planner
 * against it on every code of the spec's tables and on plans of many shapes.
 */
import { planChunks } from "../../src/pipeline/plan-chunks.js";
import { createFleet } from "../../src/simulator/model/fleet.js";
import { decodeValueId } from "../../src/transform/value-id.js";
import { ID_SHAPES } from "../support/answer-oracle.js";
import {
  codedShape,
  fleetGroupCount,
  idShape,
  lineMeasurement,
  lineTag,
  numberIn,
  requestCount,
  requestsFor,
  safeMeasurement,
  safeName,
  valuesIdTag,
} from "../support/schema-oracle.js";

const DAY_S = 86_400;

describe("the schema oracle, by the examples of docs/schema.md", () => {
  it.each([
    ["e_03_07_04_000_total_solar_energy", "total_solar_energy", "cumulative", "kWh"],
    ["e_03_02_00_001_AC_voltage_L1", "AC_voltage_L1", "continuous", "kV"],
    ["e_01_03_00_000_x", "x", "continuous", "mA"],
    ["e_00_05_05_000_x_y_", "x_y_", "cumulative_daily_reset", "%"],
    ["e_03_00_06_000_x", "x", "status", "k"],
    ["e_00_00_01_000_x", "x", "pulse", "none"],
    ["e_03_99_02_000_x", "x", "digital", "unknown_03_99"],
    ["e_04_01_42_000_x", "x", "unknown_42", "unknown_04_01"],
    ["protocol_id", "protocol_id", "meta", "none"],
    ["e_3_07_04_000_x", "e_3_07_04_000_x", "unknown", "none"],
    ["e_03_07_04_000_", "e_03_07_04_000_", "unknown", "none"],
    ["e_03_07_04_0001_x", "e_03_07_04_0001_x", "unknown", "none"],
    ["e_٠٣_07_04_000_x", "e_٠٣_07_04_000_x", "unknown", "none"],
  ])("%j is measurement %j, type %j, unit %j", (id, measurement, type, unit) => {
    expect(idShape(id)).toEqual({ measurement, type, unit, field: "value" });
  });

  it("the alarm ids share the alarm point, each its field; values_id is no point", () => {
    expect(idShape("alarm_index")).toEqual({
      measurement: "alarm",
      type: "alarm",
      unit: "none",
      field: "alarm_index",
    });
    expect(idShape("alarm_name")?.field).toBe("alarm_name");
    expect(idShape("values_id")).toBeUndefined();
  });

  it("decodes the transcoder oracle's ids as they were decoded by hand", () => {
    for (const [id, shape] of ID_SHAPES) expect([id, idShape(id)]).toEqual([id, shape]);
  });

  it("values_id tags, numbers in strings, stored names", () => {
    const tags = [1, " 7 ", "0042", null, undefined, "", "  ", "abc", 1234, "1.5"].map(valuesIdTag);
    expect(tags).toEqual([
      "001",
      "007",
      "0042",
      "none",
      "none",
      "none",
      "none",
      "abc",
      "1234",
      "1.5",
    ]);
    const numbers = [" 1.5e3 ", ".5", "-0", "+2.", "0x10", "1e400", "Infinity", "", "1,5", "NaN"];
    expect(numbers.map(numberIn)).toEqual([1500, 0.5, -0, 2, ...Array(6).fill(undefined)]);
    expect(safeName("a\\b\tc\nd\re")).toBe("a/b c d e");
    expect(["", "#x", "x#", "\\#"].map(safeMeasurement)).toEqual(["_", "_#x", "x#", "/#"]);
  });

  it("a coded id carries its values id and whether its codes are the spec's; names in line protocol", () => {
    expect(codedShape("e_03_07_04_012_total_solar_energy")).toMatchObject({
      measurement: "total_solar_energy",
      valuesId: "012",
      known: true,
    });
    expect(["e_04_01_00_000_x", "e_03_99_00_000_x", "e_03_01_42_000_x"].map(codedShape)).toEqual(
      [false, false, false].map((known) => expect.objectContaining({ known })),
    );
    expect(["protocol_id", "alarm_name", "e_3_07_04_000_x"].map(codedShape)).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    // the line-protocol reference: a measurement escapes commas and spaces, a tag also `=`
    expect(lineMeasurement("a b,c=d")).toBe("a\\ b\\,c=d");
    expect(lineTag("a b,c=d")).toBe("a\\ b\\,c\\=d");
  });

  it("plans the fewest requests: 20 values and 7 days at most, each value and second once", () => {
    const ids = Array.from({ length: 45 }, (_, i) => `e_00_00_00_000_v${i}`);
    // a window whose to - from is 7 days holds 604,801 seconds: two hold 14 days + 2 s, no more
    const [fromS, toS] = [1_000, 1_000 + 14 * DAY_S + 2];
    const requests = requestsFor([...ids, ...ids.slice(0, 5), "values_id"], fromS, toS);
    // 3 groups (20, 20, 5) x 3 windows
    expect(requests).toHaveLength(9);
    expect(requestCount(45, fromS, toS)).toBe(9);
    expect(requestsFor(ids, fromS, toS - 1)).toHaveLength(6);
    const seen = new Map<string, number>();
    for (const r of requests) {
      expect(r.values.length).toBeLessThanOrEqual(20);
      expect(r.toS - r.fromS).toBeLessThanOrEqual(7 * DAY_S);
      for (const v of r.values) seen.set(v, (seen.get(v) ?? 0) + r.toS - r.fromS + 1);
    }
    expect([...seen.keys()].sort()).toEqual([...ids].sort());
    for (const seconds of seen.values()) expect(seconds).toBe(toS - fromS + 1);
    expect(requestsFor(ids, 5, 4)).toEqual([]);
    expect(requestCount(0, 0, DAY_S)).toBe(0);
  });

  it("counts a fleet's value groups over one window, resource by resource", () => {
    const fleet = createFleet({ seed: 1, devices: 3 });
    let groups = 0;
    for (const d of fleet.deviceIds())
      for (const r of fleet.resourceIds(d) ?? []) {
        const n = (fleet.valueIds(d, r) ?? []).filter((v) => v !== "values_id").length;
        groups += Math.ceil(n / 20);
      }
    expect(groups).toBeGreaterThan(3);
    expect(fleetGroupCount(fleet)).toBe(groups);
  });
});

describe("src against the schema oracle", () => {
  const codes = (n: number, width: number) =>
    Array.from({ length: n }, (_, i) => String(i).padStart(width, "0"));

  it("decodeValueId decodes every prefix, unit and type code (and the next unknown ones) as the spec's tables", () => {
    const wrong: string[] = [];
    for (const p of codes(5, 2))
      for (const u of codes(32, 2))
        for (const t of codes(8, 2)) {
          const id = `e_${p}_${u}_${t}_001_name_${p}`;
          const want = idShape(id);
          const got = decodeValueId(id);
          const have = { measurement: got.measurement, type: got.type, unit: got.unit };
          if (JSON.stringify(have) !== JSON.stringify({ ...want, field: undefined }))
            wrong.push(id);
        }
    expect(wrong.slice(0, 5)).toEqual([]);
  });

  it.each([
    [45, 1_000, 1_000 + 14 * DAY_S + 1],
    [45, 1_000, 1_000 + 14 * DAY_S + 2],
    [20, 0, 7 * DAY_S],
    [21, 0, 7 * DAY_S + 1],
    [1, 0, 0],
    [61, 0, 30 * DAY_S - 1],
    [0, 0, DAY_S],
  ])("planChunks plans %i values over [%i, %i] as the oracle", (n, fromS, toS) => {
    const ids = Array.from({ length: n }, (_, i) => `id${(i * 7919) % 1000}`);
    const plan = planChunks([...ids, "values_id"], fromS, toS).map((c) => ({
      index: c.index,
      values: [...c.values],
      fromS: c.fromS,
      toS: c.toS,
    }));
    expect(plan).toEqual(requestsFor(ids, fromS, toS));
    expect(plan).toHaveLength(requestCount(n, fromS, toS));
  });
});
