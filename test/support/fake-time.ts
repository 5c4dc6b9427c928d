/**
 * Jest's fake clock for what p-queue's rate limit (src/api/rate-gate.ts) runs on: `Date`,
 * `setTimeout` and `setInterval`. Promises, `queueMicrotask`, `nextTick`, `setImmediate`,
 * `performance` and I/O stay real, so HTTP against a test server still works; time moves only
 * when the test advances it. Call {@link useRealTime} when done (in `finally`/`afterEach`).
 */
import { jest } from "@jest/globals";

/** Fakes the timers from `nowMs` (epoch ms) on. */
export function useFakeTime(nowMs = 0): void {
  jest.useFakeTimers({
    now: nowMs,
    doNotFake: [
      "nextTick",
      "queueMicrotask",
      "setImmediate",
      "clearImmediate",
      "hrtime",
      "performance",
    ],
  });
}

/** Back to the real timers. */
export function useRealTime(): void {
  jest.useRealTimers();
}

/**
 * A wait on the (fake) global timers, ended at once when `signal` aborts (its timer cleared,
 * rejecting with the signal's reason): the injected `sleep` of a rate gate under fake time.
 */
export function timerSleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const stop = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", stop);
      resolve();
    }, ms);
    signal?.addEventListener("abort", stop, { once: true });
  });
}
