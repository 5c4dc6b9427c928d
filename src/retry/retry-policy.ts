/** When to retry, and how long to wait first: one pure policy for the API and InfluxDB. */

/** Bounds of retries (`api.retries`…, `influx.retries`…). */
export interface RetryPolicy {
  /** Retries after the first attempt. */
  readonly retries: number;
  /** Delay before the first retry, doubled on every further one. */
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** Longest Retry-After honoured (API_RETRY_AFTER_MAX…): a longer one is not retried. */
  readonly retryAfterMaxMs: number;
}

/** Default of {@link RetryPolicy.retryAfterMaxMs}: 10 minutes, as Telegraf. */
export const DEFAULT_RETRY_AFTER_MAX_MS = 600_000;

/** What a failed attempt tells the policy. */
export interface RetryableFailure {
  /** False for failures that another attempt cannot mend (refused, malformed, not found). */
  readonly retryable: boolean;
  /** How long the server asked to wait (Retry-After), when it did. */
  readonly retryAfterMs?: number;
}

export type GiveUpReason = "final" | "retry-after-over-cap" | "retries-spent" | "past-deadline";

export type RetryDecision =
  | { readonly retry: true; readonly delayMs: number }
  | { readonly retry: false; readonly reason: GiveUpReason; readonly delayMs?: number };

/** The decision after a failed attempt: `retriesSoFar` retries in, `remainingMs` left. */
export function decideRetry(
  failure: RetryableFailure,
  retriesSoFar: number,
  policy: RetryPolicy,
  remainingMs: number,
  random: () => number = Math.random,
): RetryDecision {
  if (!failure.retryable) return { retry: false, reason: "final" };
  const asked = failure.retryAfterMs;
  if (asked !== undefined && asked > policy.retryAfterMaxMs) {
    return { retry: false, reason: "retry-after-over-cap" };
  }
  if (retriesSoFar >= policy.retries) return { retry: false, reason: "retries-spent" };
  const delayMs = computeRetryDelay(retriesSoFar + 1, policy, asked, random);
  if (delayMs >= remainingMs) return { retry: false, reason: "past-deadline", delayMs };
  return { retry: true, delayMs };
}

/** Delay before retry number `retry` (1-based): jittered backoff, at least Retry-After. */
export function computeRetryDelay(
  retry: number,
  policy: Pick<RetryPolicy, "baseDelayMs" | "maxDelayMs">,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  const backoff = Math.round(ceiling / 2 + (random() * ceiling) / 2);
  return retryAfterMs === undefined ? backoff : Math.max(retryAfterMs, backoff);
}

/** Retry-After (RFC 9110 10.2.3): delay-seconds or an HTTP date; undefined when unreadable. */
export function parseRetryAfter(header: string | undefined, nowMs: number): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim(); // empty: neither delay-seconds nor a date (Date.parse gives NaN)
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** A wait in words for messages: `850 ms`, `42 s`, `10 min`, `5 h`, `11574 days`, `forever`. */
export function formatWait(ms: number): string {
  if (!Number.isFinite(ms)) return "forever";
  const round = (n: number): string => String(Math.round(n * 10) / 10);
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 120_000) return `${round(ms / 1000)} s`;
  if (ms < 7_200_000) return `${round(ms / 60_000)} min`;
  if (ms < 172_800_000) return `${round(ms / 3_600_000)} h`;
  return `${Math.round(ms / 86_400_000)} days`;
}
