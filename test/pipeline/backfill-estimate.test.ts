import { readFileSync } from "node:fs";
import {
  estimateBackfill,
  LEARN_FROM_RUNS,
  learnPointCost,
  MIN_POINTS,
  medianMs,
} from "../../src/pipeline/backfill-estimate.js";
import { StateStore } from "../../src/state/state-store.js";
import type { RunKind, RunSummary } from "../../src/state/types.js";
import { tempStateDb } from "../support/pipeline.js";

/**
 * The oracle: one job of `n` requests, at most `e` in flight, started `gapMs` apart at the
 * soonest, each taking `latencyMs`, worked out by hand for the two regimes.
 * - latency-bound (`e * gapMs <= latencyMs`): request i starts at floor(i/e) * latency +
 *   (i mod e) * gap (a wave of e every latency, the gate spacing each wave's requests);
 * - rate-bound (`latencyMs <= e * gapMs`): request i starts at i * gap.
 * The last request's start plus its latency is the job's time.
 */
function oracleJobMs(n: number, e: number, gapMs: number, latencyMs: number): number {
  if (n === 0) return 0;
  const last = n - 1;
  if (e * gapMs <= latencyMs) {
    return Math.floor(last / e) * latencyMs + (last % e) * gapMs + latencyMs;
  }
  return last * gapMs + latencyMs;
}

describe("estimateBackfill", () => {
  it("rate-bound: requests one gap apart, the last one's latency on top, the catalog before", () => {
    // 5 requests/s: 200 ms apart; 3 in flight (API_CONCURRENCY 4) at 100 ms each never wait
    const e = estimateBackfill({
      jobRequests: [10],
      ratePerSecond: 5,
      concurrency: 4,
      latencyMs: 100,
      catalogMs: 500,
    });
    expect(e.inFlight).toBe(3);
    expect(e.dataSeconds).toBeCloseTo(oracleJobMs(10, 3, 200, 100) / 1000, 9); // 1.9 s
    expect(e.dataSeconds).toBeCloseTo(1.9, 9);
    expect(e.seconds).toBeCloseTo(2.4, 9);
    expect(e.bound).toBe("rate");
    expect(e.rateOnlySeconds).toBeCloseTo(1.8, 9);
    // the latency alone: waves of 3 every 100 ms, 4 waves
    expect(e.latencyOnlySeconds).toBeCloseTo(0.4, 9);
  });

  it("latency-bound: waves of API_CONCURRENCY - 1 requests, one latency each", () => {
    const e = estimateBackfill({
      jobRequests: [10],
      ratePerSecond: 1000,
      concurrency: 4,
      latencyMs: 300,
      catalogMs: 0,
    });
    // 4 waves (3 + 3 + 3 + 1) of 300 ms; the gate spaces a wave's requests 1 ms apart
    expect(e.dataSeconds * 1000).toBeCloseTo(oracleJobMs(10, 3, 1, 300), 6);
    expect(e.dataSeconds * 1000).toBeCloseTo(1200, 6);
    expect(e.bound).toBe("latency");
    // what the rate alone said before: 10 requests at 1000/s
    expect(e.rateOnlySeconds).toBeCloseTo(0.009, 9);
  });

  it("the user's case: 45 requests at 5/s were 'about 9 s'; at 1 s per answer they take 15+", () => {
    const e = estimateBackfill({
      jobRequests: [45],
      ratePerSecond: 5,
      concurrency: 4,
      latencyMs: 1000,
      catalogMs: 0,
    });
    expect(e.rateOnlySeconds).toBeCloseTo(8.8, 9);
    expect(e.dataSeconds * 1000).toBeCloseTo(oracleJobMs(45, 3, 200, 1000), 6);
    expect(e.dataSeconds).toBeCloseTo(15.4, 9); // 14 waves of 1 s, the last wave 2 gaps in, + 1 s
    expect(e.bound).toBe("latency");
  });

  it("jobs run one after the other: each waits for the one before to be answered", () => {
    const jobs = [4, 2, 7];
    const e = estimateBackfill({
      jobRequests: jobs,
      ratePerSecond: 1000,
      concurrency: 4,
      latencyMs: 300,
      catalogMs: 0,
    });
    const oracle = jobs.reduce((ms, n) => ms + oracleJobMs(n, 3, 1, 300), 0);
    expect(e.dataSeconds * 1000).toBeCloseTo(oracle, 6); // 600 + 301 + 900
    expect(e.dataSeconds * 1000).toBeCloseTo(1801, 6);
    // not as one job of 13 requests (1501 ms): the jobs' tails add up
    expect(e.dataSeconds * 1000).toBeGreaterThan(oracleJobMs(13, 3, 1, 300));
  });

  it("the rate gate holds across jobs: the next job's first request comes a gap after the last", () => {
    // 2/s: 500 ms apart; each job's last answer (after 100 ms) comes before the gate opens
    const e = estimateBackfill({
      jobRequests: [3, 2],
      ratePerSecond: 2,
      concurrency: 4,
      latencyMs: 100,
      catalogMs: 0,
    });
    // starts at 0, 500, 1000 | 1500, 2000; the last answered 100 ms later
    expect(e.dataSeconds * 1000).toBeCloseTo(2100, 6);
  });

  it("API_CONCURRENCY 1 keeps one request in flight", () => {
    const e = estimateBackfill({
      jobRequests: [3],
      ratePerSecond: 1000,
      concurrency: 1,
      latencyMs: 100,
      catalogMs: 0,
    });
    expect(e.inFlight).toBe(1);
    expect(e.dataSeconds * 1000).toBeCloseTo(300, 6);
  });

  it("between the two regimes it lies between the larger bound and their sum", () => {
    for (const [n, rate, concurrency, latency] of [
      [37, 5, 4, 600],
      [120, 10, 8, 700],
      [9, 2, 2, 500],
      [64, 20, 4, 150],
    ] as const) {
      const e = estimateBackfill({
        jobRequests: [n],
        ratePerSecond: rate,
        concurrency,
        latencyMs: latency,
        catalogMs: 0,
      });
      const inFlight = Math.max(1, concurrency - 1);
      const rateOnly = (n - 1) / rate;
      const latencyOnly = (Math.ceil(n / inFlight) * latency) / 1000;
      expect(e.rateOnlySeconds).toBeCloseTo(rateOnly, 9);
      expect(e.latencyOnlySeconds).toBeCloseTo(latencyOnly, 9);
      expect(e.dataSeconds).toBeGreaterThanOrEqual(Math.max(rateOnly, latencyOnly) - 1e-9);
      expect(e.dataSeconds).toBeLessThanOrEqual(rateOnly + latencyOnly + 1e-9);
      expect(e.bound).toBe(rateOnly >= latencyOnly ? "rate" : "latency");
    }
  });

  it("nothing to fetch: the catalog alone", () => {
    const e = estimateBackfill({
      jobRequests: [0, 0],
      ratePerSecond: 5,
      concurrency: 4,
      latencyMs: 200,
      catalogMs: 1500,
    });
    expect(e.dataSeconds).toBe(0);
    expect(e.seconds).toBe(1.5);
  });

  it.each([
    [{ ratePerSecond: 0 }, /ratePerSecond must be positive/],
    [{ latencyMs: -1 }, /latencyMs must be >= 0/],
    [{ catalogMs: Number.NaN }, /catalogMs must be >= 0/],
    [{ jobRequests: [1.5] }, /non-negative integer/],
  ])("refuses %j", (bad, message) => {
    const inputs = {
      jobRequests: [3],
      ratePerSecond: 5,
      concurrency: 4,
      latencyMs: 1,
      catalogMs: 0,
    };
    expect(() => estimateBackfill({ ...inputs, ...bad })).toThrow(message);
  });
});

