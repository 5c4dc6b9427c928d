/**
 * `dead-letters` sums them up by default (#42): many letters of one error become one row with
 * their count and first and last time, the biggest group first. Real parts: a SQLite state file
 * holding letters as a sync keeps them, the command in-process; the expected rows come from the
 * letters this test kept.
 */
import { runCli } from "../../src/cli.js";
import { StateStore } from "../../src/state/state-store.js";
import { bufferIo } from "../support/cli-io.js";
import { asTerminal } from "../support/fake-tty.js";
import { tempStateDb } from "../support/pipeline.js";

const DEVICE = "hybrid-site-01";
const MODE = "e_00_00_03_001_operating_mode";
const TODAY = "e_03_07_05_001_energy_today";
const HOUR_S = 3600;
const BASE_S = Date.UTC(2026, 5, 15) / 1000;

/** A member dead letter of `member` in the row at `tS`, as a sync keeps it. */
function memberLetter(member: string, tS: number) {
  const timestamp = new Date(tS * 1000).toISOString().slice(0, 19);
  return {
    kind: "member" as const,
    deviceId: DEVICE,
    resourceId: "all_data",
    windowFromS: tS,
    windowToS: tS + HOUR_S,
    valueIds: [member],
    payload: `{"timestamp":"${timestamp}","values_id":1,"${member}":1e400}`,
    error:
      `GET /data/${DEVICE}/all_data answered HTTP 200 with an invalid member (${member}: must ` +
      "be a finite number, a string, a boolean or null; got Infinity, out of a double's range); " +
      `record starts: {"timestamp":"${timestamp}"`,
  };
}

describe("dead-letters by default", () => {
  const stateDb = tempStateDb();
  /** The oracle: per value id, the hours of its letters. */
  const kept = { [MODE]: [0, 5, 2, 9, 7], [TODAY]: [3, 4] };

  beforeAll(() => {
    const store = StateStore.open(stateDb);
    try {
      for (const [member, hours] of Object.entries(kept)) {
        for (const h of hours) {
          store.deadLetters.add(memberLetter(member, BASE_S + h * HOUR_S), new Date());
        }
      }
    } finally {
      store.close();
    }
  });

  const iso = (h: number) =>
    new Date((BASE_S + h * HOUR_S) * 1000).toISOString().replace(".000Z", "Z");

  it("piped: one row per device, value id and reason with its count, first and last time, the biggest first", async () => {
    const io = bufferIo({ STATE_DB: stateDb });
    expect(await runCli(["dead-letters"], io)).toBe(0);
    const [head, ...rest] = io.out().split("\n");
    expect(head).toBe("count\tdevice\tvalue id\treason\tfirst (UTC)\tlast (UTC)");
    const reason = (member: string) =>
      `an invalid member (${member}: must be a finite number, a string, a boolean or null; got Infinity, out of a double's range)`;
    expect(rest.slice(0, 2)).toEqual([
      ["5", DEVICE, MODE, reason(MODE), iso(0), iso(9)].join("\t"),
      ["2", DEVICE, TODAY, reason(TODAY), iso(3), iso(4)].join("\t"),
    ]);
    expect(rest.slice(2).join("\n")).toContain(
      "7 dead letters in 2 groups of device, value id and reason, the biggest first\n",
    );
  });

  it("on an 80-column terminal: a group's count, device and value id whole on one line, its span and reason wrapped below", async () => {
    const io = bufferIo({ STATE_DB: stateDb });
    asTerminal(io.stdout, 80);
    expect(await runCli(["dead-letters"], io)).toBe(0);
    const lines = io.out().trimEnd().split("\n");
    expect(lines.filter((line) => [...line].length > 80)).toEqual([]);
    expect(lines[0]).toBe(`5  ${DEVICE}  ${MODE}`);
    // the year only when this is another year than the letters'
    expect(lines[1]).toMatch(
      /^ {3}(2026-)?06-15 00:00 \.\. (2026-)?06-15 09:00 UTC: an invalid member/,
    );
    expect(lines.filter((line) => line.startsWith("2  "))).toEqual([`2  ${DEVICE}  ${TODAY}`]);
  });

  it("--list gives the rows, at most --limit, saying how many more", async () => {
    const io = bufferIo({ STATE_DB: stateDb });
    expect(await runCli(["dead-letters", "--list", "--limit", "3"], io)).toBe(0);
    const rows = io
      .out()
      .split("\n")
      .filter((l) => /^\d+\tmember\t/.test(l));
    expect(rows).toHaveLength(3);
    expect(io.out()).toContain("3 of 7 dead letters (");
    expect(io.out()).toContain("4 more: --limit 7\n");
  });
});
