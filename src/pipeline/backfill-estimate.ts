/**
 * How long a backfill takes, for `backfill --dry-run`: the catalog first, then the jobs one after
 * the other, each job's requests `inFlight` at a time (a device's share of API_CONCURRENCY), one
 * at most every 1/API_RATE_LIMIT (the rate gate), each `latencyMs` to its whole answer; then the
 * points' own work (turning answers into line protocol, writing them): the points a request
 * brings times the time a point takes, both learned from earlier backfill runs
 * ({@link learnPointCost}; none: not counted, the requests alone). Pure.
 */
import type { RunRecord } from "../state/types.js";
import { deviceShare } from "./device-slots.js";

export interface EstimateInputs {
  /** Data requests of each job, in the order the jobs run (one job after the other). */
  readonly jobRequests: readonly number[];
  /** API_RATE_LIMIT: requests per second at most. */
  readonly ratePerSecond: number;
  /** API_CONCURRENCY: requests in flight at once (a device gets all but one of them). */
  readonly concurrency: number;
  /** One request, from sending it to its whole answer, in ms (measured). */
  readonly latencyMs: number;
  /** Reading the catalog before the first data request, in ms (as the dry run took it). */
  readonly catalogMs: number;
  /** The points' work learned from earlier runs (undefined: none to learn from, not counted). */
  readonly pointCost?: PointCost;
}

/** What a point costs, learned from earlier backfill runs ({@link learnPointCost}). */
export interface PointCost {
  /** Points a data request brought: the median of the runs' points / requests. */
  readonly pointsPerRequest: number;
  /** Wall ms a point took beyond its requests' time: the median of the runs' figures. */
  readonly msPerPoint: number;
  /** The earlier runs these are the medians of. */
  readonly runs: number;
}

/** The earlier runs learned from: the newest this many finished backfills (their `ok` ones). */
export const LEARN_FROM_RUNS = 10;
/**
 * A run with fewer points tells nothing of their cost: at the few µs a point takes, their work is
 * well under the noise of its requests' times (a latency varies by tens of ms).
 */
export const MIN_POINTS = 10_000;

export interface BackfillEstimate {
  /** The whole backfill: the catalog, then every job's requests. */
  readonly seconds: number;
  /** The data requests alone. */
  readonly dataSeconds: number;
  /** Requests in flight at once (a device's share of API_CONCURRENCY). */
  readonly inFlight: number;
  /** The data requests at the rate limit alone (latency 0). */
  readonly rateOnlySeconds: number;
  /** The data requests at the latency alone (no rate limit). */
  readonly latencyOnlySeconds: number;
  /** What holds the data requests back most: the rate limit or the latency. */
  readonly bound: "rate" | "latency";
  /** The points the data requests bring, as learned (0: not learned). */
  readonly points: number;
  /** The points' own work, after the data requests (0: not learned). */
  readonly pointsSeconds: number;
}

/** The estimate of a backfill (see the module's comment for the model). */
export function estimateBackfill(inputs: EstimateInputs): BackfillEstimate {
  const { latencyMs, catalogMs, pointCost } = inputs;
  checkMs("catalogMs", catalogMs);
  const { inFlight, gapMs } = paceOf(inputs);
  const schedule = (gap: number, latency: number) =>
    scheduleJobs(inputs.jobRequests, inFlight, gap, latency);
  const dataMs = schedule(gapMs, latencyMs);
  const rateOnlyMs = schedule(gapMs, 0);
  const latencyOnlyMs = schedule(0, latencyMs);
  const requests = inputs.jobRequests.reduce((n, r) => n + r, 0);
  const points = pointCost === undefined ? 0 : Math.round(requests * pointCost.pointsPerRequest);
  const pointsMs = pointCost === undefined ? 0 : points * pointCost.msPerPoint;
  return {
    seconds: (catalogMs + dataMs + pointsMs) / 1000,
    dataSeconds: dataMs / 1000,
    inFlight,
    rateOnlySeconds: rateOnlyMs / 1000,
    latencyOnlySeconds: latencyOnlyMs / 1000,
    bound: rateOnlyMs >= latencyOnlyMs ? "rate" : "latency",
    points,
    pointsSeconds: pointsMs / 1000,
  };
}

