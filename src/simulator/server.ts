import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { z } from "zod";
import {
  DEFAULT_TOKEN_TTL_S,
  MAX_VALUES_PER_REQUEST,
  MAX_WINDOW_MS,
  VALUES_ID,
} from "../api/limits.js";
import type { DataRecord, RecordMember } from "../api/schemas.js";
import { parseQueryTime } from "../api/time-format.js";
import { sleep } from "../util/timers.js";
import {
  type DataFaultOptions,
  dataFaultsActive,
  FAR_FUTURE_TIMESTAMP,
  hasExtraMembersRow,
  hasOutOfWindowRowsFor,
  isDuplicatedRow,
  isPoisonedRow,
  isVisibleAt,
  renderFaultedRecords,
  visibleRecords,
  YEAR_ZERO_TIMESTAMP,
} from "./data-faults.js";
import {
  type CatalogOption,
  COMMISSIONED_AT_S,
  createFleet,
  type SimulatedFleet,
} from "./model/fleet.js";
import { subKey, unit2 } from "./model/rng.js";

export type { DataFaultOptions, DataRequestKey, GatewayOutage } from "./data-faults.js";
export {
  DEFAULT_EXTRA_MEMBERS,
  FAR_FUTURE_TIMESTAMP,
  POISON_TEXT,
  YEAR_ZERO_TIMESTAMP,
} from "./data-faults.js";
export {
  BUILT_DEVICE_LIMIT,
  DEFAULT_NEW_VALUE_SHARE,
  NEW_VALUE_SPREAD_S,
  type ScheduledValue,
} from "./model/fleet.js";

/** Endpoints of the API (spec sections 4 and 5), as the request log names them. */
export type Endpoint =
  | "set_password"
  | "create_token"
  | "devices"
  | "resources"
  | "values"
  | "data"
  | "unknown";

/** A user of the simulator: a one-time password to set a password with, or a password already set. */
export interface SimUser {
  readonly user: string;
  readonly otp?: string;
  readonly password?: string;
}

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
   * are neither kept nor served from the cache while a data fault is active.
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

export const DEFAULT_SIM_API_KEY = "sim-api-key";
export const DEFAULT_SIM_USERS: readonly SimUser[] = [
  { user: "demo", password: "demo-password", otp: "123456" },
];

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly headers?: Record<string, string>;
}

const json = (status: number, value: unknown, headers?: Record<string, string>): Answer => ({
  status,
  body: JSON.stringify(value),
  headers: { "content-type": "application/json", ...headers },
});
const fail = (status: number, error: string): Answer => json(status, { error });

const setPasswordBody = z.object({ user: z.string().min(1), pw: z.string().min(1) });

/**
 * A faithful simulator of the Energy Monitoring Data API over real HTTP: auth (spec 5), the
 * endpoints of spec 4, the limits of spec 8, deterministic data, and knobs for tests (token TTL,
 * rate limit, faults, data faults, a request log). Every answer carries a `Date` header from the
 * injected clock.
 */
export class Simulator {
  /** Seed of the data, the faults and the data faults. */
  readonly seed: number;
  readonly fleet: SimulatedFleet;
  readonly apiKey: string;
  /** Every request answered, oldest first. */
  readonly requests: LoggedRequest[] = [];
  tokenTtlS: number;
  rateLimit: RateLimitOptions | undefined;
  faults: FaultOptions;
  /** Data faults; may be changed between requests. */
  dataFaults: DataFaultOptions;
  latencyMs: number;

  private readonly maxLoggedRequests: number;
  private readonly users = new Map<string, { otp?: string; password?: string }>();
  private readonly tokens = new Map<string, number>();
  private readonly issued: string[] = [];
  private readonly now: () => number;
  private readonly rateClock: () => number;
  private readonly cache: Map<string, Answer> | undefined;
  private readonly random: () => number;
  private readonly server: Server;
  private windowSecond = -1;
  private windowCount = 0;
  private faultCounter = 0;
  private baseUrl = "";

