/**
 * What the chunk runner does when InfluxDB fails a chunk's write (src/pipeline/chunk-runner.ts,
 * chunk-writer.ts), against the simulator over HTTP, a real influxd whose database is dropped
 * under the pipeline (its writes then fail fatally: 404, bucket not found) and a real SQLite file:
 * after a fatal failure no further chunk starts; a chunk whose last write failed after earlier
 * batches were stored marks its rollup range; one that stored nothing marks none.
 */
import type { ChunkOutcome } from "../../src/pipeline/chunk-runner.js";
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import type { Chunk } from "../../src/pipeline/plan-chunks.js";
import type { Simulator } from "../../src/simulator/server.js";
import { expectedPoints } from "../support/expected-points.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { influxql } from "../support/influxd.js";
import {
  openTestPipeline,
  pipelineEnv,
  runChunks,
  tempStateDb,
  testRun,
} from "../support/pipeline.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const NOW_MS = Date.UTC(2026, 5, 15, 12);
const DAY_S = 86_400;
const DEVICE = "hybrid-site-01";
const RESOURCE = "all_data";
const TARGET = { deviceId: DEVICE, resourceId: RESOURCE };
/** A counter (spec 2.3: type cumulative), so that a chunk of it has rollups due. */
const COUNTER = "e_03_07_04_000_total_solar_energy";

/** `n` chunks of a day each of the counter, the last ending at `toS`. */
const dayChunks = (n: number, toS: number): Chunk[] =>
  Array.from({ length: n }, (_, i) => ({
    index: i,
    values: [COUNTER],
    fromS: toS - (n - i) * DAY_S + 60,
    toS: toS - (n - 1 - i) * DAY_S,
  }));

/** The error code of each outcome (`ok` for a chunk done). */
const codesOf = (outcomes: readonly ChunkOutcome[]): string[] =>
  outcomes.map((o) =>
    "error" in o ? String((o.error as { code?: unknown }).code ?? o.error) : "ok",
  );

describe("ChunkRunner when InfluxDB fails a chunk's write", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  let pipeline: Pipeline;
  let logLines: string[];
  const clock = new ManualClock(NOW_MS);
  const toS = NOW_MS / 1000;

  beforeAll(async () => {
    sim = await startTestSimulator({ now: clock.now, resolutionS: 60 });
    expect(sim.fleet.valueIds(DEVICE, RESOURCE)).toContain(COUNTER);
  });
  afterEach(async () => {
    await pipeline.close();
  });
  afterAll(() => sim.close());

  /** A pipeline on a fresh database, one API request at a time, `batch` lines a write. */
  async function open(batch: number): Promise<void> {
    sim.resetLog();
    db = await createTestInfluxDb("chunk_stops");
    ({ pipeline, logLines } = await openTestPipeline(
      pipelineEnv(sim, db, tempStateDb(), {
        API_CONCURRENCY: "1",
        INFLUX_BATCH_SIZE: String(batch),
      }),
      () => new Date(clock.now()),
    ));
  }
  const dropDatabase = () => influxql(db.rawUrl, "", `DROP DATABASE "${db.bucket}"`);
  const truth = (chunk: Chunk) =>
    expectedPoints(
      DEVICE,
      RESOURCE,
      sim.fleet.records(DEVICE, RESOURCE, chunk.values, chunk.fromS, chunk.toS),
    );

  it("after a fatal write failure no further chunk starts", async () => {
    await open(5000);
    // a chunk a day of the counter: ten chunks, each one write
    const chunks = dayChunks(10, toS);
    await dropDatabase();
    // the data requests made when the first write failure came back (counted, not timed)
    let fetchedAtFailure: number | undefined;
    const sink = pipeline.sink;
    const write = sink.write.bind(sink);
    sink.write = (batch) =>
      write(batch).catch((error: unknown) => {
        fetchedAtFailure ??= sim.count("data");
        throw error;
      });
    const outcomes = await runChunks(pipeline, testRun(pipeline), TARGET, chunks);
    // each chunk that started failed as the first did, and was fetched once
    expect(new Set(codesOf(outcomes))).toEqual(new Set(["bucket_not_found"]));
    expect(sim.count("data")).toBe(outcomes.length);
    // after the failure, at most the chunk whose turn came as it was being handled started
    if (fetchedAtFailure === undefined) throw new Error("no write failed");
    expect(sim.count("data")).toBeLessThanOrEqual(fetchedAtFailure + 1);
    expect(sim.count("data")).toBeLessThan(chunks.length);
    // what ended the run is told once, with the chunks it left for next time
    const told = logLines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.msg === "chunks not run: read next time");
    expect(told).toEqual([
      expect.objectContaining({
        ended: "fatal",
        notRun: chunks.length - outcomes.length,
        device: DEVICE,
        resource: RESOURCE,
      }),
    ]);
    // nothing was stored: no rollups are due
    expect(pipeline.store.rollups.pending()).toEqual([]);
  });

  it("a last write that failed after earlier batches were stored marks the chunk's rollups", async () => {
    const [chunk] = dayChunks(1, toS);
    if (chunk === undefined) throw new Error("no chunk planned");
    const points = truth(chunk);
    const times = points.map((p) => p.time);
    expect(points.length).toBeGreaterThan(100);
    // two writes: the first stored, the database then dropped, the last one failing
    await open(Math.ceil((points.length * 2) / 3));
    const sink = pipeline.sink;
    const write = sink.write.bind(sink);
    const stored: number[] = [];
    sink.write = async (batch) => {
      const outcome = await write(batch);
      stored.push(outcome.written);
      if (stored.length === 1) await dropDatabase();
      return outcome;
    };
    const outcomes = await runChunks(pipeline, testRun(pipeline), TARGET, [chunk]);
    expect(codesOf(outcomes)).toEqual(["bucket_not_found"]);
    expect(stored).toEqual([Math.ceil((points.length * 2) / 3)]);
    expect(pipeline.store.rollups.pending()).toEqual([
      expect.objectContaining({
        deviceId: DEVICE,
        resourceId: RESOURCE,
        fromS: Math.min(...times),
        toS: Math.max(...times),
        written: true,
      }),
    ]);
  });

  it("a chunk whose only write failed stored nothing and marks no rollups", async () => {
    const [chunk] = dayChunks(1, toS);
    if (chunk === undefined) throw new Error("no chunk planned");
    await open(5000);
    await dropDatabase();
    const outcomes = await runChunks(pipeline, testRun(pipeline), TARGET, [chunk]);
    expect(codesOf(outcomes)).toEqual(["bucket_not_found"]);
    expect(sim.count("data")).toBe(1);
    expect(pipeline.store.rollups.pending()).toEqual([]);
  });
});
