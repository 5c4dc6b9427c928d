import { z } from "zod";
import { runCli } from "../../src/cli.js";
import type { Simulator } from "../../src/simulator/server.js";
import { StateStore } from "../../src/state/state-store.js";
import { bufferIo } from "../support/cli-io.js";
import { tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";

/** Latency the simulator adds to every answer: a floor of every time the dry run measures. */
const LATENCY_MS = 250;
/**
 * That floor as measured, with room: a timer may fire a few ms before its delay by Date.now (libuv
 * starts it from the loop's cached time), never by half of it; without the latency an answer on
 * loopback takes about a millisecond, so the floor still tells the two apart.
 */
const FLOOR_MS = LATENCY_MS / 2;
const DEVICE = "hybrid-site-01";

/** The debug line with the estimate's figures (what `backfill --dry-run` printed, unrounded). */
const estimateLogSchema = z.object({
  msg: z.literal("backfill estimate"),
  seconds: z.number(),
  dataSeconds: z.number(),
  inFlight: z.number(),
  bound: z.enum(["rate", "latency"]),
  ratePerSecond: z.number(),
  concurrency: z.number(),
  latencyMs: z.number(),
  catalogMs: z.number(),
  latencySamples: z.number(),
  // optional here so that the tests, not the parse, say what an estimate without them misses
  points: z.number().optional(),
  pointsSeconds: z.number().optional(),
  learnedFromRuns: z.number().optional(),
  jobs: z.number(),
});

describe("backfill --dry-run estimates from the rate, the concurrency and the measured latency", () => {
  let sim: Simulator;

  beforeAll(async () => {
    // hourly records keep the history cheap; the data's clock is fixed, the latency is real
    sim = await startTestSimulator({
      resolutionS: 3600,
      latencyMs: LATENCY_MS,
      now: () => Date.UTC(2026, 5, 15),
    });
  });
  afterAll(() => sim.close());

  async function dryRun(extra: Record<string, string>, stateDb = tempStateDb()) {
    const env = {
      ENERGY_API_URL: sim.url,
      ENERGY_API_KEY: sim.apiKey,
      ENERGY_API_USER: "demo",
      ENERGY_API_PASSWORD: "demo-password",
      STATE_DB: stateDb,
      LOG_LEVEL: "debug",
      ...extra,
    };
    const io = bufferIo(env);
    const argv = ["backfill", "--device", DEVICE, "--from", "2026-03-01", "--to", "2026-06-01"];
    const code = await runCli([...argv, "--dry-run"], io);
    const logged = io
      .err()
      .split("\n")
      .filter((line) => line.includes('"backfill estimate"'))
      .map((line) => estimateLogSchema.parse(JSON.parse(line)));
    expect(logged).toHaveLength(1);
    return { code, out: io.out(), estimate: logged[0] };
  }

  /** Requests per job, read from the printed plan (device, resource, values, requests). */
  function jobRequests(out: string): number[] {
    return out
      .split("\n")
      .filter((line) => line.startsWith(`${DEVICE}\t`))
      .map((line) => Number(line.split("\t")[3]?.trim()));
  }

  it("at a high rate the latency holds it: waves of API_CONCURRENCY - 1 requests, one latency each", async () => {
    sim.resetLog();
    const { code, out, estimate } = await dryRun({ API_RATE_LIMIT: "1000", API_CONCURRENCY: "4" });
    expect(code).toBe(0);
    expect(sim.count("data")).toBe(0);
    if (estimate === undefined) throw new Error("no estimate logged");
    // the simulator's truth: the catalog answers are its resource list and each value list
    const resources = sim.fleet.resourceIds(DEVICE) ?? [];
    expect(estimate.latencySamples).toBe(1 + resources.length);
    expect(estimate.latencyMs).toBeGreaterThanOrEqual(FLOOR_MS);
    // the oracle: per job, ceil(n / 3) waves of the measured latency, 1 ms gate gaps in a wave
    const jobs = jobRequests(out);
    expect(jobs).toHaveLength(resources.length);
    const oracleMs = jobs.reduce(
      (ms, n) =>
        ms + Math.floor((n - 1) / 3) * estimate.latencyMs + ((n - 1) % 3) * 1 + estimate.latencyMs,
      0,
    );
    expect(estimate.inFlight).toBe(3);
    expect(estimate.bound).toBe("latency");
    expect(estimate.dataSeconds * 1000).toBeCloseTo(oracleMs, 6);
    expect(estimate.seconds * 1000).toBeCloseTo(oracleMs + estimate.catalogMs, 6);
    // the value lists are asked for once the resources are known: two latencies at least
    expect(estimate.catalogMs).toBeGreaterThanOrEqual(2 * FLOOR_MS);
    const total = jobs.reduce((a, b) => a + b, 0);
    // at least the latency's waves, far more than the rate alone says (total / 1000 s)
    const floorS = jobs.reduce((s, n) => s + (Math.ceil(n / 3) * FLOOR_MS) / 1000, 0);
    expect(estimate.seconds).toBeGreaterThan(floorS);
    expect(out).toMatch(
      new RegExp(
        `^total: ${total} requests; about \\d+(\\.\\d)? s \\(dry run: nothing fetched\\)$`,
        "m",
      ),
    );
    const span = "\\d+(\\.\\d)? s";
    const basis = [
      `estimate: catalog ${span} \\(as read now\\) \\+ requests ${span}, held by the latency`,
      "  rate: {8}at most 1000 requests/s \\(API_RATE_LIMIT\\): alone 0\\.\\d s",
      "  concurrency: 3 at once \\(API_CONCURRENCY 4, one device at a time\\)",
      `  latency: {5}\\d+ ms a request \\(median of 3 catalog answers now\\): alone ${span}`,
      "  \\+ points: {4}not counted: no earlier backfill of 10000\\+ points to learn from",
    ];
    expect(out).toMatch(new RegExp(`^${basis.join("\n")}$`, "m"));
    expect(estimate.learnedFromRuns).toBe(0);
    expect(estimate.pointsSeconds).toBe(0);
    // every line of the estimate fits an 80-column terminal
    for (const line of out.trimEnd().split("\n").slice(-6)) {
      expect(line.length).toBeLessThanOrEqual(80);
    }
    const printedMs = Number(/(\d+) ms a request/.exec(out)?.[1]);
    expect(printedMs).toBe(Math.round(estimate.latencyMs));
  });

  it("earlier backfills in the state file: their points' cost is learned and added", async () => {
    // recorded as the pipeline records runs: 3 ok backfills of 3 requests and 1,000,000 points
    // that took 30, 60 and 90 s; a failed one and a tiny one (under 10,000 points) are left out
    const stateDb = tempStateDb();
    const store = StateStore.open(stateDb);
    const T0 = Date.UTC(2026, 5, 1);
    const runs = [
      { status: "ok", wallMs: 60_000, points: 1_000_000 },
      { status: "ok", wallMs: 30_000, points: 1_000_000 },
      { status: "failed", wallMs: 900_000, points: 1_000_000 },
      { status: "ok", wallMs: 90_000, points: 1_000_000 },
      { status: "ok", wallMs: 900_000, points: 9_000 },
    ] as const;
    runs.forEach(({ status, wallMs, points }, i) => {
      const startMs = T0 + i * 3_600_000;
      const id = store.runs.start("backfill", new Date(startMs));
      const summary = { status, devices: 1, requests: 3, points, errors: 0, detail: null };
      store.runs.finish(id, summary, new Date(startMs + wallMs));
    });
    store.close();
    const { code, out, estimate } = await dryRun(
      { API_RATE_LIMIT: "1000", API_CONCURRENCY: "4" },
      stateDb,
    );
    expect(code).toBe(0);
    if (estimate === undefined) throw new Error("no estimate logged");
    // the oracle: 3 requests at 1000/s, 3 in flight take one latency and 2 gate gaps of 1 ms;
    // the median run (60 s) less that, per point; as many points a request as those runs brought
    const msPerPoint = (60_000 - (estimate.latencyMs + 2)) / 1_000_000;
    const total = jobRequests(out).reduce((a, b) => a + b, 0);
    const points = Math.round((total * 1_000_000) / 3);
    expect(estimate.seconds).toBeCloseTo(
      estimate.catalogMs / 1000 + estimate.dataSeconds + (points * msPerPoint) / 1000,
      6,
    );
    const us = (msPerPoint * 1000).toFixed(1);
    expect(out).toMatch(
      new RegExp(
        `^  \\+ points: {4}${points} at ${us.replace(".", "\\.")} µs each \\(learned from 3 earlier runs\\): \\d+(\\.\\d)? (s|min)$`,
        "m",
      ),
    );
    expect(estimate.learnedFromRuns).toBe(3);
    expect(estimate.points).toBe(points);
    expect(estimate.pointsSeconds).toBeCloseTo((points * msPerPoint) / 1000, 6);
  });

  it("at a low rate the rate limit holds it, the latency still on the last request", async () => {
    const { code, out, estimate } = await dryRun({ API_RATE_LIMIT: "2", API_CONCURRENCY: "4" });
    expect(code).toBe(0);
    if (estimate === undefined) throw new Error("no estimate logged");
    const latency = estimate.latencyMs;
    expect(latency).toBeGreaterThanOrEqual(FLOOR_MS);
    // the oracle, 500 ms apart and 3 in flight: while latency <= 1.5 s no request waits for a
    // slot (each starts 500 ms after the one before); past it, waves of 3 per latency. A job
    // starts once the one before is answered and 500 ms after its last start; the last request
    // of all takes one latency.
    const spanMs = (n: number) =>
      latency <= 1500 ? (n - 1) * 500 : Math.floor((n - 1) / 3) * latency + ((n - 1) % 3) * 500;
    const jobs = jobRequests(out);
    const oracleMs =
      jobs.reduce((ms, n) => ms + spanMs(n), 0) +
      (jobs.length - 1) * Math.max(latency, 500) +
      latency;
    expect(estimate.dataSeconds * 1000).toBeCloseTo(oracleMs, 6);
    const rateAloneMs = jobs.reduce((ms, n) => ms + (n - 1) * 500, 0);
    const latencyAloneMs = jobs.reduce((ms, n) => ms + Math.ceil(n / 3) * latency, 0);
    const bound = rateAloneMs >= latencyAloneMs ? "rate" : "latency";
    expect(estimate.bound).toBe(bound);
    expect(out).toMatch(/at most 2 requests\/s \(API_RATE_LIMIT\)/);
    expect(out).toContain(`held by ${bound === "rate" ? "the rate limit" : "the latency"}`);
  });
});
