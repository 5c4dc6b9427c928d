import { classifyStatus, classifyTransportError } from "../../src/api/errors.js";

const NOW = Date.UTC(2026, 0, 1, 0, 0, 0);

describe("classifyStatus", () => {
  it.each([
    [401, "auth_failed", false],
    [403, "auth_failed", false],
    [404, "not_found", false],
    [400, "request_rejected", false],
    [422, "request_rejected", false],
    [429, "rate_limited", true],
    [500, "server_error", true],
    [502, "server_error", true],
    [503, "server_error", true],
  ] as const)("HTTP %i -> %s (retryable %s)", (status, code, retryable) => {
    const error = classifyStatus("GET /devices", status, "", undefined, NOW);
    expect(error).toMatchObject({ code, retryable, status, endpoint: "GET /devices" });
    expect(error.message).toContain(`HTTP ${status}`);
  });

  it.each([
    ["JSON with error", '{"error":"too many values"}', "too many values"],
    ["JSON with message", '{"message":"bad from"}', "bad from"],
    ["text", "Bad Request: from", "Bad Request: from"],
    ["HTML", "<html><body>\n<h1>400</h1></body></html>", "<html><body> <h1>400</h1></body></html>"],
  ])("copes with a %s body", (_kind, body, shown) => {
    const error = classifyStatus("GET /data/x/y", 400, body, undefined, NOW);
    expect(error.message).toContain(shown);
    expect(error.bodyExcerpt).toBeDefined();
  });

  it("copes with an empty body", () => {
    const error = classifyStatus("GET /data/x/y", 400, "", undefined, NOW);
    expect(error.message).toBe("GET /data/x/y rejected the request (HTTP 400)");
    expect(error.bodyExcerpt).toBeUndefined();
  });

  it("keeps excerpts short", () => {
    const error = classifyStatus("GET /devices", 500, "x".repeat(10_000), undefined, NOW);
    expect(error.bodyExcerpt?.length).toBeLessThanOrEqual(201);
  });

  it("carries Retry-After on 429 and 503", () => {
    expect(classifyStatus("e", 429, "", "7", NOW).retryAfterMs).toBe(7000);
    expect(classifyStatus("e", 503, "", "2", NOW).retryAfterMs).toBe(2000);
  });
});

describe("classifyTransportError", () => {
  it.each([
    [{ code: "ECONNRESET", message: "socket hang up" }, "network"],
    [{ code: "ECONNREFUSED", message: "connect ECONNREFUSED" }, "network"],
    [{ code: "ETIMEDOUT", message: "Timeout awaiting 'request'" }, "timeout"],
  ])("%j -> %s, retryable", (props, code) => {
    const error = Object.assign(new Error(props.message), { code: props.code });
    expect(classifyTransportError("GET /devices", error)).toMatchObject({ code, retryable: true });
  });
});
