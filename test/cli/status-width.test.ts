/**
 * `status` on an 80-column terminal (#42): no line longer than the terminal, every id whole on one
 * line, times as ages; piped, the tab-separated rows with ISO times as before. Real parts: a
 * SQLite state file, the command in-process, its stdout a terminal 80 columns wide.
 */
import { runCli } from "../../src/cli.js";
import { LOCK_TTL_MS, SERVICE_LOCK } from "../../src/state/service-lock.js";
import { StateStore } from "../../src/state/state-store.js";
import { queueJob } from "../support/backfill-jobs.js";
import { bufferIo } from "../support/cli-io.js";
import { asTerminal } from "../support/fake-tty.js";
import { tempStateDb } from "../support/pipeline.js";

const COLUMNS = 80;
const OK_DEVICE = "hybrid-site-01";
const FAILING_DEVICE = "inverter-north-roof-07";
const RESOURCE = "all_data";
const LONG_ERROR =
  "InfluxDB refused a write of 5000 lines as a whole (HTTP 400: partial write: field type " +
  'conflict: input field "total_solar_power" on measurement "inverter" is type float, ' +
  "already exists as type integer)";
const SERVICE = { id: "plant-ctl:4242:1:abcd", pid: 4242, host: "plant-ctl", command: "run" };

/** The cells of a table row that starts at `lines[start]`, each its wrapped lines joined. */
function rowCells(lines: readonly string[], start: number): string[] {
  const cells: string[][] = [];
  for (let i = start; i < lines.length; i++) {
    const parts = (lines[i] ?? "").split("│").slice(1, -1);
    if (parts.length === 0 || (i > start && (parts[0] ?? "").trim() !== "")) break;
    parts.forEach((part, column) => {
      cells[column] = [...(cells[column] ?? []), part.trim()].filter(Boolean);
    });
  }
  return cells.map((parts) => parts.join(" "));
}

describe("status on an 80-column terminal", () => {
  const stateDb = tempStateDb();
  // whole minutes ago, so that each age is one the test can name
  const nowS = Math.floor(Date.now() / 1000);
  const newestS = nowS - 3 * 60 - 20;

  beforeAll(() => {
    const store = StateStore.open(stateDb);
    const now = new Date(nowS * 1000);
    try {
      store.cursors.begin(OK_DEVICE, RESOURCE, nowS - 86_400, now);
      store.cursors.update(
        OK_DEVICE,
        RESOURCE,
        (c) => ({ ...c, newestRecordS: newestS, fetchedUntilS: newestS }),
        now,
      );
      store.cursors.begin(FAILING_DEVICE, RESOURCE, nowS - 86_400, now);
      store.cursors.recordFailure(FAILING_DEVICE, RESOURCE, LONG_ERROR, nowS + 630, now);
      const spec = {
        deviceId: FAILING_DEVICE,
        resourceId: RESOURCE,
        valueIds: ["e_03_01_00_000_total_solar_power"],
        fromS: nowS - 14 * 86_400,
        toS: nowS,
        reason: "manual" as const,
      };
      const { job } = queueJob(store.jobs, spec, 14, now);
      store.jobs.recordFailure(job.id, LONG_ERROR, nowS + 2 * 3600 + 60, 5, now);
      const run = store.runs.start("sync", new Date((nowS - 2 * 3600 - 60) * 1000));
      store.runs.finish(
        run,
        { status: "partial", devices: 1, requests: 12, points: 1, errors: 1, detail: null },
        now,
      );
      store.locks.acquire(SERVICE_LOCK, SERVICE, LOCK_TTL_MS, Date.now());
    } finally {
      store.close();
    }
  });

  it("fits: no line over 80 columns, every id whole on a line, times as ages", async () => {
    const io = bufferIo({ STATE_DB: stateDb });
    asTerminal(io.stdout, COLUMNS);
    expect(await runCli(["status"], io)).toBe(0);
    const lines = io.out().trimEnd().split("\n");
    const tooLong = lines.filter((line) => [...line].length > COLUMNS);
    expect(tooLong).toEqual([]);
    // each id stands whole in a line of the cursors' table and of the jobs' (never wrapped or cut)
    for (const id of [OK_DEVICE, FAILING_DEVICE, RESOURCE]) {
      expect(lines.filter((line) => line.includes(id)).length).toBeGreaterThanOrEqual(1);
    }
    expect(lines.filter((line) => line.includes(FAILING_DEVICE))).toHaveLength(2);
    const okRow = lines.find((line) => line.includes(OK_DEVICE)) ?? "";
    expect(okRow).toMatch(/│ 3 min ago +│ ok +│/);
    const failingRow = lines.find((line) => line.includes(FAILING_DEVICE)) ?? "";
    expect(failingRow).toMatch(/│ none yet +│ failing 1x, next in 10 min/);
    const jobRow = lines.findIndex((line) => /^│ \d+ +│/.test(line));
    expect(rowCells(lines, jobRow)).toEqual([
      expect.stringMatching(/^\d+$/),
      FAILING_DEVICE,
      RESOURCE,
      "failed 1x, next in 2 h",
      expect.stringMatching(/^(\d{4}-)?\d\d-\d\d\.\.(\d{4}-)?\d\d-\d\d$/),
      "0/14",
    ]);
    expect(io.out()).toMatch(
      /^last run: sync #\d+ partial 2 h ago: 1 device, 1 point, 12 requests, 1 error$/m,
    );
    expect(io.out()).toMatch(
      /^service: run \(pid 4242 on plant-ctl\) since \d+ s ago, heartbeat \d+ s ago$/m,
    );
  });

  it("piped: one tab-separated row per cursor, with ISO times for scripts", async () => {
    const io = bufferIo({ STATE_DB: stateDb });
    expect(await runCli(["status"], io)).toBe(0);
    const [head, ...rows] = io.out().split("\n");
    expect(head).toBe("device\tresource\tnewest record (UTC)\tlag\tstate\tdead letters");
    expect(rows.find((row) => row.startsWith(`${OK_DEVICE}\t`))?.split("\t")).toEqual([
      OK_DEVICE,
      RESOURCE,
      new Date(newestS * 1000).toISOString(),
      expect.stringMatching(/^\d+ min$/),
      "ok",
      "0",
    ]);
  });
});
