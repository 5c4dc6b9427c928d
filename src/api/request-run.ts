/**
 * The state of one API request across its attempts (abort, deadline budget) and the idle timer
 * of one attempt's stream.
 */
import type { Request } from "got";
import { clampTimerMs } from "../util/timers.js";
import { ApiError } from "./errors.js";

/** Why a request was ended from outside its attempts. */
type EndCause =
  | { readonly kind: "deadline" }
  | { readonly kind: "aborted"; readonly reason: string };

/**
 * One request across its attempts: the AbortSignal that ends whatever it waits for, and the
 * deadline budget (API_DEADLINE_MS), which counts only while the request itself runs (an
 * attempt, a backoff sleep), not while it waits for the rate gate, a token, or its caller.
 */
export class RequestRun {
  /** HTTP attempts started. */
  attempts = 0;
  /** The error of the latest failed attempt. */
  lastFailure: ApiError | undefined;
  private readonly controller = new AbortController();
  private cause: EndCause | undefined;
  private spentMs = 0;
  private since: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly cleanups: (() => void)[] = [];

  constructor(
    readonly endpoint: string,
    private readonly deadlineMs: number,
    private readonly now: () => number,
  ) {}

  /** Aborts when the deadline passes or the request is aborted. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Ends the request at once with code `aborted`. */
  abort(reason: string): void {
    this.end({ kind: "aborted", reason });
  }

  /** Runs `cleanup` when the request is finished. */
  onFinish(cleanup: () => void): void {
    this.cleanups.push(cleanup);
  }

  /** Starts counting time against the deadline (the request runs). */
  resume(): void {
    if (this.since !== undefined || this.cause !== undefined) return;
    this.since = this.now();
    this.arm(this.remainingMs());
  }

  /** Stops counting time against the deadline (the request waits for something else). */
  suspend(): void {
    if (this.since === undefined) return;
    this.spentMs += this.now() - this.since;
    this.since = undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** What is left of the deadline, in ms (negative when past). */
  remainingMs(): number {
    const running = this.since === undefined ? 0 : this.now() - this.since;
    return this.deadlineMs - this.spentMs - running;
  }

  /** Stops the deadline's timer and forgets the listeners; the run is over. */
  finish(): void {
    this.suspend();
    for (const cleanup of this.cleanups.splice(0)) cleanup();
  }

  /** The final error after {@link signal} aborted. */
  failure(): ApiError {
    if (this.cause?.kind === "aborted") {
      return new ApiError(`${this.endpoint} aborted: ${this.cause.reason}`, {
        code: "aborted",
        endpoint: this.endpoint,
        retryable: false,
        attempts: this.attempts,
      });
    }
    return this.deadlineError();
  }

  /** The deadline's error; `why` says what ended the request before the deadline itself. */
  deadlineError(why?: string): ApiError {
    const attempts = `${this.attempts} attempt${this.attempts === 1 ? "" : "s"}`;
    const last = this.lastFailure ? `; the last failure: ${this.lastFailure.message}` : "";
    return new ApiError(
      `${this.endpoint} got no complete answer within API_DEADLINE_MS ` +
        `(${Math.round(this.deadlineMs / 100) / 10} s) after ${attempts}${why ? `: ${why}` : ""}${last}`,
      {
        code: "timeout",
        endpoint: this.endpoint,
        retryable: false,
        attempts: this.attempts,
        status: this.lastFailure?.status,
      },
    );
  }

  private end(cause: EndCause): void {
    if (this.cause !== undefined) return;
    this.cause = cause;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.controller.abort(cause);
  }

  /** A timer for `ms` (in steps a timer can hold) that ends the run by the deadline. */
  private arm(ms: number): void {
    clearTimeout(this.timer);
    if (ms <= 0) {
      this.end({ kind: "deadline" });
      return;
    }
    const step = clampTimerMs(ms);
    this.timer = setTimeout(() => {
      if (ms > step) this.arm(ms - step);
      else this.end({ kind: "deadline" });
    }, step);
    this.timer.unref();
  }
}

/**
 * Destroys a stream that sends nothing for `ms` (API_TIMEOUT_MS); armed only while bytes are
 * awaited, so the time a consumer spends on a page does not count.
 */
export class IdleTimer {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly stream: Request,
    private readonly ms: number,
  ) {}

  arm(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      const stalled = Object.assign(new Error(`no data for ${this.ms} ms`), { code: "ETIMEDOUT" });
      this.stream.destroy(stalled);
    }, clampTimerMs(this.ms));
    this.timer.unref();
  }

  disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
