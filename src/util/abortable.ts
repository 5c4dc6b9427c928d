/**
 * Waits that end at once when an AbortSignal fires, and leave nothing behind: no timer that keeps
 * the process alive, no promise whose rejection nobody handles.
 */
import { clampTimerMs } from "./sleep.js";

/**
 * Resolves after `ms` milliseconds (clamped to what a timer holds, 2^31 - 1 ms, so an absurd
 * value never overflows), or rejects with `signal.reason` as soon as `signal` aborts; the timer is
 * cleared then. Without a signal it is a plain, clamped sleep.
 */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, clampTimerMs(ms));
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * `promise`, or a rejection with `signal.reason` as soon as `signal` aborts, whichever comes
 * first. The promise left behind on abort may still reject later: that rejection is handled here
 * (never an unhandled rejection).
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
