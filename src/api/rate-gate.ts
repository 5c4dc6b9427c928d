/**
 * Client-side rate limiting of API requests. The API documents no rate limit (spec section 8:
 * "Rate limits and behaviour on exceeding the limits above: not shown"), so the gate starts at a
 * configured rate, backs off on 429 responses and recovers step by step.
 */

import { sleep } from "../util/timers.js";

/** Options of a {@link RateGate}. */
export interface RateGateOptions {
  /** Highest (and initial) rate in requests per second; > 0. */
  readonly ratePerSecond: number;
  /** Clock in ms (default `Date.now`); injected in tests. */
  readonly now?: () => number;
  /**
   * Waits `ms` milliseconds (default a timer clamped to 2^31 - 1 ms, cleared when `signal`
   * aborts); injected in tests, which may ignore the signal.
   */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** successes before each recovery step (default 20) */
  readonly recoverAfter?: number;
  /** lowest rate (default ratePerSecond / 16) */
  readonly minRatePerSecond?: number;
}

/** Factor of one recovery step. */
const RECOVERY_FACTOR = 1.25;
/** Factor applied to the rate on a 429. */
const BACKOFF_FACTOR = 0.5;
/** A slot this close (ms) counts as reached: `now + (slot - now)` may miss `slot` by rounding. */
const SLOT_TOLERANCE_MS = 1e-6;

/** Options of one {@link RateGate.take}. */
export interface TakeOptions {
  /** Gives up waiting when it aborts: the promise rejects with its reason, no slot is used. */
  readonly signal?: AbortSignal;
  /**
   * Served before every ordinary waiter (after earlier priority ones). For the access-token
   * renewal, which every queued request needs, and the request that gave its slot to it.
   */
  readonly priority?: boolean;
}

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
  readonly priority: boolean;
}

/**
 * A request rate limiter (spec 8 leaves rate limits unspecified): hands out slots spaced
 * `1000 / rate` ms apart, stops handing them out during a pause after a 429, halves the rate on
 * a 429 and raises it again by x1.25 every `recoverAfter` successes, up to the configured rate.
 *
 * Waiting callers are served first come, first served (priority callers first) by a single loop,
 * so at most one `sleep` is awaited at a time, and a pause or rate change takes effect for every
 * caller still waiting. No timer exceeds 2^31 - 1 ms (a long pause is slept in parts).
 */
export class RateGate {
  private readonly maxRate: number;
  private readonly minRate: number;
  private readonly recoverAfter: number;
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private rate: number;
  private nextSlotMs = Number.NEGATIVE_INFINITY;
  private pausedUntil = 0;
  private successes = 0;
  private readonly waiters: Waiter[] = [];
  private pumping = false;
  /**
   * Ends the pump's current sleep early (when the last waiter gave up): one per run of the pump,
   * not one per sleep (a controller and its abort event per slot cost more than the slot).
   */
  private interrupt: AbortController | undefined;

  /** @throws RangeError on a non-positive rate, `minRatePerSecond` above it, or `recoverAfter` < 1. */
  constructor(options: RateGateOptions) {
    const { ratePerSecond } = options;
    if (!Number.isFinite(ratePerSecond) || ratePerSecond <= 0) {
      throw new RangeError(`ratePerSecond must be a positive number, got ${ratePerSecond}`);
    }
    const minRate = options.minRatePerSecond ?? ratePerSecond / 16;
    if (!Number.isFinite(minRate) || minRate <= 0 || minRate > ratePerSecond) {
      throw new RangeError(`minRatePerSecond must be in (0, ${ratePerSecond}], got ${minRate}`);
    }
    const recoverAfter = options.recoverAfter ?? 20;
    if (!Number.isSafeInteger(recoverAfter) || recoverAfter < 1) {
      throw new RangeError(`recoverAfter must be a positive integer, got ${recoverAfter}`);
    }
    this.maxRate = ratePerSecond;
    this.minRate = minRate;
    this.recoverAfter = recoverAfter;
    this.rate = ratePerSecond;
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? ((ms, signal) => sleep(ms, { signal }));
  }

