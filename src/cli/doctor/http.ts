import { request } from "node:http";
import { request as requestTls } from "node:https";
import { z } from "zod";
import { formatSeconds } from "../../influx/write-errors.js";
import { errnoOf, messageOf } from "../../util/errors.js";
import { excerpt } from "../../util/text.js";

/** What to check when TLS fails: `setting` (INFLUX_URL) and the CA. */
export const tlsFix = (setting: string) =>
  `check ${setting}: https:// to a plain-http server (or the reverse), or a certificate ` +
  "Node.js does not trust (add its CA with NODE_EXTRA_CA_CERTS)";

/** An HTTP answer, its body read (a few KiB at most are expected). */
export interface HttpAnswer {
  readonly kind: "answer";
  readonly status: number;
  /** A header of the answer (name in lower case), the first one when repeated. */
  header(name: string): string | undefined;
  readonly body: string;
  /** When the request was sent and the answer's head came, epoch ms. */
  readonly sentAtMs: number;
  readonly answeredAtMs: number;
}

/** No answer: connection refused, name not resolved, TLS refused, or no answer in time. */
export interface HttpProblem {
  readonly kind: "problem";
  /** `timeout`, `tls` (certificate or http/https mismatch), `network` (anything else). */
  readonly reason: "timeout" | "tls" | "network";
  /** What happened, in one line (`connect ECONNREFUSED 127.0.0.1:1`). */
  readonly message: string;
}

/** Most of an answer's body read (doctor expects a few KiB). */
const MAX_BODY_BYTES = 1024 * 1024;

/** One request bounded by `timeoutMs` as a whole, not redirected nor retried; never throws. */
export function httpRequest(
  url: string,
  init: { method?: "GET" | "POST"; headers?: Record<string, string>; body?: string },
  timeoutMs: number,
): Promise<HttpAnswer | HttpProblem> {
  return new Promise((resolve) => {
    const signal = AbortSignal.timeout(timeoutMs);
    const timedOut: HttpProblem = {
      kind: "problem",
      reason: "timeout",
      message: `no answer within ${formatSeconds(timeoutMs)} s`,
    };
    const problem = (error: unknown): void =>
      resolve(signal.aborted ? timedOut : describeProblem(error));
    let sentAtMs = Date.now();
    try {
      const target = new URL(url);
      const req = (target.protocol === "https:" ? requestTls : request)(target, {
        method: init.method ?? "GET",
        headers: { "user-agent": "energy-etl doctor", ...init.headers },
        signal,
      });
      req.once("finish", () => {
        sentAtMs = Date.now();
      });
      req.on("error", problem);
      req.once("response", (response) => {
        const answeredAtMs = Date.now();
        const chunks: Buffer[] = [];
        let bytes = 0;
        response.on("data", (chunk: Buffer) => {
          if (bytes < MAX_BODY_BYTES) chunks.push(chunk);
          bytes += chunk.length;
        });
        response.on("error", problem);
        response.once("end", () => {
          resolve({
            kind: "answer",
            status: response.statusCode ?? 0,
            header: (name) => {
              const value = response.headers[name];
              return Array.isArray(value) ? value[0] : value;
            },
            body: Buffer.concat(chunks).subarray(0, MAX_BODY_BYTES).toString("utf8"),
            sentAtMs,
            answeredAtMs,
          });
        });
      });
      req.end(init.body);
    } catch (error) {
      problem(error);
    }
  });
}

const TLS_CODE = /CERT|TLS|SSL|EPROTO/i;

function describeProblem(error: unknown): HttpProblem {
  const code = errnoOf(error);
  const text = messageOf(error);
  const tls = (code !== undefined && TLS_CODE.test(code)) || /certificate|ssl|tls/i.test(text);
  // OpenSSL's own words ("wrong version number") say nothing to an operator
  const message =
    code === "EPROTO" || /wrong version number|packet length too long|unknown protocol/i.test(text)
      ? `the TLS handshake failed (${code ?? "EPROTO"}): the server there does not speak https`
      : code !== undefined && !text.includes(code)
        ? `${code}: ${text}`
        : text;
  return { kind: "problem", reason: tls ? "tls" : "network", message: excerpt(message) };
}

const said = z.string().optional().catch(undefined);
const errorBody = z.object({ message: said, error: said });

/** The message of an InfluxDB-style JSON error body (`message` or `error`), else its start. */
export function bodyMessage(body: string): string {
  try {
    const json = errorBody.safeParse(JSON.parse(body));
    const value = json.data?.message || json.data?.error;
    if (value) return excerpt(value);
  } catch {
    // not JSON: its text
  }
  return excerpt(body);
}
