/**
 * The one chunk runner (src/pipeline/chunk-runner.ts) against the simulator over HTTP, a real
 * influxd and a real SQLite file: every chunk runs once and its outcome comes back with its
 * counts and the API's clock; an answer that failed midway is written again from its start and
 * counted once; a failing chunk is an outcome, not the end of the others.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ApiError } from "../../src/api/errors.js";
import type { ChunkOutcome } from "../../src/pipeline/chunk-runner.js";
import { failsOnItsOwn } from "../../src/pipeline/errors.js";
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import type { Chunk } from "../../src/pipeline/plan-chunks.js";
import type { Simulator } from "../../src/simulator/server.js";
import { linesOf } from "../../src/transform/line-protocol.js";
import { expectedPoints, sortPoints, storedPoints } from "../support/expected-points.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import {
  openTestPipeline,
  pipelineEnv,
  runChunks,
  tempStateDb,
  testRun,
} from "../support/pipeline.js";
import { requestsFor } from "../support/schema-oracle.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";
import { waitUntil } from "../support/wait.js";

const NOW_MS = Date.UTC(2026, 5, 15, 12);
const DAY_S = 86_400;
const DEVICE = "hybrid-site-01";
const RESOURCE = "all_data";
const TARGET = { deviceId: DEVICE, resourceId: RESOURCE };

async function outcomesOf(run: AsyncIterable<ChunkOutcome>): Promise<ChunkOutcome[]> {
  const outcomes: ChunkOutcome[] = [];
  for await (const outcome of run) outcomes.push(outcome);
  return outcomes;
}

describe("ChunkRunner: the one place chunks run", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  let pipeline: Pipeline;
  const clock = new ManualClock(NOW_MS);
  let values: string[];

  beforeAll(async () => {
    sim = await startTestSimulator({ now: clock.now, resolutionS: 60 });
    values = (sim.fleet.valueIds(DEVICE, RESOURCE) ?? []).filter((v) => v !== "values_id");
  });
  beforeEach(async () => {
    sim.faults = {};
    sim.resetLog();
    db = await createTestInfluxDb("chunks");
    ({ pipeline } = await openTestPipeline(
      pipelineEnv(sim, db, tempStateDb(), {
        // the backoff of the client's retries: a fault lasts one attempt
        API_RETRY_BASE_DELAY_MS: "1",
        API_RETRY_MAX_DELAY_MS: "2",
      }),
      () => new Date(clock.now()),
    ));
  });
  afterEach(async () => {
    await pipeline.close();
  });
  afterAll(() => sim.close());

  const truth = (chunks: readonly Chunk[]) =>
    chunks.flatMap((c) => sim.fleet.records(DEVICE, RESOURCE, c.values, c.fromS, c.toS));

  it("runs every chunk once and hands back each outcome with its counts and the API's clock", async () => {
    const toS = NOW_MS / 1000;
    const chunks = requestsFor(values, toS - DAY_S, toS);
    expect(chunks.length).toBeGreaterThan(2);
    const run = testRun(pipeline);
    const outcomes = await runChunks(pipeline, run, TARGET, chunks);
    expect(outcomes.map((o) => o.chunk.index).sort((a, b) => a - b)).toEqual(
      chunks.map((c) => c.index),
    );
    const records = truth(chunks);
    const expected = expectedPoints(DEVICE, RESOURCE, records);
    let points = 0;
    for (const outcome of outcomes) {
      if ("error" in outcome) throw outcome.error;
      expect(outcome.result.requests).toBe(1);
      // the simulator's Date header is its clock
      expect(outcome.result.serverTimeS).toBe(NOW_MS / 1000);
      expect(outcome.result.newestRecordS).toBe(toS);
      points += outcome.result.points;
    }
    expect(points).toBe(expected.length);
    expect(run.counters).toMatchObject({
      requests: chunks.length,
      dataRequests: chunks.length,
      chunks: chunks.length,
      points: expected.length,
    });
    expect(sim.count("data")).toBe(chunks.length);
    expect(sortPoints(await storedPoints(db))).toEqual(sortPoints(expected));
  });

  it("an answer cut off midway is retried before anything is written: each point written once", async () => {
    const toS = NOW_MS / 1000;
    // one value group over 7 days at 1-minute resolution: 10,081 records in 3 batches; the
    // first answer is cut to half its body, the retry answers whole
    const [chunk] = requestsFor(values.slice(0, 3), toS - 7 * DAY_S, toS);
    if (chunk === undefined) throw new Error("no chunk planned");
    let draws = 0;
    sim.faults = {
      endpoints: ["data"],
      // drawn once per request: the first answer is cut off, the next ones are whole
      get malformedRate() {
        return draws++ === 0 ? 1 : 0;
      },
    };
    const run = testRun(pipeline);
    const written: string[] = [];
    /** The data answers the simulator had sent when each write started. */
    const answersAtWrite: number[] = [];
    const sink = pipeline.sink;
    const write = sink.write.bind(sink);
    const dataSent = () => sim.requests.filter((r) => r.endpoint === "data").length;
    sink.write = async (batch) => {
      answersAtWrite.push(dataSent());
      written.push(...linesOf(batch));
      return write(batch);
    };
    const [outcome, ...more] = await runChunks(pipeline, run, TARGET, [chunk]);
    expect(more).toEqual([]);
    sim.faults = {};
    if (outcome === undefined || "error" in outcome) throw new Error("the chunk failed");
    const expected = expectedPoints(DEVICE, RESOURCE, truth([chunk]));
    expect(sim.requests.filter((r) => r.endpoint === "data").map((r) => r.status)).toEqual([
      200, 200,
    ]);
    // no write before the second (whole) answer; each point's line written exactly once
    expect(answersAtWrite.length).toBeGreaterThan(1);
    expect(answersAtWrite.every((n) => n === 2)).toBe(true);
    expect(written).toHaveLength(expected.length);
    expect(new Set(written).size).toBe(expected.length);
    expect(outcome.result).toMatchObject({
      requests: 2,
      records: 10_081,
      points: expected.length,
      deadLetters: 0,
    });
    expect(run.counters).toMatchObject({ requests: 2, dataRequests: 1, points: expected.length });
    expect(sortPoints(await storedPoints(db))).toEqual(sortPoints(expected));
  });

  it("commits each stored chunk (the caller's commit) before its outcome comes back; a commit that throws ends the run with its error, nothing committed after it", async () => {
    const toS = NOW_MS / 1000;
    const chunks = requestsFor(values.slice(0, 60), toS - DAY_S, toS);
    expect(chunks.length).toBe(3);
    const committed = new Map<number, number>();
    const run = testRun(pipeline);
    const commit = (chunk: Chunk, result: { points: number }) => {
      committed.set(chunk.index, result.points);
    };
    for await (const outcome of pipeline.chunks.run(run, TARGET, chunks, { commit })) {
      if ("error" in outcome) throw outcome.error;
      // the commit came first, with what the outcome says
      expect(committed.get(outcome.chunk.index)).toBe(outcome.result.points);
    }
    expect([...committed.keys()].sort((a, b) => a - b)).toEqual(chunks.map((c) => c.index));
    const points = [...committed.values()].reduce((a, b) => a + b, 0);
    expect(points).toBe(expectedPoints(DEVICE, RESOURCE, truth(chunks)).length);

    sim.resetLog();
    const full = new Error("state file full");
    let commits = 0;
    const failing = testRun(pipeline);
    const throwing = () => {
      commits++;
      throw full;
    };
    await expect(
      outcomesOf(pipeline.chunks.run(failing, TARGET, chunks, { commit: throwing })),
    ).rejects.toBe(full);
    // every chunk that started (its request made) has come to its commit: none was called again
    await pipeline.chunks.onIdle();
    const started = sim.count("data");
    await waitUntil(() => failing.counters.chunks >= started, "the started chunks to finish", {
      timeoutMs: 10_000,
    });
    expect(commits).toBe(1);
  });

  it("a failing chunk is an outcome of its own; the others run; a stop starts none", async () => {
    const toS = NOW_MS / 1000;
    const good = requestsFor(values.slice(0, 2), toS - DAY_S, toS);
    const bad: Chunk = {
      index: 99,
      values: ["e_00_00_00_000_no_such_value"],
      fromS: toS - DAY_S,
      toS,
    };
    const run = testRun(pipeline);
    const outcomes = await runChunks(pipeline, run, TARGET, [...good, bad]);
    const failed = outcomes.filter((o) => "error" in o);
    expect(failed.map((o) => o.chunk.index)).toEqual([99]);
    expect(outcomes.filter((o) => "result" in o)).toHaveLength(good.length);
    expect(run.counters.chunkErrors).toBe(1);

    sim.resetLog();
    const stopped = await runChunks(pipeline, testRun(pipeline), TARGET, good, {
      stop: () => true,
    });
    expect(stopped).toEqual([]);
    expect(sim.count("data")).toBe(0);
  });

  it("takes no run without a commit: one past the types fails at its first stored chunk", async () => {
    const toS = NOW_MS / 1000;
    const chunks = requestsFor(values.slice(0, 2), toS - DAY_S, toS);
    // @ts-expect-error the commit is required: a run whose stored chunks move no cursor is a bug
    const run = pipeline.chunks.run(testRun(pipeline), TARGET, chunks, {});
    await expect(outcomesOf(run)).rejects.toThrow(TypeError);
    await pipeline.chunks.onIdle();
    expect(sim.count("data")).toBe(chunks.length);
  });
});

