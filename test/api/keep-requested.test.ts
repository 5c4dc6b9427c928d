import { keepRequested } from "../../src/api/schemas.js";

const A = "e_03_01_00_000_total_solar_power";
const B = "e_03_01_00_000_total_load_power";

describe("keepRequested: a row cut to what was asked for, then judged", () => {
  it("removes unrequested members whatever their value, names them, and keeps the row", () => {
    const extras: string[] = [];
    const row: Record<string, unknown> = {
      timestamp: "2026-06-15T00:00:00",
      values_id: 1,
      [A]: 1.5,
      [B]: null,
      etl_run: 1,
      nested: { x: 1 },
      huge: Number.POSITIVE_INFINITY,
    };
    expect(keepRequested(row, new Set([A, B]), extras)).toBe(true);
    expect(row).toEqual({ timestamp: "2026-06-15T00:00:00", values_id: 1, [A]: 1.5, [B]: null });
    expect(extras).toEqual(["etl_run", "nested", "huge"]);
  });

  it.each<[string, Record<string, unknown>]>([
    ["a requested member that is an object", { timestamp: "2026-06-15T00:00:00", [A]: { v: 1 } }],
    [
      "a requested member out of range (1e400)",
      { timestamp: "2026-06-15T00:00:00", [A]: Infinity },
    ],
    ["values_id as an array", { timestamp: "2026-06-15T00:00:00", values_id: [1] }],
    ["no timestamp", { [A]: 1 }],
    ["an impossible timestamp", { timestamp: "2026-02-30T00:00:00", [A]: 1 }],
  ])("refuses %s", (_what, row) => {
    expect(keepRequested(row, new Set([A]), [])).toBe(false);
  });

  it("refuses what is not an object", () => {
    for (const value of [null, 1, "x", [{ timestamp: "2026-06-15T00:00:00" }]]) {
      expect(keepRequested(value, new Set([A]), [])).toBe(false);
    }
  });
});
