/** The simulator's entry point and everything commands and tests import (docs/simulator.md). */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { text } from "node:stream/consumers";
import { DEFAULT_TOKEN_TTL_S } from "../api/limits.js";
import type { RecordMember } from "../records/data-record.js";
import { DEFAULT_SIM_API_KEY, DEFAULT_SIM_USERS } from "../util/demo-defaults.js";
import { sleep } from "../util/timers.js";
import { dataAnswer, listingAnswer } from "./answers.js";
import { SimAuth } from "./auth.js";
import {
  type DataFaultOptions,
  dataFaultsActive,
  hasOutOfWindowRowsFor,
  isVisibleAt,
  type RowFault,
  rowHasFault,
} from "./data-faults.js";
import { type Answer, fail, httpDate, parseTarget, routeOf } from "./http.js";
import { createFleet, type SimulatedFleet } from "./model/fleet.js";
import type {
  Endpoint,
  FaultOptions,
  LoggedRequest,
  RateLimitOptions,
  SimulatorOptions,
} from "./options.js";
import { faultsApplyTo, RequestFaults, truncated, withEchoedHeaders } from "./request-faults.js";

export { DEFAULT_SIM_API_KEY, DEFAULT_SIM_USERS } from "../util/demo-defaults.js";
export type { DataFaultOptions, GatewayOutage } from "./data-faults.js";
export {
  DEFAULT_EXTRA_MEMBERS,
  FAR_FUTURE_TIMESTAMP,
  POISON_TEXT,
  YEAR_ZERO_TIMESTAMP,
} from "./data-faults.js";
export { DEFAULT_NEW_VALUE_SHARE, NEW_VALUE_SPREAD_S } from "./model/fleet.js";
export type { Endpoint, FaultOptions, LoggedRequest, SimulatorOptions } from "./options.js";

/** The API over HTTP (specs 4, 5, 8), deterministic; each `Date` header is the injected clock's. */
export class Simulator {
  readonly seed: number;
  readonly fleet: SimulatedFleet;
  readonly apiKey: string;
  /** Every request answered, oldest first (at most `maxLoggedRequests`). */
  readonly requests: LoggedRequest[] = [];
  tokenTtlS: number;
  rateLimit: RateLimitOptions | undefined;
  faults: FaultOptions;
  dataFaults: DataFaultOptions;
  latencyMs: number;

  private readonly extraIds: { valueIds: readonly string[]; deviceIds: readonly string[] };
  private readonly maxLoggedRequests: number;
  private readonly auth: SimAuth;
  private readonly requestFaults: RequestFaults;
  private readonly now: () => number;
  private readonly rateClock: () => number;
  private readonly cache: Map<string, Answer> | undefined;
  private readonly server: Server;
  private baseUrl = "";

