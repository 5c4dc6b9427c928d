/** The simulator's HTTP plumbing: answers, the request target, routing to an endpoint, dates. */
import type { Endpoint } from "./options.js";

export interface Answer {
  readonly status: number;
  readonly body: string;
  readonly headers?: Record<string, string>;
}

export const json = (status: number, value: unknown, headers?: Record<string, string>): Answer => ({
  status,
  body: JSON.stringify(value),
  headers: { "content-type": "application/json", ...headers },
});

/** A JSON error answer `{error}`. */
export const fail = (status: number, error: string): Answer => json(status, { error });

/** An RFC 7231 IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) of epoch ms. */
export const httpDate = (ms: number): string => new Date(ms).toUTCString();

/** A request URL's path segments (percent-decoded; none when one does not decode) and query. */
export function parseTarget(url: string): { segments: string[]; query: Record<string, string> } {
  const q = url.indexOf("?");
  const rawPath = q < 0 ? url : url.slice(0, q);
  const query = Object.fromEntries(new URLSearchParams(q < 0 ? "" : url.slice(q + 1)));
  try {
    const segments = rawPath
      .split("/")
      .filter((s) => s !== "")
      .map(decodeURIComponent);
    return { segments, query };
  } catch {
    return { segments: [], query };
  }
}

/** The endpoint a method and path address ("unknown" for any other). */
export function routeOf(method: string, segments: readonly string[]): Endpoint {
  const [first, second, third] = segments;
  if (method === "POST") {
    const auth = first === "set_password" || first === "create_token";
    return segments.length === 1 && auth ? first : "unknown";
  }
  if (method !== "GET") return "unknown";
  if (segments.length === 1 && first === "devices") return "devices";
  if (segments.length === 3 && first === "data") return "data";
  if (segments.length === 2 && second === "resources") return "resources";
  if (segments.length === 3 && third === "values") return "values";
  return "unknown";
}

/** The value of a JSON text; undefined when it is not JSON. */
export function jsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
