import { estimateBackfill, medianMs } from "../../src/pipeline/backfill-estimate.js";

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
