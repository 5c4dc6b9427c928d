/**
 * How long a backfill takes, for `backfill --dry-run`: the catalog first, then the jobs one after
 * the other, each job's requests `inFlight` at a time (a device's share of API_CONCURRENCY), one
 * at most every 1/API_RATE_LIMIT (the rate gate), each `latencyMs` to its whole answer. Pure.
 */
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
}

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
}

/** The estimate of a backfill (see the module's comment for the model). */
export function estimateBackfill(inputs: EstimateInputs): BackfillEstimate {
  const { ratePerSecond, latencyMs, catalogMs } = inputs;
  if (!(Number.isFinite(ratePerSecond) && ratePerSecond > 0)) {
    throw new RangeError(`ratePerSecond must be positive, got ${ratePerSecond}`);
  }
  for (const [name, ms] of [
    ["latencyMs", latencyMs],
    ["catalogMs", catalogMs],
  ] as const) {
    if (!(Number.isFinite(ms) && ms >= 0)) throw new RangeError(`${name} must be >= 0, got ${ms}`);
  }
  const inFlight = deviceShare(inputs.concurrency);
  const gapMs = 1000 / ratePerSecond;
  const schedule = (gap: number, latency: number) =>
    scheduleJobs(inputs.jobRequests, inFlight, gap, latency);
  const dataMs = schedule(gapMs, latencyMs);
  const rateOnlyMs = schedule(gapMs, 0);
  const latencyOnlyMs = schedule(0, latencyMs);
  return {
    seconds: (catalogMs + dataMs) / 1000,
    dataSeconds: dataMs / 1000,
    inFlight,
    rateOnlySeconds: rateOnlyMs / 1000,
    latencyOnlySeconds: latencyOnlyMs / 1000,
    bound: rateOnlyMs >= latencyOnlyMs ? "rate" : "latency",
  };
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

/** The median of measured times (ms); undefined without any. */
export function medianMs(samples: readonly number[]): number | undefined {
  if (samples.length === 0) return undefined;
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const upper = sorted[mid] ?? 0;
  return sorted.length % 2 === 1 ? upper : ((sorted[mid - 1] ?? upper) + upper) / 2;
}