  constructor(options: SimulatorOptions = {}) {
    const seed = options.seed ?? 1;
    this.seed = seed;
    this.now = options.now ?? Date.now;
    this.fleet = createFleet({
      seed,
      resolutionS: options.resolutionS ?? 60,
      devices: options.devices,
      newValueShare: options.newValueShare,
      newValuesFromS: options.newValuesFromS ?? Math.floor(this.now() / 1000),
      catalog: options.catalog,
    });
    this.maxLoggedRequests = options.maxLoggedRequests ?? Number.POSITIVE_INFINITY;
    this.apiKey = options.apiKey ?? DEFAULT_SIM_API_KEY;
    for (const u of options.users ?? DEFAULT_SIM_USERS) {
      this.users.set(u.user, { otp: u.otp, password: u.password });
    }
    this.tokenTtlS = options.tokenTtlS ?? DEFAULT_TOKEN_TTL_S;
    this.rateLimit = options.rateLimit;
    this.faults = options.faults ?? {};
    this.dataFaults = options.dataFaults ?? {};
    this.latencyMs = options.latencyMs ?? 0;
    this.rateClock = options.rateClock ?? Date.now;
    this.cache = options.cacheResponses ? new Map() : undefined;
    const faultKey = subKey(seed, "faults");
    let draws = 0;
    this.random = () => unit2(faultKey, draws++);
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

  /** Base URL once listening. */
  get url(): string {
    return this.baseUrl;
  }

  /** Stops the server and drops open connections. */
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Requests answered for an endpoint (all endpoints when omitted), optionally with a status. */
  count(endpoint?: Endpoint, status?: number): number {
    return this.requests.filter(
      (r) =>
        (endpoint === undefined || r.endpoint === endpoint) &&
        (status === undefined || r.status === status),
    ).length;
  }

  /** Forgets the request log. */
  resetLog(): void {
    this.requests.length = 0;
  }

  /** Every access token handed out so far, oldest first (expired and revoked ones too). */
  issuedTokens(): string[] {
    return [...this.issued];
  }

  /** Makes every access token invalid at once (as a revocation on the real service would). */
  revokeTokens(): void {
    this.tokens.clear();
  }

  /**
   * True when the row (device, `YYYY-MM-DDTHH:MM:SS` timestamp, values_id) is sent poisoned under
   * the current data faults, whatever values and window are requested. The poisoned member is the
   * row's first requested non-meta member with a value (else its first non-meta member); a row
   * with only meta members requested has none and is sent unchanged.
   */
  isPoisoned(deviceId: string, timestamp: string, valuesId: RecordMember | undefined): boolean {
    return isPoisonedRow(this.seed, this.dataFaults, deviceId, timestamp, valuesId);
  }

  /** True when the row (device, timestamp, values_id) carries unrequested members. */
  hasExtraMembers(
    deviceId: string,
    timestamp: string,
    valuesId: RecordMember | undefined,
  ): boolean {
    return hasExtraMembersRow(this.seed, this.dataFaults, deviceId, timestamp, valuesId);
  }

  /** True when the row (device, timestamp, values_id) is followed by a copy with numbers + 1. */
  isDuplicated(deviceId: string, timestamp: string, valuesId: RecordMember | undefined): boolean {
    return isDuplicatedRow(this.seed, this.dataFaults, deviceId, timestamp, valuesId);
  }

  /** True when a record of the device at `tS` is visible at `nowS` (epoch s) despite the outages. */
  isVisible(deviceId: string, tS: number, nowS: number): boolean {
    return isVisibleAt(this.dataFaults.outages, deviceId, tS, nowS);
  }

  /**
   * True when a 200 data answer to the request (device, resource, and the `values`, `from` and
   * `to` parameters as sent) ends with the two out-of-window rows.
   */
  hasOutOfWindowRows(
    deviceId: string,
    resourceId: string,
    query: { readonly values: string; readonly from: string; readonly to: string },
  ): boolean {
    return hasOutOfWindowRowsFor(this.seed, this.dataFaults, { deviceId, resourceId, ...query });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const atMs = this.now();
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const rawPath = q < 0 ? url : url.slice(0, q);
    const query = Object.fromEntries(new URLSearchParams(q < 0 ? "" : url.slice(q + 1)));
    let segments: string[];
    try {
      segments = rawPath
        .split("/")
        .filter((s) => s !== "")
        .map(decodeURIComponent);
    } catch {
      segments = [];
    }
    const endpoint = routeOf(req.method ?? "GET", segments);
    const body = await readBody(req);
    const log = (status: number): void => {
      this.requests.push({ method: req.method ?? "", endpoint, segments, query, status, atMs });
      if (this.requests.length > this.maxLoggedRequests) {
        this.requests.splice(0, this.requests.length - this.maxLoggedRequests);
      }
    };

    if (this.latencyMs > 0) await sleep(this.latencyMs);
    const fault = this.drawFault(endpoint);
    if (fault === "drop") {
      log(0);
      req.socket.destroy();
      return;
    }
    if (fault === "delay") await sleep(this.faults.delayMs ?? 0);
    const answer =
      this.rateLimited(this.rateClock()) ??
      (fault === "error" ? this.serverError() : undefined) ??
      this.answer(req, endpoint, segments, query, body);
    const faulted =
      fault === "malformed" && answer.status === 200
        ? { ...answer, body: answer.body.slice(0, Math.max(1, Math.floor(answer.body.length / 2))) }
        : answer;
    const sent =
      this.faults.echoHeaders && faulted.status >= 400 && this.faultsApplyTo(endpoint)
        ? withEchoedHeaders(faulted, req)
        : faulted;
    log(sent.status);
    res.sendDate = false;
    res.writeHead(sent.status, { ...sent.headers, date: httpDate(this.now()) });
    res.end(sent.body);
  }

  private faultsApplyTo(endpoint: Endpoint): boolean {
    const { endpoints } = this.faults;
    return endpoints === undefined || endpoints.includes(endpoint);
  }

  private drawFault(endpoint: Endpoint): "drop" | "error" | "malformed" | "delay" | undefined {
    const f = this.faults;
    if (!this.faultsApplyTo(endpoint)) return undefined;
    const r = this.random();
    let edge = 0;
    for (const [kind, rate] of [
      ["drop", f.dropRate],
      ["error", f.errorRate],
      ["malformed", f.malformedRate],
      ["delay", f.delayRate ?? (f.delayMs ? 1 : 0)],
    ] as const) {
      edge += rate ?? 0;
      if (r < edge) return kind;
    }
    return undefined;
  }

  private serverError(): Answer {
    this.faultCounter++;
    switch (this.faultCounter % 3) {
      case 0:
        return fail(500, "internal server error");
      case 1:
        return {
          status: 503,
          body: "Service Unavailable",
          headers: { "content-type": "text/plain" },
        };
      default:
        return { status: 502, body: "" };
    }
  }

  private rateLimited(rateMs: number): Answer | undefined {
    if (!this.rateLimit) return undefined;
    const second = Math.floor(rateMs / 1000);
    if (second !== this.windowSecond) {
      this.windowSecond = second;
      this.windowCount = 0;
    }
    this.windowCount++;
    if (this.windowCount <= this.rateLimit.perSecond) return undefined;
    // an HTTP date is on the simulator's clock (that of the Date header): 1-2 s past the window
    const retryAfter =
      this.rateLimit.retryAfterStyle === "http-date"
        ? httpDate(this.now() + (second + 2) * 1000 - rateMs)
        : "1";
    return json(429, { error: "rate limit exceeded" }, { "retry-after": retryAfter });
  }

  private answer(
    req: IncomingMessage,
    endpoint: Endpoint,
    segments: string[],
    query: Record<string, string>,
    body: string,
  ): Answer {
    if (endpoint === "unknown") return fail(404, `no such endpoint: ${req.method} ${req.url}`);
    if (endpoint === "set_password") return this.setPassword(req, body);
    if (endpoint === "create_token") return this.createToken(req);
    const auth = this.checkBearer(req);
    if (auth) return auth;
    const fleet = this.fleet;
    const nowS = Math.floor(this.now() / 1000);
    switch (endpoint) {
      case "devices":
        return json(200, { device_ids: fleet.deviceIds() });
      case "resources": {
        const [deviceId = ""] = segments;
        const resourceIds = fleet.resourceIds(deviceId, nowS);
        if (!resourceIds) return fail(404, `unknown device: ${deviceId}`);
        return json(200, { device_id: deviceId, resource_ids: resourceIds });
      }
      case "values": {
        const [deviceId = "", resourceId = ""] = segments;
        if (!fleet.hasDevice(deviceId)) return fail(404, `unknown device: ${deviceId}`);
        const values = fleet.valueIds(deviceId, resourceId, nowS);
        if (!values) return fail(404, `unknown resource: ${resourceId}`);
        return json(200, { device_id: deviceId, resource_id: resourceId, values });
      }
      case "data": {
        const cache = dataFaultsActive(this.dataFaults) ? undefined : this.cache;
        const cached = cache?.get(req.url ?? "");
        if (cached) return cached;
        const answer = this.data(segments[1] ?? "", segments[2] ?? "", query);
        if (answer.status === 200) cache?.set(req.url ?? "", answer);
        return answer;
      }
    }
  }

  private data(deviceId: string, resourceId: string, query: Record<string, string>): Answer {
    const fleet = this.fleet;
    const nowMs = this.now();
    const nowS = Math.floor(nowMs / 1000);
    if (!fleet.hasDevice(deviceId)) return fail(404, `unknown device: ${deviceId}`);
    const known = fleet.valueIds(deviceId, resourceId, nowS);
    if (!known) return fail(404, `unknown resource: ${resourceId}`);
    const { values, from, to } = query;
    if (!values) return fail(400, "missing parameter: values");
    if (/\s/.test(values)) return fail(400, "values must be separated by commas without spaces");
    const ids = [...new Set(values.split(","))];
    if (ids.some((id) => id === "")) return fail(400, "empty value id in values");
    if (ids.length > MAX_VALUES_PER_REQUEST) {
      return fail(400, `too many values: ${ids.length} (at most ${MAX_VALUES_PER_REQUEST})`);
    }
    if (ids.includes(VALUES_ID)) return fail(400, `${VALUES_ID} must not be requested`);
    const unknown = ids.find((id) => !known.includes(id));
    if (unknown !== undefined) return fail(404, `unknown value id: ${unknown}`);
    if (!from || !to) return fail(400, "missing parameter: from and to are required");
    const fromDate = parseQueryTime(from);
    const toDate = parseQueryTime(to);
    if (!fromDate) return fail(400, `malformed from: expected YYYYMMDDTHHMMSS`);
    if (!toDate) return fail(400, `malformed to: expected YYYYMMDDTHHMMSS`);
    if (toDate < fromDate) return fail(400, "to is before from");
    if (toDate.getTime() - fromDate.getTime() > MAX_WINDOW_MS) {
      return fail(400, "time interval too long: at most 7 days between from and to");
    }
    const fromS = fromDate.getTime() / 1000;
    const toS = Math.min(toDate.getTime() / 1000, nowS);
    const records = fromS > toS ? [] : fleet.records(deviceId, resourceId, ids, fromS, toS);
    const faults = this.dataFaults;
    if (!dataFaultsActive(faults)) return json(200, records);
    const request = { deviceId, resourceId, values, from, to };
    return {
      status: 200,
      body: renderFaultedRecords({
        seed: this.seed,
        faults,
        deviceId,
        records: visibleRecords(faults.outages, deviceId, records, nowMs / 1000),
        appended: hasOutOfWindowRowsFor(this.seed, faults, request)
          ? this.outOfWindowRows(deviceId, resourceId, ids)
          : [],
      }),
      headers: { "content-type": "application/json" },
    };
  }

  /** The two out-of-window rows: the first row of the commissioning day, re-stamped. */
  private outOfWindowRows(deviceId: string, resourceId: string, ids: string[]): DataRecord[] {
    const res = this.fleet.resolutionS;
    const [row] = this.fleet.records(
      deviceId,
      resourceId,
      ids,
      COMMISSIONED_AT_S,
      COMMISSIONED_AT_S + res,
    );
    if (row === undefined) return [];
    return [
      { ...row, timestamp: FAR_FUTURE_TIMESTAMP },
      { ...row, timestamp: YEAR_ZERO_TIMESTAMP },
    ];
  }

  private checkApiKey(req: IncomingMessage): Answer | undefined {
    const key = req.headers["x-api-key"];
    if (key === undefined) return fail(403, "missing x-api-key");
    if (key !== this.apiKey) return fail(403, "invalid api key");
    return undefined;
  }

  private checkBearer(req: IncomingMessage): Answer | undefined {
    const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? "");
    if (!m?.[1]) return fail(401, "missing bearer token");
    const expiresAt = this.tokens.get(m[1]);
    if (expiresAt === undefined) return fail(401, "invalid token");
    if (this.now() >= expiresAt) {
      this.tokens.delete(m[1]);
      return fail(401, "token expired");
    }
    return undefined;
  }

