/** Bounds of retries (the API client: `api.retries`…; the InfluxDB writer: `influx.retries`…). */
export interface RetryPolicy {
  /** Retries after the first attempt (default 5). */
  readonly retries: number;
  /** Delay before the first retry, doubled on every further one (default 500 ms). */
  readonly baseDelayMs: number;
  /** Upper bound of one backoff delay (default 30 000 ms). */
  readonly maxDelayMs: number;
}

/**
 * Delay before retry number `retry` (1-based): exponential backoff with full jitter in
 * [ceiling/2, ceiling], and never shorter than what the server asked for with Retry-After.
 * Pure: `random` is injected.
 */
export function computeRetryDelay(
  retry: number,
  policy: RetryPolicy,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  const backoff = Math.round(ceiling / 2 + (random() * ceiling) / 2);
  return retryAfterMs === undefined ? backoff : Math.max(retryAfterMs, backoff);
}

/**
 * Retry-After (RFC 9110 10.2.3): delay-seconds or an HTTP date. Undefined when absent or unreadable.
 */
export function parseRetryAfter(header: string | undefined, nowMs: number): number | undefined {
  if (header === undefined || header.trim() === "") return undefined;
  const text = header.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/**
 * A wait in words for messages: `850 ms`, `42 s`, `10 min`, `5 h`, `11574 days` (rounded; an
 * infinite or NaN wait is `forever`).
 */
export function formatWait(ms: number): string {
  if (!Number.isFinite(ms)) return "forever";
  const round = (n: number): string => String(Math.round(n * 10) / 10);
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 120_000) return `${round(ms / 1000)} s`;
  if (ms < 7_200_000) return `${round(ms / 60_000)} min`;
  if (ms < 172_800_000) return `${round(ms / 3_600_000)} h`;
  return `${Math.round(ms / 86_400_000)} days`;
}
