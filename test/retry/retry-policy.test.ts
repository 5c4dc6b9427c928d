/** The one retry policy (src/retry/retry-policy.ts), pure: table-driven. */
import {
  computeRetryDelay,
  decideRetry,
  formatWait,
  parseRetryAfter,
  type RetryPolicy,
} from "../../src/retry/retry-policy.js";

const NOW = Date.UTC(2026, 0, 1, 0, 0, 0);

describe("decideRetry", () => {
  const policy: RetryPolicy = {
    retries: 3,
    baseDelayMs: 100,
    maxDelayMs: 1000,
    retryAfterMaxMs: 60_000,
  };
  const half = () => 0.5;
  it.each([
    ["a final failure", { retryable: false }, 0, 10_000, { retry: false, reason: "final" }],
    ["the first retry", { retryable: true }, 0, 10_000, { retry: true, delayMs: 75 }],
    [
      "the third retry, doubled twice",
      { retryable: true },
      2,
      10_000,
      { retry: true, delayMs: 300 },
    ],
    ["retries spent", { retryable: true }, 3, 10_000, { retry: false, reason: "retries-spent" }],
    [
      "Retry-After within the cap, over the backoff",
      { retryable: true, retryAfterMs: 5_000 },
      0,
      10_000,
      { retry: true, delayMs: 5_000 },
    ],
    [
      "Retry-After over the cap, even with retries left",
      { retryable: true, retryAfterMs: 60_001 },
      0,
      10_000_000,
      { retry: false, reason: "retry-after-over-cap" },
    ],
    [
      "Retry-After exactly at the cap is honoured",
      { retryable: true, retryAfterMs: 60_000 },
      0,
      10_000_000,
      { retry: true, delayMs: 60_000 },
    ],
    [
      "a final failure stays final whatever Retry-After says",
      { retryable: false, retryAfterMs: 60_001 },
      0,
      10_000,
      { retry: false, reason: "final" },
    ],
    [
      "a wait that would pass the deadline",
      { retryable: true, retryAfterMs: 5_000 },
      0,
      5_000,
      { retry: false, reason: "past-deadline", delayMs: 5_000 },
    ],
    [
      "a wait just within the deadline",
      { retryable: true, retryAfterMs: 5_000 },
      0,
      5_001,
      { retry: true, delayMs: 5_000 },
    ],
  ])("%s", (_name, failure, retries, remainingMs, decision) => {
    expect(decideRetry(failure, retries, policy, remainingMs, half)).toEqual(decision);
  });
});

describe("parseRetryAfter", () => {
  it.each([
    ["120", 120_000],
    ["0", 0],
    ["1.5", 1500],
    ["1.25", 1250],
    [" 120 ", 120_000],
    [new Date(NOW + 30_000).toUTCString(), 30_000],
    [new Date(NOW - 30_000).toUTCString(), 0],
    ["soon", undefined],
    ["120s", undefined],
    ["x120", undefined],
    ["", undefined],
    ["   ", undefined],
    [undefined, undefined],
  ])("%j -> %j ms", (header, ms) => {
    expect(parseRetryAfter(header, NOW)).toBe(ms);
  });
});

describe("computeRetryDelay", () => {
  const policy = { retries: 5, baseDelayMs: 100, maxDelayMs: 1000, retryAfterMaxMs: 60_000 };

  it.each([
    [1, 0, 50],
    [1, 1, 100],
    [2, 1, 200],
    [3, 0.5, 300],
    [10, 1, 1000],
    [10, 0, 500],
  ])("retry %i with random %f -> %i ms", (retry, random, ms) => {
    expect(computeRetryDelay(retry, policy, undefined, () => random)).toBe(ms);
  });

  it("never waits less than Retry-After", () => {
    expect(computeRetryDelay(1, policy, 5000, () => 1)).toBe(5000);
    expect(computeRetryDelay(5, policy, 10, () => 1)).toBe(1000);
  });
});

describe("formatWait", () => {
  it.each([
    [850, "850 ms"],
    [999, "999 ms"],
    [1_000, "1 s"],
    [42_000, "42 s"],
    [119_000, "119 s"],
    [120_000, "2 min"],
    [600_000, "10 min"],
    [7_140_000, "119 min"],
    [7_200_000, "2 h"],
    [5 * 3_600_000, "5 h"],
    [47 * 3_600_000, "47 h"],
    [48 * 3_600_000, "2 days"],
    [1e12, "11574 days"],
    [Number.POSITIVE_INFINITY, "forever"],
  ])("%d ms -> %s", (ms, words) => {
    expect(formatWait(ms)).toBe(words);
  });
});