  constructor(options: SimulatorOptions = {}) {
    const seed = options.seed ?? 1;
    this.seed = seed;
    this.now = options.now ?? Date.now;
    const newValuesFromS = options.newValuesFromS ?? Math.floor(this.now() / 1000);
    this.fleet = createFleet({ ...options, seed, newValuesFromS });
    this.maxLoggedRequests = options.maxLoggedRequests ?? Number.POSITIVE_INFINITY;
    this.apiKey = options.apiKey ?? DEFAULT_SIM_API_KEY;
    this.auth = new SimAuth(this.apiKey, options.users ?? DEFAULT_SIM_USERS, this.now);
    this.tokenTtlS = options.tokenTtlS ?? DEFAULT_TOKEN_TTL_S;
    this.rateLimit = options.rateLimit;
    this.faults = options.faults ?? {};
    this.dataFaults = options.dataFaults ?? {};
    this.latencyMs = options.latencyMs ?? 0;
    this.extraIds = {
      valueIds: options.extraListedValueIds ?? [],
      deviceIds: options.extraListedDeviceIds ?? [],
    };
    this.rateClock = options.rateClock ?? Date.now;
    this.cache = options.cacheResponses ? new Map() : undefined;
    this.requestFaults = new RequestFaults(seed);
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) {
          res.sendDate = false;
          res.writeHead(500, { "content-type": "application/json", date: httpDate(this.now()) });
        }
        res.end(JSON.stringify({ error: `simulator failure: ${String(error)}` }));
      });
    });
    this.server.keepAliveTimeout = 5_000;
  }

  /** Starts listening (default 127.0.0.1 on a free port); resolves with the base URL. */
  async listen(port = 0, host = "127.0.0.1"): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => resolve());
    });
    const address = this.server.address() as AddressInfo;
    const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
    this.baseUrl = `http://${shownHost}:${address.port}`;
    return this.baseUrl;
  }

  get url(): string {
    return this.baseUrl;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Requests logged for an endpoint (all endpoints when omitted), optionally with a status. */
  count(endpoint?: Endpoint, status?: number): number {
    return this.requests.filter(
      (r) =>
        (endpoint === undefined || r.endpoint === endpoint) &&
        (status === undefined || r.status === status),
    ).length;
  }

  resetLog(): void {
    this.requests.length = 0;
  }

  issuedTokens(): string[] {
    return this.auth.issuedTokens();
  }

  /** Makes every access token invalid at once (as a revocation on the real service would). */
  revokeTokens(): void {
    this.auth.revokeTokens();
  }

  /** True when the row (device, timestamp, values_id) has the data fault whatever is requested. */
  rowHasFault(
    fault: RowFault,
    deviceId: string,
    timestamp: string,
    valuesId: RecordMember | undefined,
  ): boolean {
    return rowHasFault(this.seed, this.dataFaults, fault, [deviceId, timestamp, valuesId]);
  }

  /** True when a record of the device at `tS` is visible at `nowS` (epoch s) despite the outages. */
  isVisible(deviceId: string, tS: number, nowS: number): boolean {
    return isVisibleAt(this.dataFaults.outages, deviceId, tS, nowS);
  }

  /** True when a 200 data answer to the request (as sent) ends with the out-of-window rows. */
  hasOutOfWindowRows(
    deviceId: string,
    resourceId: string,
    query: { readonly values: string; readonly from: string; readonly to: string },
  ): boolean {
    return hasOutOfWindowRowsFor(this.seed, this.dataFaults, { deviceId, resourceId, ...query });
  }

  /** One request: latency, a drawn fault, the rate limit, the answer, the log, the Date header. */
  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const atMs = this.now();
    const { segments, query } = parseTarget(req.url ?? "/");
    const endpoint = routeOf(req.method ?? "GET", segments);
    const body = await text(req);
    const log = (status: number): void => {
      this.requests.push({ method: req.method ?? "", endpoint, segments, query, status, atMs });
      const excess = this.requests.length - this.maxLoggedRequests;
      if (excess > 0) this.requests.splice(0, excess);
    };

    if (this.latencyMs > 0) await sleep(this.latencyMs);
    const fault = this.requestFaults.draw(this.faults, endpoint);
    if (fault === "drop") {
      log(0);
      req.socket.destroy();
      return;
    }
    if (fault === "delay") await sleep(this.faults.delayMs ?? 0);
    const answer =
      this.requestFaults.rateLimited(this.rateLimit, this.rateClock(), this.now) ??
      (fault === "error" ? this.requestFaults.serverError() : undefined) ??
      this.answer(req, endpoint, segments, query, body);
    const faulted = fault === "malformed" ? truncated(answer) : answer;
    const sent =
      this.faults.echoHeaders && faulted.status >= 400 && faultsApplyTo(this.faults, endpoint)
        ? withEchoedHeaders(faulted, req, this.faults.echoHeaders)
        : faulted;
    log(sent.status);
    res.sendDate = false;
    res.writeHead(sent.status, { ...sent.headers, date: httpDate(this.now()) });
    res.end(sent.body);
  }

  /** The endpoint's answer: auth first, then the listings or the (cached) data. */
  private answer(
    req: IncomingMessage,
    endpoint: Endpoint,
    segments: string[],
    query: Record<string, string>,
    body: string,
  ): Answer {
    if (endpoint === "unknown") return fail(404, `no such endpoint: ${req.method} ${req.url}`);
    if (endpoint === "set_password") return this.auth.setPassword(req, body);
    if (endpoint === "create_token") return this.auth.createToken(req, this.tokenTtlS);
    const auth = this.auth.checkBearer(req);
    if (auth) return auth;
    const nowS = Math.floor(this.now() / 1000);
    if (endpoint !== "data")
      return listingAnswer(this.fleet, endpoint, segments, nowS, this.extraIds);
    const cache = dataFaultsActive(this.dataFaults) ? undefined : this.cache;
    const cached = cache?.get(req.url ?? "");
    if (cached) return cached;
    const answer = dataAnswer(this, this.now(), segments[1] ?? "", segments[2] ?? "", query);
    if (answer.status === 200) cache?.set(req.url ?? "", answer);
    return answer;
  }
}

/** Creates a simulator and starts it on `port` (0: a free one) of `host` (default 127.0.0.1). */
export async function startSimulator(
  options: SimulatorOptions & { port?: number; host?: string } = {},
): Promise<Simulator> {
  const simulator = new Simulator(options);
  await simulator.listen(options.port ?? 0, options.host ?? "127.0.0.1");
  return simulator;
}
