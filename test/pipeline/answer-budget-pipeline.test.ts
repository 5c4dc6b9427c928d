/**
 * API_ANSWER_BUDGET_MB in the pipeline (src/pipeline/chunk-runner.ts, answer-budget.ts), against
 * the simulator over HTTP, a real influxd and a real SQLite file: with API_CONCURRENCY 8 and a
 * budget of one answer's worth, one chunk at a time is fetched and written, the points are still
 * exactly the simulator's, and every chunk gives its bytes back, also when it failed or was cut
 * by a shutdown.
 */

import type { AttemptInfo } from "../../src/api/api-request.js";
import type { PipelineMetrics } from "../../src/cli/open-pipeline.js";
import { estimateJsonBytes, heldEstimate, workingBytes } from "../../src/pipeline/answer-budget.js";
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import type { Chunk } from "../../src/pipeline/plan-chunks.js";
import type { Simulator } from "../../src/simulator/server.js";
import { expectedPoints, sortPoints, storedPoints } from "../support/expected-points.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import {
  openTestPipeline,
  pipelineEnv,
  runChunks,
  tempStateDb,
  testRun,
} from "../support/pipeline.js";
import { groupsOf } from "../support/schema-oracle.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const NOW_MS = Date.UTC(2026, 5, 15, 12);
const HOUR_S = 3600;
const DEVICE = "hybrid-site-01";
const RESOURCE = "all_data";
const TARGET = { deviceId: DEVICE, resourceId: RESOURCE };
const MIB = 2 ** 20;
/** The budget of the tests, in MiB: room for one chunk's reservation, not for two. */
const BUDGET_MB = 3;

/** Chunks of 20 values (the API's most) over `windows` windows of 6 hours before now. */
function sixHourChunks(values: readonly string[], windows: number): Chunk[] {
  const toS = NOW_MS / 1000;
  const [group] = groupsOf(values);
  if (group?.length !== 20) throw new Error("the test wants 20 values of the device");
  const chunks: Chunk[] = [];
  for (let w = windows; w >= 1; w--) {
    const fromS = toS - w * 6 * HOUR_S + 1;
    chunks.push({ index: chunks.length, values: group, fromS, toS: fromS + 6 * HOUR_S - 1 });
  }
  return chunks;
}

/**
 * Counts the chunks in flight, from the first attempt of a data request to the chunk's end, as
 * the client's telemetry and the chunk runner tell them; `onDone` is told each chunk's end.
 */
class InFlight implements PipelineMetrics {
  now = 0;
  most = 0;
  constructor(private readonly onDone: () => void = () => undefined) {}
  attemptSent(route: string): void {
    if (!route.includes("/data/")) return;
    this.now++;
    this.most = Math.max(this.most, this.now);
  }
  attemptEnded(_attempt: AttemptInfo): void {}
  retried(): void {}
  chunkDone(): void {
    this.ended();
  }
  chunkFailed(): void {
    this.ended();
  }
  private ended(): void {
    this.now--;
    this.onDone();
  }
}

