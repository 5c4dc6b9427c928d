/** Waits that end at once when an AbortSignal fires and leave no timer or rejection behind. */
import { setTimeout as delay } from "node:timers/promises";

/** Longer delays overflow to 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** `ms` as a delay a timer can hold: 0 for negative or NaN, at most {@link MAX_TIMER_MS}. */
export function clampTimerMs(ms: number): number {
  if (!(ms > 0)) return 0;
  return Math.min(MAX_TIMER_MS, Math.ceil(ms));
}

/**
 * Resolves after `ms` clamped to what a timer holds (never a loop of TimeoutOverflowWarnings);
 * rejects with `signal.reason` once it aborts. `unref`: the timer does not keep the process alive.
 */
export async function sleep(
  ms: number,
  { signal, unref }: { readonly signal?: AbortSignal; readonly unref?: boolean } = {},
): Promise<void> {
  try {
    await delay(clampTimerMs(ms), undefined, { signal, ref: unref !== true });
  } catch (error) {
    throw signal?.aborted ? signal.reason : error;
  }
}

/** `promise`, or a rejection with `signal.reason` once it aborts (a later rejection is handled). */
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

/** A signal that aborts when any of its sources does, until it is released. */
export interface LinkedSignal {
  readonly signal: AbortSignal;
  abort(reason?: unknown): void;
  /** Forgets the sources: they no longer hold it (nor whatever listens to it). */
  release(): void;
}

/**
 * A signal that follows `sources` (the first to abort gives its reason) until released. Not
 * `AbortSignal.any`: on Node.js 20 its signal stays referenced by a long-lived source, with all it
 * holds (nodejs/node#55351, #64476): one per request grew the process by each request's body.
 */
export function linkedSignal(sources: readonly (AbortSignal | undefined)[]): LinkedSignal {
  const controller = new AbortController();
  const linked: AbortSignal[] = [];
  const follow = (event: Event): void => {
    const source = event.target;
    controller.abort(source instanceof AbortSignal ? source.reason : undefined);
  };
  for (const source of sources) {
    if (source === undefined) continue;
    if (source.aborted) {
      controller.abort(source.reason);
      break;
    }
    source.addEventListener("abort", follow, { once: true });
    linked.push(source);
  }
  const release = (): void => {
    for (const source of linked) source.removeEventListener("abort", follow);
    linked.length = 0;
  };
  controller.signal.addEventListener("abort", release, { once: true });
  return {
    signal: controller.signal,
    abort: (reason) => controller.abort(reason),
    release,
  };
}