/**
 * Forwards every request to `target`; a GET /data answer comes back cut right after a `]` inside
 * a last record that never closes: it ends in `]`, so only the transcoder finds it cut.
 */
async function cuttingProxy(target: string): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([k, v]) => k !== "host" && typeof v === "string"),
      ) as Record<string, string>;
      const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
      const answer = await fetch(`${target}${req.url ?? "/"}`, {
        method: req.method,
        headers,
        body,
      });
      let text = await answer.text();
      if (req.url?.startsWith("/data/") && answer.ok) {
        text = `${text.trimEnd().slice(0, -1)},{"timestamp":"2026-06-15T11:59:00","x":[1,2]`;
      }
      const type = answer.headers.get("content-type") ?? "application/json";
      res.writeHead(answer.status, {
        "content-type": type,
        date: answer.headers.get("date") ?? "",
      });
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe("ChunkRunner: a body whose cut shows only while it is transcoded", () => {
  const clock = new ManualClock(NOW_MS);

  it("fails its chunk for good after one request (no retry loop); what was written before stays", async () => {
    const sim = await startTestSimulator({ now: clock.now, resolutionS: 60 });
    const proxy = await cuttingProxy(sim.url);
    const db = await createTestInfluxDb("chunks-cut");
    const env = pipelineEnv(sim, db, tempStateDb(), {
      ENERGY_API_URL: proxy.url,
      // several writes before the end of the body is reached
      INFLUX_BATCH_SIZE: "500",
    });
    const { pipeline } = await openTestPipeline(env, () => new Date(clock.now()));
    try {
      const values = (sim.fleet.valueIds(DEVICE, RESOURCE) ?? []).filter((v) => v !== "values_id");
      const toS = NOW_MS / 1000;
      const [chunk] = requestsFor(values.slice(0, 3), toS - DAY_S, toS);
      if (chunk === undefined) throw new Error("no chunk planned");
      const run = testRun(pipeline);
      const [outcome, ...more] = await runChunks(pipeline, run, TARGET, [chunk]);
      expect(more).toEqual([]);
      if (outcome === undefined || !("error" in outcome)) throw new Error("the chunk did not fail");
      const { error } = outcome;
      expect(error).toBeInstanceOf(ApiError);
      expect(error).toMatchObject({ code: "invalid_response", retryable: false });
      expect(String(error)).toMatch(/the array is not closed/);
      // final: a sync parks the window after FAILURES_PARK_AFTER failures, as other bad answers
      expect(failsOnItsOwn(error)).toBe(true);
      expect(sim.count("data")).toBe(1);
      const records = sim.fleet.records(DEVICE, RESOURCE, chunk.values, chunk.fromS, chunk.toS);
      const expected = new Set(sortPoints(expectedPoints(DEVICE, RESOURCE, records)));
      const stored = sortPoints(await storedPoints(db));
      expect(stored.length).toBeGreaterThan(0);
      expect(stored.every((p) => expected.has(p))).toBe(true);
    } finally {
      await pipeline.close();
      await new Promise<void>((resolve) => proxy.server.close(() => resolve()));
      await sim.close();
    }
  });
});
