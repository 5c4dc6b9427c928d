import PQueue from "p-queue";
import { MAX_TIMER_MS, sleep } from "../util/timers.js";
import type { RequestGate } from "./api-request.js";

/** API_RATE_LIMIT, and the clock of the pauses after a 429 (tests inject a virtual one). */
export interface RateGateOptions {
  readonly ratePerSecond: number;
  readonly now?: () => number;
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** API_RATE_LIMIT as a p-queue of no-op tasks: a sliding window of 1/rate (docs/design.md). */
export class RateGate implements RequestGate {
  private readonly queue: PQueue;
  private readonly now: () => number;
  private pausedUntil = Number.NEGATIVE_INFINITY;
  private waking: AbortController | undefined;
  constructor(private readonly options: RateGateOptions) {
    const rate = options.ratePerSecond;
    if (!(Number.isFinite(rate) && rate > 0)) throw new RangeError(`bad rate: ${rate}`);
    const intervalCap = Math.ceil(rate / 50); // a timer has 1 ms steps: above 50/s, 20 ms windows
    const interval = Math.min(MAX_TIMER_MS, (intervalCap * 1000) / rate);
    this.queue = new PQueue({ intervalCap, interval, strict: true });
    this.queue.on("add", () => void this.wake());
    this.queue.on("empty", () => this.waking?.abort()); // nobody waits: no timer held for nobody
    this.now = options.now ?? Date.now;
  }
  /** Resolves at the caller's slot; rejects with the signal's reason if it aborts first. */
  readonly take: RequestGate["take"] = ({ signal, priority } = {}) =>
    this.queue.add(() => undefined, { signal, priority: priority ? 1 : 0 });
  /** After a 429: no slot for `ms` from now (a longer pause is kept); no adaptive slow-down. */
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
    const wait = this.options.sleep ?? ((ms: number) => sleep(ms, { signal: waking.signal }));
    try {
      while (this.now() < this.pausedUntil && !waking.signal.aborted) {
        await wait(this.pausedUntil - this.now(), waking.signal);
      }
    } catch {} // a failed timer ends the pause: nobody is left waiting for ever
    if (!waking.signal.aborted) this.queue.start();
    waking.abort();
  }
}
