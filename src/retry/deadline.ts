import { clampTimerMs, type LinkedSignal, linkedSignal, raceAbort, sleep } from "../util/timers.js";

/** Why a {@link Deadline} ended its work from outside its attempts. */
export type EndCause =
  | { readonly kind: "deadline" }
  | { readonly kind: "aborted"; readonly reason: string };

/**
 * The time budget of one request across its attempts and the AbortSignal that ends it. It counts
 * only while the request itself runs ({@link resume}d), not while it waits for a slot or a token.
 */
export class Deadline {
  private readonly link: LinkedSignal;
  /** Aborts with the controller or any linked signal. */
  readonly signal: AbortSignal;
  private cause: EndCause | undefined;
  private spentMs = 0;
  private since: number | undefined;
  private timer: NodeJS.Timeout | undefined;

  /** `linked`: signals that end the request too (a shutdown, the caller's), for their reason. */
  constructor(
    readonly budgetMs: number,
    private readonly now: () => number = Date.now,
    linked: readonly (AbortSignal | undefined)[] = [],
  ) {
    this.link = linkedSignal(linked);
    this.signal = this.link.signal;
  }

  /** Why the request was ended from outside, once it was. */
  get endCause(): EndCause | undefined {
    if (this.cause === undefined && this.signal.aborted) {
      this.cause = { kind: "aborted", reason: reasonOf(this.signal) };
    }
    return this.cause;
  }

  /** Ends the request at once (`aborted`, with `reason`); the first cause stays. */
  abort(reason: string): void {
    this.end({ kind: "aborted", reason });
  }

  resume(): void {
    if (this.since !== undefined || this.signal.aborted) return;
    this.since = this.now();
    this.arm(this.remainingMs());
  }

  suspend(): void {
    if (this.since === undefined) return;
    this.spentMs += this.now() - this.since;
    this.since = undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** What is left of the budget, in ms (negative when past). */
  remainingMs(): number {
    const running = this.since === undefined ? 0 : this.now() - this.since;
    return this.budgetMs - this.spentMs - running;
  }

  /**
   * Waits `ms` as part of the request, counted against the budget (which runs on afterwards only
   * if it ran before); an abort ends it, rejecting. `wait` replaces the timer (virtual time).
   */
  async sleep(
    ms: number,
    wait?: (ms: number, signal: AbortSignal) => Promise<void>,
  ): Promise<void> {
    const running = this.since !== undefined;
    this.resume();
    try {
      const { signal } = this;
      await (wait ? raceAbort(wait(ms, signal), signal) : sleep(ms, { signal }));
    } finally {
      if (!running) this.suspend();
    }
  }

  /** `promise`, unless the request ends first (a wait not counted against the budget). */
  waitFor<T>(promise: Promise<T>): Promise<T> {
    return raceAbort(promise, this.signal);
  }

  /** Stops the timer and lets go of the linked signals; the request is over. */
  finish(): void {
    this.suspend();
    this.link.release();
  }

  private end(cause: EndCause): void {
    if (this.endCause !== undefined) return;
    this.cause = cause;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.link.abort(cause);
  }

  /** A timer for `ms` (in steps a timer can hold) that ends the request by the budget. */
  private arm(ms: number): void {
    clearTimeout(this.timer);
    if (ms <= 0) {
      this.end({ kind: "deadline" });
      return;
    }
    const step = clampTimerMs(ms);
    // then the rest: arm(0), or below 0 as clampTimerMs rounds up, ends the request
    this.timer = setTimeout(() => this.arm(ms - step), step);
    this.timer.unref();
  }
}

/** The reason of an aborted signal, in words. */
export function reasonOf(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  if (typeof reason === "string" && reason !== "") return reason;
  if (reason instanceof Error && reason.name !== "AbortError" && reason.message !== "") {
    return reason.message;
  }
  if (typeof reason === "object" && reason !== null && "kind" in reason) {
    const cause = reason as EndCause;
    return cause.kind === "aborted" ? cause.reason : "the deadline passed";
  }
  return "the caller cancelled it";
}
