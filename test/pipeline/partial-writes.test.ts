/**
 * Issue 33 item 6, end to end: a front before the real influxd drops points the way InfluxDB 1.x
 * does (`partial write: ... dropped=N`, naming no line). A backfill over real HTTP stores every
 * other point, keeps every dropped line as a dead letter in the real SQLite file within a bounded
 * number of write requests; run again once the front drops nothing, it writes the same lines and
 * the dead letters are gone.
 */

import { PARTIAL_NARROW_REQUESTS } from "../../src/influx/narrow-refused.js";
import { runBackfillJob } from "../../src/pipeline/backfill-job.js";
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import type { DataRecord } from "../../src/records/data-record.js";
import { queueJob } from "../support/backfill-jobs.js";
import { devicePoints, dropTestDb } from "../support/bad-data.js";
import { expectedPoints, type StoredPoint, sortPoints } from "../support/expected-points.js";
import { createTestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb, testRun } from "../support/pipeline.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";
import { startWriteFront } from "../support/write-front.js";

const HOUR_S = 3600;
const NOW_MS = Date.UTC(2026, 5, 20, 12);
const DEVICE = "partial-site";
const RESOURCE = "readout-4";
const IDS = Array.from(
  { length: 20 },
  (_, k) => `e_03_01_00_004_member_${String(k + 1).padStart(2, "0")}`,
);
/** Dropped: every line of member_05, and every line of the hours 3 and 10 of each day. */
const dropsLine = (line: string): boolean => {
  const hour = Math.floor(Number(line.slice(line.lastIndexOf(" ") + 1)) / HOUR_S) % 24;
  return line.startsWith("member_05,") || hour === 3 || hour === 10;
};
const dropsPoint = (p: StoredPoint): boolean =>
  p.measurement === "member_05" || [3, 10].includes(Math.floor(p.time / HOUR_S) % 24);

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function backfill(pipeline: Pipeline, fromS: number, toS: number) {
  const spec = { deviceId: DEVICE, resourceId: RESOURCE, valueIds: IDS, fromS, toS };
  const { job } = queueJob(pipeline.store.jobs, { ...spec, reason: "manual" }, 1, pipeline.now());
  return runBackfillJob(pipeline, testRun(pipeline), job);
}

it("a partial write naming no line: good points stored, dropped ones kept, resolved by a clean rerun", async () => {
  const clock = new ManualClock(NOW_MS);
  const sim = await startTestSimulator({ now: clock.now, resolutionS: HOUR_S });
  cleanups.push(() => sim.close());
  sim.fleet.addDevice(DEVICE, "gridtied");
  for (const id of IDS) sim.fleet.addValue(DEVICE, RESOURCE, id);
  const db = await createTestInfluxDb("partial_front");
  cleanups.push(() => dropTestDb(db));
  const front = await startWriteFront({ target: db.url, drop: dropsLine });
  cleanups.push(() => front.close());
  const { pipeline } = await openTestPipeline(
    pipelineEnv(sim, { ...db, url: front.url }, tempStateDb()),
    () => new Date(clock.now()),
  );
  cleanups.push(() => pipeline.close());
  const toS = NOW_MS / 1000 - HOUR_S;
  const fromS = toS - 2 * 24 * HOUR_S;
  const rows: DataRecord[] = sim.fleet.records(DEVICE, RESOURCE, IDS, fromS, toS);
  const truth = expectedPoints(DEVICE, RESOURCE, rows);
  expect(truth.length).toBeGreaterThan(900);

  // (the start-up check writes an empty body)
  const before = front.writes();
  const first = await backfill(pipeline, fromS, toS);
  expect(first.status).toBe("done");
  expect(sortPoints(await devicePoints(db, DEVICE))).toEqual(
    sortPoints(truth.filter((p) => !dropsPoint(p))),
  );
  const letters = pipeline.store.deadLetters.list();
  const kept = new Set(letters.map((l) => l.payload));
  expect(letters.every((l) => l.kind === "line")).toBe(true);
  expect(front.dropped.size).toBe(truth.filter(dropsPoint).length);
  for (const line of front.dropped) expect(kept.has(line)).toBe(true);
  // a good line is kept only from a group still mixed when the requests were spent, saying so
  for (const letter of letters.filter((l) => !front.dropped.has(l.payload))) {
    expect(letter.error).toMatch(/of them were stored\)$/);
  }
  // one batch (under 5,000 lines): the write and at most PARTIAL_NARROW_REQUESTS more
  expect(front.writes() - before).toBeLessThanOrEqual(1 + PARTIAL_NARROW_REQUESTS);

  front.drop = () => false;
  const again = await backfill(pipeline, fromS, toS);
  expect(again.status).toBe("done");
  expect(pipeline.store.deadLetters.list()).toEqual([]);
  expect(sortPoints(await devicePoints(db, DEVICE))).toEqual(sortPoints(truth));
});
