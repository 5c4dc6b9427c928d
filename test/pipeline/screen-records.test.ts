import type { DataRecord } from "../../src/api/schemas.js";
import { AnswerScreen } from "../../src/pipeline/screen-records.js";

const FROM = Date.UTC(2026, 5, 15, 0) / 1000;
const TO = Date.UTC(2026, 5, 15, 1) / 1000;
const A = "e_03_01_00_000_total_solar_power";
const B = "e_03_01_00_000_total_load_power";

const row = (timestamp: string, values: Record<string, number | null>, valuesId: unknown = 0) =>
  ({ timestamp, values_id: valuesId, ...values }) as DataRecord;

describe("AnswerScreen: only what was asked for", () => {
  it("keeps rows inside the window (both ends inclusive), drops and counts the others", () => {
    const screen = new AnswerScreen([A], FROM, TO);
    const kept = screen.keep([
      row("2026-06-14T23:59:59", { [A]: 1 }),
      row("2026-06-15T00:00:00", { [A]: 2 }),
      row("2026-06-15T01:00:00", { [A]: 3 }),
      row("2026-06-15T01:00:01", { [A]: 4 }),
      row("2300-01-01T00:00:00", { [A]: 5 }),
      row("0000-01-01T00:00:00", { [A]: 6 }),
    ]);
    expect(kept.map((r) => r[A])).toEqual([2, 3]);
    expect(screen.stats).toEqual({ outOfWindow: 4, duplicates: 0, extraMembers: 0 });
  });

  it("keeps the first row of a (timestamp, values_id), across pages; values_id types differ", () => {
    const screen = new AnswerScreen([A], FROM, TO);
    const first = screen.keep([
      row("2026-06-15T00:10:00", { [A]: 1 }, 1),
      row("2026-06-15T00:10:00", { [A]: 99 }, 1),
      row("2026-06-15T00:10:00", { [A]: 2 }, 2),
      row("2026-06-15T00:10:00", { [A]: 3 }, "1"),
    ]);
    const second = screen.keep([row("2026-06-15T00:10:00", { [A]: 98 }, 2)]);
    expect(first.map((r) => r[A])).toEqual([1, 2, 3]);
    expect(second).toEqual([]);
    expect(screen.stats.duplicates).toBe(2);
  });

  it("removes members that were not requested, counts them, and names a few", () => {
    const screen = new AnswerScreen([A, B], FROM, TO);
    const extra = Object.fromEntries(
      Array.from({ length: 10_000 }, (_, i) => [`extra_${i}`, i] as const),
    );
    const [kept] = screen.keep([
      row("2026-06-15T00:20:00", { [A]: 1, [B]: null, etl_run: 1, ...extra }),
    ]);
    expect(kept).toEqual({ timestamp: "2026-06-15T00:20:00", values_id: 0, [A]: 1, [B]: null });
    expect(screen.stats.extraMembers).toBe(10_001);
    expect(screen.extraExamples).toEqual(["etl_run", "extra_0", "extra_1", "extra_2", "extra_3"]);
    expect(screen.dropped).toBe(true);
  });

  it("restart() forgets the rows seen (a retry starts the answer over)", () => {
    const screen = new AnswerScreen([A], FROM, TO);
    screen.keep([row("2026-06-15T00:30:00", { [A]: 1 })]);
    screen.restart();
    expect(screen.keep([row("2026-06-15T00:30:00", { [A]: 1 })])).toHaveLength(1);
    expect(screen.stats).toEqual({ outOfWindow: 0, duplicates: 0, extraMembers: 0 });
    expect(screen.dropped).toBe(false);
  });
});
