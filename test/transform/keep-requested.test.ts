import {
  type BadMember,
  badMemberMessage,
  keepRequested,
} from "../../src/transform/screen-answer.js";

const A = "e_03_01_00_000_total_solar_power";
const B = "e_03_01_00_000_total_load_power";

describe("keepRequested: a row cut to what was asked for, then judged", () => {
  it("removes unrequested members whatever their value, names them, and keeps the row", () => {
    const extras: string[] = [];
    const bad: BadMember[] = [];
    const row: Record<string, unknown> = {
      timestamp: "2026-06-15T00:00:00",
      values_id: 1,
      [A]: 1.5,
      [B]: null,
      etl_run: 1,
      nested: { x: 1 },
      huge: Number.POSITIVE_INFINITY,
    };
    expect(keepRequested(row, new Set([A, B]), extras, bad)).toBe(true);
    expect(row).toEqual({ timestamp: "2026-06-15T00:00:00", values_id: 1, [A]: 1.5, [B]: null });
    expect(extras).toEqual(["etl_run", "nested", "huge"]);
    expect(bad).toEqual([]);
  });

  it.each<[string, unknown, string]>([
    ["an object", { v: 1 }, "an object"],
    ["an array", [1, 2], "an array"],
    ["out of range (1e400)", Number.POSITIVE_INFINITY, "Infinity, out of a double's range"],
    ["out of range (-1e400)", Number.NEGATIVE_INFINITY, "-Infinity, out of a double's range"],
  ])(
    "keeps a record whose requested member is %s, without it, and names it",
    (_what, value, got) => {
      const bad: BadMember[] = [{ valueId: "from before", value: 0 }];
      const row: Record<string, unknown> = {
        timestamp: "2026-06-15T00:00:00",
        values_id: 1,
        [A]: value,
        [B]: 2.5,
      };
      expect(keepRequested(row, new Set([A, B]), [], bad)).toBe(true);
      expect(row).toEqual({ timestamp: "2026-06-15T00:00:00", values_id: 1, [B]: 2.5 });
      expect(bad).toEqual([
        { valueId: "from before", value: 0 },
        { valueId: A, value },
      ]);
      expect(bad[1] && badMemberMessage(bad[1])).toBe(
        `${A}: must be a finite number, a string, a boolean or null; got ${got}`,
      );
    },
  );

  it("a record whose every requested member is bad is still a record (with none of them)", () => {
    const bad: BadMember[] = [];
    const row: Record<string, unknown> = { timestamp: "2026-06-15T00:00:00", [A]: [], [B]: {} };
    expect(keepRequested(row, new Set([A, B]), [], bad)).toBe(true);
    expect(row).toEqual({ timestamp: "2026-06-15T00:00:00" });
    expect(bad.map((m) => m.valueId)).toEqual([A, B]);
  });

  it.each<[string, Record<string, unknown>]>([
    ["values_id as an array", { timestamp: "2026-06-15T00:00:00", values_id: [1], [A]: 1 }],
    ["no timestamp", { [A]: 1 }],
    ["no timestamp and a bad member", { [A]: { v: 1 }, [B]: 1 }],
    ["an impossible timestamp", { timestamp: "2026-02-30T00:00:00", [A]: Infinity }],
  ])("refuses %s, leaves its requested members and sets none aside", (_what, row) => {
    const before = { ...row };
    const bad: BadMember[] = [];
    expect(keepRequested(row, new Set([A, B]), [], bad)).toBe(false);
    expect(row).toEqual(before);
    expect(bad).toEqual([]);
  });

  it("refuses what is not an object", () => {
    for (const value of [null, 1, "x", [{ timestamp: "2026-06-15T00:00:00" }]]) {
      expect(keepRequested(value, new Set([A]), [], [])).toBe(false);
    }
  });
});
