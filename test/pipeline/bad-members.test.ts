/**
 * Issue 18 item 3: one bad member of a record is set aside alone. A readout of 20 members whose
 * first member the simulator sends as 1e400 (over real HTTP): its 19 good members reach the real
 * influxd, the bad one is a dead letter of its own in the real SQLite state file (kind `member`,
 * the whole row kept for context), and a re-read of the same row adds no second letter.
 */

import { runBackfillJob } from "../../src/pipeline/backfill-job.js";
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import type { DataRecord } from "../../src/records/data-record.js";
import { POISON_TEXT, type Simulator } from "../../src/simulator/server.js";
import { queueJob } from "../support/backfill-jobs.js";
import { devicePoints, dropTestDb, findClock, recordS } from "../support/bad-data.js";
import { expectedPoints, sortPoints } from "../support/expected-points.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb, testRun } from "../support/pipeline.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const BASE_MS = Date.UTC(2026, 5, 15, 12);
const HOUR_S = 3600;
const DEVICE = "twenty-members";
const RESOURCE = "readout-9";
/** Twenty values of one readout (values_id 9): every row of it carries all twenty. */
const IDS = Array.from(
  { length: 20 },
  (_, k) => `e_03_01_00_009_member_${String(k + 1).padStart(2, "0")}`,
);

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A row as the simulator sends it poisoned: its first member as 1e400. */
function poisonedText(row: DataRecord): string {
  const parts = Object.entries(row).map(
    ([key, value]) =>
      `${JSON.stringify(key)}:${key === IDS[0] ? POISON_TEXT : JSON.stringify(value)}`,
  );
  return `{${parts.join(",")}}`;
}

async function setUp(
  clock: ManualClock,
): Promise<{ sim: Simulator; db: TestInfluxDb; pipeline: Pipeline }> {
  const sim = await startTestSimulator({
    now: clock.now,
    resolutionS: HOUR_S,
    dataFaults: { poisonRate: 0.05 },
  });
  cleanups.push(() => sim.close());
  sim.fleet.addDevice(DEVICE, "gridtied");
  for (const id of IDS) sim.fleet.addValue(DEVICE, RESOURCE, id);
  const db = await createTestInfluxDb("bad_member");
  cleanups.push(() => dropTestDb(db));
  const stateDb = tempStateDb();
  const { pipeline } = await openTestPipeline(
    pipelineEnv(sim, db, stateDb),
    () => new Date(clock.now()),
  );
  cleanups.push(() => pipeline.close());
  return { sim, db, pipeline };
}

/** Fetches [fromS, toS] of the twenty values as one backfill job (one GET /data request). */
async function fetchWindow(pipeline: Pipeline, fromS: number, toS: number) {
  const spec = {
    deviceId: DEVICE,
    resourceId: RESOURCE,
    valueIds: IDS,
    fromS,
    toS,
    reason: "manual" as const,
  };
  const { job } = queueJob(pipeline.store.jobs, spec, 1, pipeline.now());
  return runBackfillJob(pipeline, testRun(pipeline), job);
}

it("a record with one bad member: 19 points written, 1 member in dead letters", async () => {
  const clock = new ManualClock(BASE_MS);
  const { sim, db, pipeline } = await setUp(clock);
  // six hours of the readout in which exactly one row is sent poisoned
  const { nowMs, found } = findClock(BASE_MS, HOUR_S * 1000, 500, (candidateMs) => {
    const toS = candidateMs / 1000;
    const fromS = toS - 6 * HOUR_S;
    const rows = sim.fleet.records(DEVICE, RESOURCE, IDS, fromS, toS);
    const poisoned = rows.filter((r) =>
      sim.rowHasFault("poison", DEVICE, r.timestamp, r.values_id),
    );
    const [row] = poisoned;
    return poisoned.length === 1 && row !== undefined ? { fromS, toS, rows, row } : undefined;
  });
  clock.nowMs = nowMs;
  const { fromS, toS, rows, row } = found;
  expect(rows.every((r) => Object.keys(r).length === 2 + IDS.length)).toBe(true);
  const rowTruth = expectedPoints(DEVICE, RESOURCE, [row]);
  expect(rowTruth).toHaveLength(20);

  const job = await fetchWindow(pipeline, fromS, toS);
  expect(job.status).toBe("done");

  // the poisoned record: its 19 good members are stored, the bad one is not
  const stored = await devicePoints(db, DEVICE);
  const atRow = stored.filter((p) => p.time === recordS(row.timestamp));
  expect(atRow).toHaveLength(19);
  const good = Object.fromEntries(Object.entries(row).filter(([k]) => k !== IDS[0])) as DataRecord;
  expect(sortPoints(atRow)).toEqual(sortPoints(expectedPoints(DEVICE, RESOURCE, [good])));
  // every other record whole
  const others = rows.filter((r) => r !== row);
  expect(sortPoints(stored.filter((p) => p.time !== recordS(row.timestamp)))).toEqual(
    sortPoints(expectedPoints(DEVICE, RESOURCE, others)),
  );

  // one dead letter: the member, with the whole row as received
  const letters = pipeline.store.deadLetters.list();
  expect(letters).toEqual([
    expect.objectContaining({
      kind: "member",
      deviceId: DEVICE,
      resourceId: RESOURCE,
      windowFromS: fromS,
      windowToS: toS,
      valueIds: [IDS[0]],
      payload: poisonedText(row),
      truncated: false,
      occurrences: 1,
    }),
  ]);
  expect(letters[0]?.error).toContain(`(${IDS[0]}: must be a finite number`);
  expect(letters.filter((l) => l.kind === "member")).toHaveLength(1);

  // the same row read again (an overlapping window, as a lookback reads it): no second letter
  const again = await fetchWindow(pipeline, fromS + HOUR_S, toS);
  expect(again.status).toBe("done");
  expect(pipeline.store.deadLetters.list()).toEqual([
    expect.objectContaining({ id: letters[0]?.id, kind: "member", occurrences: 2 }),
  ]);
  expect(sortPoints(await devicePoints(db, DEVICE))).toEqual(sortPoints(stored));
});
