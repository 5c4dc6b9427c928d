import type { DataRecord } from "../../src/records/data-record.js";
import { AnswerScreen } from "../../src/transform/screen-answer.js";

const FROM = Date.UTC(2026, 5, 15, 0) / 1000;
const TO = Date.UTC(2026, 5, 15, 1) / 1000;
const A = "e_03_01_00_000_total_solar_power";

const row = (timestamp: string, values: Record<string, number | null>, valuesId: unknown = 0) =>
  ({ timestamp, values_id: valuesId, ...values }) as DataRecord;

describe("AnswerScreen: only what was asked for", () => {
  it("keeps rows inside the window (both ends inclusive), drops and counts the others", () => {
    const screen = new AnswerScreen(FROM, TO);
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

  it("keeps the first row of a (timestamp, values_id), across pages, by the stored tag", () => {
    const screen = new AnswerScreen(FROM, TO);
    const first = screen.keep([
      row("2026-06-15T00:10:00", { [A]: 1 }, 1),
      row("2026-06-15T00:10:00", { [A]: 99 }, 1),
      row("2026-06-15T00:10:00", { [A]: 2 }, 2),
      // the same readout as 1 once stored (tag values_id=001): a duplicate too
      row("2026-06-15T00:10:00", { [A]: 3 }, "001"),
      row("2026-06-15T00:10:00", { [A]: 4 }, "1"),
      row("2026-06-15T00:10:00", { [A]: 5 }, null),
    ]);
    const second = screen.keep([row("2026-06-15T00:10:00", { [A]: 98 }, 2)]);
    expect(first.map((r) => r[A])).toEqual([1, 2, 5]);
    expect(second).toEqual([]);
    expect(screen.stats.duplicates).toBe(4);
  });

  it("counts the members the client removed and names a few, once each", () => {
    const screen = new AnswerScreen(FROM, TO);
    screen.noteExtras(10_001, ["etl_run", "extra_0", "extra_1"]);
    screen.noteExtras(3, ["etl_run", "extra_2", "extra_3", "extra_4"]);
    expect(screen.stats.extraMembers).toBe(10_004);
    expect(screen.extraExamples).toEqual(["etl_run", "extra_0", "extra_1", "extra_2", "extra_3"]);
  });
});
