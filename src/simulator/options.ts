/** The simulator's public types: its options, its test knobs and its request log. */
import type { SimUser } from "../util/demo-defaults.js";
import type { DataFaultOptions } from "./data-faults.js";
import type { FleetOptions } from "./model/fleet.js";

/** Endpoints of the API (spec sections 4 and 5), as the request log names them. */
export type Endpoint =
  | "set_password"
  | "create_token"
  | "devices"
  | "resources"
  | "values"
  | "data"
  | "unknown";

/** Injected faults (test knobs). Rates are shares of requests in [0, 1], drawn from the seed. */
export interface FaultOptions {
  /** Share of requests answered 500 (bodies alternate JSON, text and empty). */
  readonly errorRate?: number;
  /** Share of requests whose connection is dropped without an answer. */
  readonly dropRate?: number;
  /** Share of requests answered 200 with a truncated JSON body. */
  readonly malformedRate?: number;
  /** Share of requests delayed by `delayMs` (default 1 when delayMs is set). */
  readonly delayRate?: number;
  readonly delayMs?: number;
  /** Error answers echo the request's headers as hostile upstreams do (`"html"`: a proxy's page). */
  readonly echoHeaders?: boolean | "html";
  readonly endpoints?: readonly Endpoint[];
}

/** Rate limit (test knob): past `perSecond` requests in one second, 429 with Retry-After. */
export interface RateLimitOptions {
  readonly perSecond: number;
  /** Retry-After as delay-seconds (default) or as an HTTP date. */
  readonly retryAfterStyle?: "seconds" | "http-date";
}

/** Options of a simulator; every one has a default (those of its fleet as in FleetOptions). */
export interface SimulatorOptions extends Readonly<Omit<FleetOptions, "seed" | "newValuesFromS">> {
  readonly seed?: number;
  /** New values appear within 7 days after this (epoch s; default: the clock at creation). */
  readonly newValuesFromS?: number;
  /** Value ids (without data) every resource lists besides its own, such as one holding a comma. */
  readonly extraListedValueIds?: readonly string[];
  /** Device ids GET /devices lists after the fleet's, such as an empty one or one listed twice. */
  readonly extraListedDeviceIds?: readonly string[];
  /** Requests kept in `requests` (default: all); past it the oldest are dropped. */
  readonly maxLoggedRequests?: number;
  readonly apiKey?: string;
  readonly users?: readonly SimUser[];
  /** Validity of access tokens (default 43 200 s, spec 5.2). */
  readonly tokenTtlS?: number;
  readonly rateLimit?: RateLimitOptions;
  readonly faults?: FaultOptions;
  /** Data faults of real installations: outages, poison rows, extra members, out-of-window rows, duplicates. */
  readonly dataFaults?: DataFaultOptions;
  /** Latency added to every answer in ms (default 0). */
  readonly latencyMs?: number;
  /** Clock in epoch ms (default Date.now): of the data served, token expiry, outages and `Date`. */
  readonly now?: () => number;
  /** Serves a data answer again for the same URL (benchmarks), unless a data fault is active. */
  readonly cacheResponses?: boolean;
  /** Clock of the rate limit's one-second windows (default Date.now: real time, whatever `now`). */
  readonly rateClock?: () => number;
}

/** One request the simulator answered (or dropped: status 0). */
export interface LoggedRequest {
  readonly method: string;
  readonly endpoint: Endpoint;
  readonly segments: readonly string[];
  readonly query: Readonly<Record<string, string>>;
  readonly status: number;
  readonly atMs: number;
}