describe("medianMs", () => {
  it("the middle sample, the mean of the two middle ones, undefined without any", () => {
    expect(medianMs([500, 100, 300])).toBe(300);
    expect(medianMs([400, 100, 300, 200])).toBe(250);
    expect(medianMs([])).toBeUndefined();
  });
});

describe("learnPointCost: the points' cost from earlier runs in the state file", () => {
  /** 5 requests/s, 3 in flight at 200 ms: rate-bound, so n requests take n * 200 ms (oracle). */
  const PACE = { ratePerSecond: 5, concurrency: 4, latencyMs: 200 };
  const requestsMs = (n: number) => n * 200;
  /** 7 days of 20 values at one-minute records: the points a full request brings. */
  const PER_REQUEST = 20 * 7 * 1440;
  const T0 = Date.UTC(2026, 5, 1);
  let store: StateStore;
  let clockMs: number;

  beforeEach(() => {
    store = StateStore.open(tempStateDb());
    clockMs = T0;
  });
  afterEach(() => store.close());

  /** A run recorded as the pipeline records it: started, then finished `wallMs` later. */
  function record(kind: RunKind, wallMs: number, summary: Partial<RunSummary>): void {
    const id = store.runs.start(kind, new Date(clockMs));
    clockMs += wallMs;
    const base: RunSummary = {
      status: "ok",
      devices: 3,
      requests: 0,
      points: 0,
      errors: 0,
      detail: null,
    };
    store.runs.finish(id, { ...base, ...summary }, new Date(clockMs));
    clockMs += 60_000;
  }

  /** The whole ms beyond its requests a run of full requests at `usPerPoint` took (the file holds ms). */
  const extraMs = (requests: number, usPerPoint: number) =>
    Math.round((requests * PER_REQUEST * usPerPoint) / 1000);

  /** An ok backfill of `requests` full requests whose points took `usPerPoint` beyond them. */
  function backfill(requests: number, usPerPoint: number): void {
    const points = requests * PER_REQUEST;
    record("backfill", requestsMs(requests) + extraMs(requests, usPerPoint), { requests, points });
  }

  const learned = () =>
    learnPointCost(store.runs.recentFinished("backfill", LEARN_FROM_RUNS), PACE);

  it("no earlier runs: nothing learned, the estimate is the requests alone", () => {
    expect(learned()).toBeUndefined();
    const e = estimateBackfill({ jobRequests: [18], ...PACE, catalogMs: 0 });
    expect(e.points).toBe(0);
    expect(e.pointsSeconds).toBe(0);
    expect(e.seconds).toBeCloseTo(requestsMs(18) / 1000, 9);
  });

  it("one tiny run (under 10,000 points) tells nothing: nothing learned", () => {
    // 2 requests of hourly records, a whole second beyond its requests: 100 µs a point if taken
    record("backfill", requestsMs(2) + 1000, { requests: 2, points: 9_999 });
    expect(learned()).toBeUndefined();
  });

  it("the median of the usable runs, the others left out; the estimate adds their points' work", () => {
    // the usable ones: 2, 3, 3.5, 4 and 12 µs a point (12: a busy machine); median 3.5
    for (const [requests, us] of [
      [6, 3],
      [3, 12],
      [6, 2],
      [9, 4],
      [6, 3.5],
    ] as const) {
      backfill(requests, us);
    }
    // left out: a failed and an interrupted backfill, a sync, a tiny backfill (all far slower)
    record("backfill", 600_000, { status: "failed", requests: 6, points: 6 * PER_REQUEST });
    record("backfill", 600_000, { status: "interrupted", requests: 6, points: 6 * PER_REQUEST });
    record("sync", 600_000, { requests: 6, points: 6 * PER_REQUEST });
    record("backfill", 600_000, { requests: 1, points: 500 });
    const cost = learned();
    expect(cost?.runs).toBe(5);
    expect(cost?.pointsPerRequest).toBeCloseTo(PER_REQUEST, 6);
    const msPerPoint = extraMs(6, 3.5) / (6 * PER_REQUEST);
    expect(msPerPoint).toBeCloseTo(0.0035, 6);
    expect(cost?.msPerPoint).toBeCloseTo(msPerPoint, 12);
    if (cost === undefined) throw new Error("nothing learned");
    // 18 requests (14 days of 3 devices): 18 * 201,600 points at 3.5 us after 3.6 s of requests
    const e = estimateBackfill({ jobRequests: [18], ...PACE, catalogMs: 400, pointCost: cost });
    const points = 18 * PER_REQUEST;
    expect(e.points).toBe(points);
    expect(e.pointsSeconds).toBeCloseTo((points * msPerPoint) / 1000, 9); // 12.7 s
    expect(e.dataSeconds).toBeCloseTo(3.6, 9);
    expect(e.seconds).toBeCloseTo(0.4 + 3.6 + (points * msPerPoint) / 1000, 9);
  });

  it("a run faster than its requests at today's pace counts as no point cost, not a negative one", () => {
    for (let i = 0; i < 3; i++) record("backfill", 100, { requests: 6, points: 6 * PER_REQUEST });
    expect(learned()).toEqual({ pointsPerRequest: PER_REQUEST, msPerPoint: 0, runs: 3 });
  });

  it(`learns from the newest ${LEARN_FROM_RUNS} finished backfills only`, () => {
    // an old, slow era (50 us a point), then LEARN_FROM_RUNS runs at 3 us
    for (let i = 0; i < LEARN_FROM_RUNS; i++) backfill(6, 50);
    for (let i = 0; i < LEARN_FROM_RUNS; i++) backfill(6, 3);
    const cost = learned();
    expect(cost?.runs).toBe(LEARN_FROM_RUNS);
    expect(cost?.msPerPoint).toBeCloseTo(extraMs(6, 3) / (6 * PER_REQUEST), 12);
  });

  it("docs/commands.md quotes how many runs and how many points as the code has them", () => {
    // the prose is reflowed: one space for any run of white space
    const doc = readFileSync("docs/commands.md", "utf8").replace(/\s+/g, " ");
    expect(doc).toContain(`of the newest ${LEARN_FROM_RUNS} finished backfills`);
    expect(doc).toContain(`at least ${MIN_POINTS.toLocaleString("en-US")} points`);
    expect(doc).toContain(`among the newest ${LEARN_FROM_RUNS}`);
  });
});