  private setPassword(req: IncomingMessage, body: string): Answer {
    const keyProblem = this.checkApiKey(req);
    if (keyProblem) return keyProblem;
    const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? "");
    if (!m?.[1]) return fail(401, "missing one-time password");
    const otp = Buffer.from(m[1], "base64").toString("utf8");
    let parsedBody: unknown;
    try {
      parsedBody = JSON.parse(body);
    } catch {
      return fail(400, "body must be JSON {user, pw}");
    }
    const parsed = setPasswordBody.safeParse(parsedBody);
    if (!parsed.success) return fail(400, "body must be JSON {user, pw}");
    const account = this.users.get(parsed.data.user);
    if (!account?.otp || account.otp !== otp) return fail(401, "invalid one-time password");
    this.users.set(parsed.data.user, { password: parsed.data.pw });
    return json(200, { message: "password set" });
  }

  private createToken(req: IncomingMessage): Answer {
    const keyProblem = this.checkApiKey(req);
    if (keyProblem) return keyProblem;
    const m = /^Basic (.+)$/.exec(req.headers.authorization ?? "");
    if (!m?.[1]) return fail(401, "missing basic credentials");
    const decoded = Buffer.from(m[1], "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    const account = colon < 0 ? undefined : this.users.get(decoded.slice(0, colon));
    if (!account?.password || account.password !== decoded.slice(colon + 1)) {
      return fail(401, "invalid username or password");
    }
    const token = randomBytes(24).toString("base64url");
    this.tokens.set(token, this.now() + this.tokenTtlS * 1000);
    this.issued.push(token);
    return json(200, { token, expires_in: this.tokenTtlS });
  }
}