  /**
   * Resolves when the caller may send one request: spaced 1/rate apart (no bursts beyond one
   * slot), and not before a pause ends. Safe with many concurrent callers (each gets its own
   * slot, in call order; `priority` callers first). Rejects if the injected `sleep` rejects, or
   * with the signal's reason as soon as `options.signal` aborts (the caller leaves the queue; when
   * nobody is left, the gate's timer is cleared too).
   */
  take(options: TakeOptions = {}): Promise<void> {
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
        if (this.waiters.length === 0) this.interrupt?.abort();
        reject(signal?.reason);
      };
      const waiter: Waiter = {
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        reject: (error) => {
          signal?.removeEventListener("abort", onAbort);
          reject(error);
        },
        priority: options.priority ?? false,
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      const firstOrdinary = waiter.priority ? this.waiters.findIndex((w) => !w.priority) : -1;
      if (firstOrdinary >= 0) this.waiters.splice(firstOrdinary, 0, waiter);
      else this.waiters.push(waiter);
      if (!this.pumping) void this.pump();
    });
  }

  /**
   * After a 429: nobody gets a slot for `ms` (from now; an ongoing longer pause is kept), then
   * the rate is halved (not below the minimum). 429s reported while a pause is already in effect
   * belong to the same episode (requests sent before it) and extend the pause without halving
   * the rate again. Resets the progress towards the next recovery step.
   *
   * @throws RangeError when `ms` is negative or not finite.
   */
  pause(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) {
      throw new RangeError(`pause must be a finite, non-negative number of ms, got ${ms}`);
    }
    const now = this.now();
    if (now >= this.pausedUntil) {
      this.rate = Math.max(this.minRate, this.rate * BACKOFF_FACTOR);
    }
    this.pausedUntil = Math.max(this.pausedUntil, now + ms);
    this.successes = 0;
  }

  /**
   * After a successful request: every `recoverAfter` successes the rate steps back up (x1.25,
   * capped at the configured rate). Successes reported during a pause are not counted.
   */
  success(): void {
    if (this.now() < this.pausedUntil) return;
    this.successes += 1;
    if (this.successes >= this.recoverAfter) {
      this.successes = 0;
      this.rate = Math.min(this.maxRate, this.rate * RECOVERY_FACTOR);
    }
  }

  /** Requests waiting for their slot now: while there are, the rate limit holds the fetching. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** The rate slots are currently spaced at, in requests per second. */
  get currentRatePerSecond(): number {
    return this.rate;
  }

  /** Serves the waiters in order; the only place that sleeps. */
  private async pump(): Promise<void> {
    this.pumping = true;
    let interrupt = new AbortController();
    this.interrupt = interrupt;
    try {
      for (;;) {
        const waiter = this.waiters[0];
        if (waiter === undefined) return;
        const now = this.now();
        const slot = Math.max(now, this.nextSlotMs, this.pausedUntil);
        if (slot - now > SLOT_TOLERANCE_MS) {
          // Re-evaluated after waking: a pause or rate change may have moved the slot, or every
          // waiter may have given up (and another come since: then a fresh interrupt).
          if (interrupt.signal.aborted) {
            interrupt = new AbortController();
            this.interrupt = interrupt;
          }
          await this.nap(slot - now, interrupt.signal);
          continue;
        }
        this.waiters.shift();
        this.nextSlotMs = slot + 1000 / this.rate;
        waiter.resolve();
      }
    } catch (error) {
      for (const waiter of this.waiters.splice(0)) waiter.reject(error);
    } finally {
      this.interrupt = undefined;
      this.pumping = false;
    }
  }

  /**
   * One sleep of the pump, ended early when `interrupt` aborts (the queue emptied): the default
   * sleep then clears its timer; an injected one that ignores the signal is simply not waited for.
   */
  private nap(ms: number, interrupt: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const woken = (): void => resolve();
      interrupt.addEventListener("abort", woken, { once: true });
      this.sleep(ms, interrupt).then(
        () => {
          interrupt.removeEventListener("abort", woken);
          resolve();
        },
        (error: unknown) => {
          interrupt.removeEventListener("abort", woken);
          // the default sleep rejects when interrupted: that is a wake-up, not a failure
          if (interrupt.aborted) resolve();
          else reject(error);
        },
      );
    });
  }
}
