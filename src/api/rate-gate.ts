import PQueue from "p-queue";
import { MAX_TIMER_MS, sleep } from "../util/timers.js";
import type { RequestGate } from "./api-request.js";

/** API_RATE_LIMIT, and the clock of the pauses after a 429 (tests inject a virtual one). */
export interface RateGateOptions {
  readonly ratePerSecond: number;
  readonly now?: () => number;
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/**
 * API_RATE_LIMIT as a p-queue of no-op tasks, one per request: a sliding window (`strict`) of
 * 1/rate (above 50/s, rate/50 per 20 ms: a timer has 1 ms steps), priority first, paused after
 * a 429 until its Retry-After ends. No adaptive slow-down: docs/design.md, "Two queues" and on.
 */
export class RateGate implements RequestGate {
  private readonly queue: PQueue;
  private readonly now: () => number;
  private pausedUntil = Number.NEGATIVE_INFINITY;
  /** The wait for a pause's end, aborted once nobody waits (no timer held for nobody). */
  private waking: AbortController | undefined;

  constructor(private readonly options: RateGateOptions) {
    const rate = options.ratePerSecond;
    if (!(Number.isFinite(rate) && rate > 0)) throw new RangeError(`bad rate: ${rate}`);
    const intervalCap = Math.ceil(rate / 50);
    const interval = Math.min(MAX_TIMER_MS, (intervalCap * 1000) / rate);
    this.queue = new PQueue({ intervalCap, interval, strict: true });
    this.queue.on("empty", () => this.waking?.abort());
    this.now = options.now ?? Date.now;
  }
  /** Resolves at the caller's slot; rejects with the signal's reason if it aborts first. */
  take(options: { readonly signal?: AbortSignal; readonly priority?: boolean } = {}) {
    const priority = options.priority ? 1 : 0;
    const slot = this.queue.add(() => undefined, { signal: options.signal, priority });
    void this.wake();
    return slot;
  }
  /** After a 429: no slot for `ms` from now (a longer pause under way is kept). */
  pause(ms: number): void {
    if (!(Number.isFinite(ms) && ms >= 0)) throw new RangeError(`bad pause: ${ms} ms`);
    this.pausedUntil = Math.max(this.pausedUntil, this.now() + ms);
    this.queue.pause();
    void this.wake();
  }
  /** Requests waiting for their slot now: while there are, the rate limit holds the fetching. */
  get waiting(): number {
    return this.queue.size;
  }
  /** The rate allowed now: API_RATE_LIMIT, 0 during a pause after a 429. */
  get currentRatePerSecond(): number {
    return this.now() < this.pausedUntil ? 0 : this.options.ratePerSecond;
  }
  /** Paused with callers waiting: starts the queue when the pause ends (or its timer fails). */
  private async wake(): Promise<void> {
    if (!this.queue.isPaused || !this.queue.size || this.waking?.signal.aborted === false) return;
    const waking = new AbortController();
    this.waking = waking;
    const { signal } = waking;
    const wait = this.options.sleep ?? ((ms: number) => sleep(ms, { signal }));
    try {
      while (this.now() < this.pausedUntil && !signal.aborted) {
        await wait(this.pausedUntil - this.now(), signal);
      }
    } catch {
      // a failed timer ends the pause: nobody is left waiting for ever
    }
    if (!signal.aborted) this.queue.start();
    waking.abort();
  }
}