/** `answer` with the request's headers echoed in its body (the `echoHeaders` fault). */
function withEchoedHeaders(answer: Answer, req: IncomingMessage): Answer {
  if (answer.body === "") return answer;
  const headers = { ...req.headers };
  if (answer.headers?.["content-type"] === "application/json") {
    let body: unknown;
    try {
      body = JSON.parse(answer.body);
    } catch {
      body = undefined;
    }
    if (body !== null && typeof body === "object" && !Array.isArray(body)) {
      return { ...answer, body: JSON.stringify({ ...body, request_headers: headers }) };
    }
  }
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${String(value)}`);
  return { ...answer, body: `${answer.body}\nrequest headers:\n${lines.join("\n")}` };
}

function routeOf(method: string, segments: readonly string[]): Endpoint {
  const [first, second, third] = segments;
  if (method === "POST") {
    if (segments.length === 1 && first === "set_password") return "set_password";
    if (segments.length === 1 && first === "create_token") return "create_token";
    return "unknown";
  }
  if (method !== "GET") return "unknown";
  if (segments.length === 1 && first === "devices") return "devices";
  if (segments.length === 3 && first === "data") return "data";
  if (segments.length === 2 && second === "resources") return "resources";
  if (segments.length === 3 && third === "values") return "values";
  return "unknown";
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** An RFC 7231 IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) of epoch ms. */
const httpDate = (ms: number): string => new Date(ms).toUTCString();

/** Creates a simulator and starts it on `port` (0: a free one) of `host` (default 127.0.0.1). */
export async function startSimulator(
  options: SimulatorOptions & { port?: number; host?: string } = {},
): Promise<Simulator> {
  const simulator = new Simulator(options);
  await simulator.listen(options.port ?? 0, options.host ?? "127.0.0.1");
  return simulator;
}
