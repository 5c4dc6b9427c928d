/**
 * Resolves after `ms` milliseconds. `unref`: the timer does not keep the process alive (waits that
 * must never block an exit). Delays are clamped to what a timer can hold (2^31 - 1 ms), so an
 * absurd value never turns into a busy loop of TimeoutOverflowWarnings.
 */
export function sleep(ms: number, options: { unref?: boolean } = {}): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, clampTimerMs(ms));
    if (options.unref) timer.unref();
  });
}

/** The longest delay a Node.js timer takes without overflowing to 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** `ms` as a delay a timer can hold: 0 for negative or NaN, at most {@link MAX_TIMER_MS}. */
export function clampTimerMs(ms: number): number {
  if (!(ms > 0)) return 0;
  return Math.min(MAX_TIMER_MS, Math.ceil(ms));
}
