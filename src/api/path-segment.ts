import { ApiError } from "./errors.js";

/** A lone UTF-16 surrogate (no URL, no UTF-8 can carry it); in `u` mode a pair is one code point. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/**
 * Why an id cannot be a path segment, if so: `.` and `..` (URLs normalise them away), the empty
 * id, a lone surrogate (`encodeURIComponent` cannot encode it). The one rule for both the request
 * ({@link encodeSegment}) and the catalog, which skips such ids (pipeline/catalog-ids.ts).
 */
export function unaddressable(id: string): string | undefined {
  if (id === "" || id === "." || id === "..") return "cannot be addressed in a URL path";
  if (LONE_SURROGATE.test(id)) return "holds a lone UTF-16 surrogate";
  return undefined;
}

/**
 * Path segment for an id: percent-encoded so that `site A+1` or `a/../devices` reach the server as
 * one segment. An id {@link unaddressable} names cannot be sent at all.
 */
export function encodeSegment(id: string): string {
  const why = unaddressable(id);
  if (why !== undefined) {
    throw new ApiError(`cannot address the id ${JSON.stringify(id)} in a URL path: it ${why}`, {
      code: "request_rejected",
      endpoint: "(not sent)",
      retryable: false,
    });
  }
  return encodeURIComponent(id);
}