describe("API_ANSWER_BUDGET_MB: what the chunks in flight hold at once", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  let values: string[];
  const clock = new ManualClock(NOW_MS);
  const opened: Pipeline[] = [];

  /** A pipeline at API_CONCURRENCY 8 and the test's budget, counting chunks with `metrics`. */
  async function openPipeline(metrics: PipelineMetrics, extra: Record<string, string> = {}) {
    const env = pipelineEnv(sim, db, tempStateDb(), {
      API_CONCURRENCY: "8",
      API_ANSWER_BUDGET_MB: String(BUDGET_MB),
      API_RETRIES: "0",
      ...extra,
    });
    const { pipeline } = await openTestPipeline(env, () => new Date(clock.now()), { metrics });
    opened.push(pipeline);
    return pipeline;
  }

  beforeAll(async () => {
    sim = await startTestSimulator({ now: clock.now, resolutionS: 60 });
    values = (sim.fleet.valueIds(DEVICE, RESOURCE) ?? []).filter((v) => v !== "values_id");
  });
  beforeEach(async () => {
    sim.resetLog();
    db = await createTestInfluxDb("budget");
  });
  afterEach(async () => {
    for (const pipeline of opened.splice(0)) await pipeline.close();
  });
  afterAll(() => sim.close());

  it("fetches and writes one answer's worth at a time at API_CONCURRENCY 8, every point exact", async () => {
    const chunks = sixHourChunks(values, 8);
    // the premise: one chunk's reservation fits the budget, two do not
    const json = estimateJsonBytes(chunks[0] ?? { values: [], fromS: 0, toS: 0 });
    const reserved = heldEstimate(json) + workingBytes(json, 5000);
    expect(reserved).toBeLessThanOrEqual(BUDGET_MB * MIB);
    expect(2 * reserved).toBeGreaterThan(BUDGET_MB * MIB);
    const inFlight = new InFlight();
    const pipeline = await openPipeline(inFlight);
    const run = testRun(pipeline);

    const outcomes = await runChunks(pipeline, run, TARGET, chunks);

    expect(inFlight.most).toBe(1);
    for (const outcome of outcomes) if ("error" in outcome) throw outcome.error;
    expect(outcomes).toHaveLength(chunks.length);
    expect(sim.count("data")).toBe(chunks.length);
    const records = chunks.flatMap((c) =>
      sim.fleet.records(DEVICE, RESOURCE, c.values, c.fromS, c.toS),
    );
    const expected = expectedPoints(DEVICE, RESOURCE, records);
    expect(expected.length).toBeGreaterThan(0);
    expect(sortPoints(await storedPoints(db))).toEqual(sortPoints(expected));
    // the budget's own high-water mark: never more than the budget (no chunk was over it alone)
    expect(pipeline.chunks.budget.peak).toBeGreaterThan(0);
    expect(pipeline.chunks.budget.peak).toBeLessThanOrEqual(BUDGET_MB * MIB);
    expect(pipeline.chunks.budget.held).toBe(0);
    expect(pipeline.chunks.budget.waiting).toBe(0);
  });

  it("runs a chunk larger than the whole budget alone, and the others after it", async () => {
    const chunks = sixHourChunks(values, 2);
    const inFlight = new InFlight();
    // 1 MiB: less than one chunk's reservation
    const pipeline = await openPipeline(inFlight, { API_ANSWER_BUDGET_MB: "1" });
    const outcomes = await runChunks(pipeline, testRun(pipeline), TARGET, chunks);
    for (const outcome of outcomes) if ("error" in outcome) throw outcome.error;
    expect(outcomes).toHaveLength(chunks.length);
    expect(inFlight.most).toBe(1);
    expect(pipeline.chunks.budget.peak).toBeGreaterThan(MIB);
    expect(pipeline.chunks.budget.held).toBe(0);
  });

  it("gives a failed chunk's bytes back: the chunks after it still run", async () => {
    const chunks = sixHourChunks(values, 2);
    const first = chunks[0];
    if (first === undefined) throw new Error("no chunk planned");
    // a value the API does not know: its request fails for good
    const bad: Chunk = { ...first, index: 99, values: ["e_00_00_00_000_no_such_value"] };
    const inFlight = new InFlight();
    const pipeline = await openPipeline(inFlight);
    const outcomes = await runChunks(pipeline, testRun(pipeline), TARGET, [bad, ...chunks]);
    expect(outcomes.filter((o) => "error" in o).map((o) => o.chunk.index)).toEqual([99]);
    expect(outcomes.filter((o) => "result" in o)).toHaveLength(chunks.length);
    expect(pipeline.chunks.budget.held).toBe(0);
    expect(pipeline.chunks.budget.waiting).toBe(0);
  });

  it("a shutdown ends every wait for budget at once: no chunk that waited starts", async () => {
    const chunks = sixHourChunks(values, 8);
    let pipeline: Pipeline | undefined;
    let stopped: Promise<boolean> | undefined;
    let waitingAtStop = 0;
    let waitingAfterStop = -1;
    let fetchedAtStop = 0;
    // the graceful stop comes as the first chunk ends: at 6 MiB two chunks are in flight, the
    // others wait for room, and their waits end with the stop, not as the two give theirs back
    const inFlight = new InFlight(() => {
      if (pipeline === undefined || pipeline.isStopping) return;
      waitingAtStop = pipeline.chunks.budget.waiting;
      fetchedAtStop = sim.count("data");
      stopped = pipeline.stop(60_000);
      waitingAfterStop = pipeline.chunks.budget.waiting;
    });
    pipeline = await openPipeline(inFlight, { API_ANSWER_BUDGET_MB: "6" });
    const outcomes = await runChunks(pipeline, testRun(pipeline), TARGET, chunks);
    expect(await stopped).toBe(true);
    expect(waitingAtStop).toBeGreaterThan(0);
    expect(waitingAfterStop).toBe(0);
    expect(sim.count("data")).toBe(fetchedAtStop);
    expect(outcomes.length).toBeLessThan(chunks.length);
    expect(pipeline.chunks.budget.held).toBe(0);
  });

  it("gives every byte back when a shutdown aborts the chunks in flight and those waiting", async () => {
    const chunks = sixHourChunks(values, 8);
    let pipeline: Pipeline | undefined;
    let inFlightAtAbort = 0;
    let waitingAtAbort = 0;
    // the shutdown comes as the first chunk ends: at 6 MiB two chunks are in flight, the others
    // wait for room
    const inFlight = new InFlight(() => {
      if (pipeline === undefined || pipeline.isStopping) return;
      inFlightAtAbort = inFlight.now;
      waitingAtAbort = pipeline.chunks.budget.waiting;
      pipeline.abort("test: shutting down");
    });
    pipeline = await openPipeline(inFlight, { API_ANSWER_BUDGET_MB: "6" });
    const outcomes = await runChunks(pipeline, testRun(pipeline), TARGET, chunks);
    expect(inFlightAtAbort).toBeGreaterThan(0);
    expect(waitingAtAbort).toBeGreaterThan(0);
    expect(outcomes.length).toBeLessThan(chunks.length);
    expect(sim.count("data")).toBeLessThan(chunks.length);
    expect(pipeline.chunks.budget.held).toBe(0);
    expect(pipeline.chunks.budget.waiting).toBe(0);
  });
});
