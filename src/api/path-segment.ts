import { ApiError } from "./errors.js";

/**
 * Path segment for an id: percent-encoded so that `site A+1` or `a/../devices` reach the server as
 * one segment. `.` and `..` cannot be sent at all (URLs normalise them away).
 */
export function encodeSegment(id: string): string {
  if (id === "" || id === "." || id === "..") {
    throw new ApiError(`cannot address the id ${JSON.stringify(id)} in a URL path`, {
      code: "request_rejected",
      endpoint: "(not sent)",
      retryable: false,
    });
  }
  return encodeURIComponent(id);
}
