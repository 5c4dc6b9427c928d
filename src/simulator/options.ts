/** The simulator's public types: its options, its test knobs and its request log. */
import type { SimUser } from "../util/demo-defaults.js";
import type { DataFaultOptions } from "./data-faults.js";
import type { CatalogOption, CounterFaultOptions, CounterReset } from "./model/fleet.js";

export type { SimUser };

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
  /**
   * Error answers (4xx, 429, 5xx) echo the request's headers, as hostile real upstreams do: a
   * JSON body gets `request_headers` (`authorization`, `x-api-key`, … as received), a text body
   * a `request headers:` list; an empty body stays empty. Default false.
   */
  readonly echoHeaders?: boolean;
  /** Endpoints the faults apply to (default: all). */
  readonly endpoints?: readonly Endpoint[];
}

/** Rate limit (test knob): past `perSecond` requests in one second, 429 with Retry-After. */
export interface RateLimitOptions {
  readonly perSecond: number;
  /** Retry-After as delay-seconds (default) or as an HTTP date. */
  readonly retryAfterStyle?: "seconds" | "http-date";
}

/** Options of a simulator; every one has a default. */
export interface SimulatorOptions {
  /** Seed of the data and of the faults (default 1). */
  readonly seed?: number;
  /** Spacing of the records in seconds (default 60). */
  readonly resolutionS?: number;
  /** Devices served (default 4, the default devices); past 4, generated ones (FleetOptions.devices). */
  readonly devices?: number;
  /** Share of generated devices that get a new value id later (default 0.02; 0: none). */
  readonly newValueShare?: number;
  /**
   * Reference time of those new values (epoch s): they appear within 7 days after it, by the
   * simulator's clock. Default: the clock when the simulator is created.
   */
  readonly newValuesFromS?: number;
  /** "spec": devices list only the spec's value ids plus a few coded ones (FleetOptions.catalog). */
  readonly catalog?: CatalogOption;
  /** Cumulative counters that start again from zero at a time (FleetOptions.counterResets). */
  readonly counterResets?: readonly CounterReset[];
  /**
   * Value ids every resource lists besides its own (default none), as a real catalog may: ids a
   * `values=` list cannot carry, such as one holding a comma. They have no data.
   */
  readonly extraListedValueIds?: readonly string[];
  /**
   * Counter readings that fall as real meters' do: dips, transient zeros, daily counters that
   * start above 0 (FleetOptions.counterFaults). Default: none.
   */
  readonly counterFaults?: CounterFaultOptions;
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
  /**
   * Clock in epoch ms (default Date.now): nothing after it is served; tokens expire by it; every
   * answer's `Date` header shows it; outages end by it.
   */
  readonly now?: () => number;
  /**
   * Keeps every data answer and serves it again for the same URL (benchmarks: after a warm-up the
   * simulator costs no CPU, as a remote API would not on this machine). Default false. Answers
   * are neither kept nor served from the cache while a data fault is active. Counter faults do
   * not bar it: they are fixed at creation and part of `fleet.records`, so an answer never changes.
   */
  readonly cacheResponses?: boolean;
  /** Clock of the rate limit's one-second windows (default Date.now: real time, whatever `now`). */
  readonly rateClock?: () => number;
}

/** One request the simulator answered (or dropped: status 0). */
export interface LoggedRequest {
  readonly method: string;
  readonly endpoint: Endpoint;
  /** Path segments after percent-decoding. */
  readonly segments: readonly string[];
  readonly query: Readonly<Record<string, string>>;
  readonly status: number;
  readonly atMs: number;
}
