/**
 * Waits that end at once when an AbortSignal fires and leave nothing behind, on the platform's
 * own timers (`node:timers/promises`): no timer beyond what Node.js holds, no rejection nobody
 * handles.
 */
import { setTimeout as delay } from "node:timers/promises";

/** The longest delay a Node.js timer takes without overflowing to 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** `ms` as a delay a timer can hold: 0 for negative or NaN, at most {@link MAX_TIMER_MS}. */
export function clampTimerMs(ms: number): number {
  if (!(ms > 0)) return 0;
  return Math.min(MAX_TIMER_MS, Math.ceil(ms));
}

/** Options of {@link sleep}. */
export interface SleepOptions {
  /** Ends the wait at once: the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** The timer does not keep the process alive (waits that must never block an exit). */
  readonly unref?: boolean;
}

/**
 * Resolves after `ms` milliseconds, clamped to what a timer holds (an absurd value never turns
 * into a busy loop of TimeoutOverflowWarnings); rejects with `signal.reason` as soon as the
 * signal aborts.
 */
export async function sleep(ms: number, options: SleepOptions = {}): Promise<void> {
  const { signal } = options;
  try {
    await delay(clampTimerMs(ms), undefined, { signal, ref: options.unref !== true });
  } catch (error) {
    throw signal?.aborted ? signal.reason : error;
  }
}

/**
 * `promise`, or a rejection with `signal.reason` as soon as `signal` aborts, whichever comes
 * first. The promise left behind on abort may still reject later: that rejection is handled here.
 */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  promise.catch(() => undefined);
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
