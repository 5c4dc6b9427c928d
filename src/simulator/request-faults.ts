/** Transport faults (test knobs), drawn in request order from the seed, and the rate limit. */
import type { IncomingMessage } from "node:http";
import { type Answer, fail, httpDate, json, jsonOrUndefined } from "./http.js";
import { pickByShare, subKey, unit2 } from "./model/rng.js";
import type { Endpoint, FaultOptions, RateLimitOptions } from "./options.js";

export type RequestFault = "drop" | "error" | "malformed" | "delay";

export function faultsApplyTo(faults: FaultOptions, endpoint: Endpoint): boolean {
  const { endpoints } = faults;
  return endpoints === undefined || endpoints.includes(endpoint);
}

const SERVER_ERRORS = [
  fail(500, "internal server error"),
  { status: 503, body: "Service Unavailable", headers: { "content-type": "text/plain" } },
  { status: 502, body: "" },
] as const satisfies readonly Answer[];

/** The fault draws, server-error bodies and rate-limit window of one simulator. */
export class RequestFaults {
  private readonly random: () => number;
  private faultCounter = 0;
  private windowSecond = -1;
  private windowCount = 0;

  constructor(seed: number) {
    const faultKey = subKey(seed, "faults");
    let draws = 0;
    this.random = () => unit2(faultKey, draws++);
  }

  /** The fault of the next request to `endpoint` (one draw when the faults apply to it). */
  draw(faults: FaultOptions, endpoint: Endpoint): RequestFault | undefined {
    if (!faultsApplyTo(faults, endpoint)) return undefined;
    return pickByShare<RequestFault>(this.random(), [
      ["drop", faults.dropRate],
      ["error", faults.errorRate],
      ["malformed", faults.malformedRate],
      ["delay", faults.delayRate ?? (faults.delayMs ? 1 : 0)],
    ]);
  }

  /** A server error: 500 with a JSON body, 503 with text and 502 empty, in turn. */
  serverError(): Answer {
    this.faultCounter++;
    return SERVER_ERRORS[this.faultCounter % 3] ?? SERVER_ERRORS[0];
  }

  /** The 429 answer when the request at `rateMs` (the rate clock) is past its second's limit. */
  rateLimited(
    limit: RateLimitOptions | undefined,
    rateMs: number,
    nowMs: () => number,
  ): Answer | undefined {
    if (!limit) return undefined;
    const second = Math.floor(rateMs / 1000);
    if (second !== this.windowSecond) {
      this.windowSecond = second;
      this.windowCount = 0;
    }
    this.windowCount++;
    if (this.windowCount <= limit.perSecond) return undefined;
    // an HTTP date is on the simulator's clock (that of the Date header): 1-2 s past the window
    const retryAfter =
      limit.retryAfterStyle === "http-date"
        ? httpDate(nowMs() + (second + 2) * 1000 - rateMs)
        : "1";
    return json(429, { error: "rate limit exceeded" }, { "retry-after": retryAfter });
  }
}

/** A 200 answer cut to half its body (the "malformed" fault); other answers unchanged. */
export function truncated(answer: Answer): Answer {
  if (answer.status !== 200) return answer;
  return { ...answer, body: answer.body.slice(0, Math.max(1, Math.floor(answer.body.length / 2))) };
}

/** `answer` with the request's headers echoed in its body (the `echoHeaders` fault). */
export function withEchoedHeaders(
  answer: Answer,
  req: IncomingMessage,
  style: true | "html" = true,
): Answer {
  if (answer.body === "") return answer;
  const headers = { ...req.headers };
  if (style === "html") {
    // the credentials first: a client quotes only the start of an error page
    const rows = Object.entries(headers)
      .sort(([a], [b]) => Number(b === "authorization") - Number(a === "authorization"))
      .map(([name, value]) => `<tr><th>${name}</th><td>${String(value)}</td></tr>`);
    const page = `<html><body><table>${rows.join("")}</table><p>${answer.body}</p></body></html>`;
    return { ...answer, body: page, headers: { ...answer.headers, "content-type": "text/html" } };
  }
  if (answer.headers?.["content-type"] === "application/json") {
    const body = jsonOrUndefined(answer.body);
    if (body !== null && typeof body === "object" && !Array.isArray(body)) {
      return { ...answer, body: JSON.stringify({ ...body, request_headers: headers }) };
    }
  }
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${String(value)}`);
  return { ...answer, body: `${answer.body}\nrequest headers:\n${lines.join("\n")}` };
}
