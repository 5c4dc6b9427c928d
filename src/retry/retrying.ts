import type { Deadline } from "./deadline.js";
import {
  decideRetry,
  type GiveUpReason,
  type RetryableFailure,
  type RetryPolicy,
} from "./retry-policy.js";

export type Attempted<T, F> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly failure: F }
  /** Send again at once, not counted as a retry (a refused access token was just renewed). */
  | { readonly ok: false; readonly again: true };

/** The loop's settings and what it tells its owner. */
export interface RetryLoop<F extends RetryableFailure> {
  readonly policy: RetryPolicy;
  /** The request's budget: backoff waits count against it and end when it aborts. */
  readonly deadline: Deadline;
  readonly random?: () => number;
  /** Replaces the backoff's timer (tests' virtual time); still ended by the deadline's signal. */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** The error thrown when {@link decideRetry} gives up. */
  readonly giveUp: (
    failure: F,
    why: { readonly reason: GiveUpReason; readonly delayMs?: number },
    retries: number,
  ) => Error;
  /** Told before each backoff: a log line, a rate gate's pause. */
  readonly beforeRetry?: (failure: F, delayMs: number, retry: number) => void;
}

/**
 * The one retry loop, for the API and the InfluxDB writer alike: runs `attempt` until it
 * succeeds, waiting as {@link decideRetry} decides; throws the owner's error when it gives up.
 */
export async function retrying<T, F extends RetryableFailure>(
  attempt: () => Promise<Attempted<T, F>>,
  loop: RetryLoop<F>,
): Promise<T> {
  let retries = 0;
  for (;;) {
    const outcome = await attempt();
    if (outcome.ok) return outcome.value;
    if ("again" in outcome) continue;
    const { failure } = outcome;
    const decision = decideRetry(
      failure,
      retries,
      loop.policy,
      loop.deadline.remainingMs(),
      loop.random,
    );
    if (!decision.retry) throw loop.giveUp(failure, decision, retries);
    retries++;
    loop.beforeRetry?.(failure, decision.delayMs, retries);
    await loop.deadline.sleep(decision.delayMs, loop.sleep);
  }
}