/** How the data requests go, as today's settings and latency say: what a run is measured by. */
export type Pace = Pick<EstimateInputs, "ratePerSecond" | "concurrency" | "latencyMs">;

/**
 * The point cost of earlier runs (newest first, as {@link LEARN_FROM_RUNS} of the runs table):
 * per `ok` backfill of at least {@link MIN_POINTS} points, its points per request, and its wall
 * time (started to ended) less what its requests take at `pace`, per point; the medians of them,
 * so that one odd run (a busy machine, a slow InfluxDB) does not decide. Undefined without such a
 * run. The requests' time is that of one job at today's settings: a run at another API_RATE_LIMIT
 * is measured as if at today's (the runs table does not hold the settings a run had).
 */
export function learnPointCost(runs: readonly RunRecord[], pace: Pace): PointCost | undefined {
  const { inFlight, gapMs } = paceOf(pace);
  const figures = runs.flatMap((run) => {
    const { requests = 0, points = 0 } = run;
    const wallMs = Date.parse(run.endedAt ?? "") - Date.parse(run.startedAt);
    const usable = run.kind === "backfill" && run.status === "ok" && requests > 0;
    if (!usable || points < MIN_POINTS || !(wallMs >= 0)) return [];
    const requestsMs = scheduleJobs([requests], inFlight, gapMs, pace.latencyMs);
    return [{ perRequest: points / requests, ms: Math.max(0, wallMs - requestsMs) / points }];
  });
  const pointsPerRequest = medianMs(figures.map((f) => f.perRequest));
  const msPerPoint = medianMs(figures.map((f) => f.ms));
  if (pointsPerRequest === undefined || msPerPoint === undefined) return undefined;
  return { pointsPerRequest, msPerPoint, runs: figures.length };
}

/** Requests in flight at once and the rate gate's gap (ms); RangeError for settings out of range. */
function paceOf(pace: Pace): { inFlight: number; gapMs: number } {
  const { ratePerSecond, latencyMs } = pace;
  if (!(Number.isFinite(ratePerSecond) && ratePerSecond > 0)) {
    throw new RangeError(`ratePerSecond must be positive, got ${ratePerSecond}`);
  }
  checkMs("latencyMs", latencyMs);
  return { inFlight: deviceShare(pace.concurrency), gapMs: 1000 / ratePerSecond };
}

function checkMs(name: string, ms: number): void {
  if (!(Number.isFinite(ms) && ms >= 0)) throw new RangeError(`${name} must be >= 0, got ${ms}`);
}

/**
 * When the last of the jobs' requests is answered (ms from the first): request i of a job starts
 * once the gate allows (`gapMs` after the one before) and one of `inFlight` slots is free
 * (request i - inFlight answered); a job starts once the one before it is all answered.
 */
function scheduleJobs(
  jobRequests: readonly number[],
  inFlight: number,
  gapMs: number,
  latencyMs: number,
): number {
  let endMs = 0;
  let lastStartMs = Number.NEGATIVE_INFINITY;
  for (const requests of jobRequests) {
    if (!Number.isSafeInteger(requests) || requests < 0) {
      throw new RangeError(`a job's requests must be a non-negative integer, got ${requests}`);
    }
    // the answer times of the requests in flight, oldest first
    const answered: number[] = [];
    const jobStartMs = endMs;
    for (let i = 0; i < requests; i++) {
      const slotFreeMs = i < inFlight ? jobStartMs : (answered[i - inFlight] ?? jobStartMs);
      const startMs = Math.max(lastStartMs + gapMs, slotFreeMs, jobStartMs);
      answered.push(startMs + latencyMs);
      lastStartMs = startMs;
      endMs = Math.max(endMs, startMs + latencyMs);
    }
  }
  return Math.max(0, endMs);
}

/** The median of samples (measured times in ms, or any figure); undefined without any. */
export function medianMs(samples: readonly number[]): number | undefined {
  if (samples.length === 0) return undefined;
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const upper = sorted[mid] ?? 0;
  return sorted.length % 2 === 1 ? upper : ((sorted[mid - 1] ?? upper) + upper) / 2;
}
