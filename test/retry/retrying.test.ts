/**
 * The one retry loop (src/retry/retrying.ts) and the deadline it waits under
 * (src/retry/deadline.ts), with an injected clock and injected waits: no wall-clock timing.
 */
import { Deadline, reasonOf } from "../../src/retry/deadline.js";
import type { RetryableFailure } from "../../src/retry/retry-policy.js";
import { type Attempted, retrying } from "../../src/retry/retrying.js";

const POLICY = { retries: 3, baseDelayMs: 100, maxDelayMs: 1_000, retryAfterMaxMs: 60_000 };

/** A clock that moves only when a wait is slept on it. */
class FakeClock {
  nowMs = 0;
  readonly now = (): number => this.nowMs;
  readonly waits: number[] = [];
  readonly sleep = async (ms: number): Promise<void> => {
    this.waits.push(ms);
    this.nowMs += ms;
  };
}

interface Failure extends RetryableFailure {
  readonly name: string;
}

/** Attempts that answer in turn from `outcomes` (the last one again when they run out). */
function attempts<T>(outcomes: Attempted<T, Failure>[]) {
  let n = 0;
  const attempt = async () => outcomes[Math.min(n++, outcomes.length - 1)] as Attempted<T, Failure>;
  return { attempt, count: () => n };
}

const transient: Failure = { name: "503", retryable: true };

function loop(clock: FakeClock, deadline = new Deadline(1_000_000, clock.now)) {
  const told: string[] = [];
  return {
    told,
    options: {
      policy: POLICY,
      deadline,
      random: () => 1,
      sleep: clock.sleep,
      giveUp: (failure: Failure, why: { reason: string }, retries: number) =>
        new Error(`${failure.name}: ${why.reason} after ${retries} retries`),
      beforeRetry: (failure: Failure, delayMs: number, retry: number) =>
        void told.push(`${failure.name} retry ${retry} in ${delayMs} ms`),
    },
  };
}

describe("retrying", () => {
  it("retries a transient failure with backoff until an attempt succeeds", async () => {
    const clock = new FakeClock();
    const { attempt, count } = attempts<string>([
      { ok: false, failure: transient },
      { ok: false, failure: transient },
      { ok: true, value: "answer" },
    ]);
    const { told, options } = loop(clock);
    await expect(retrying(attempt, options)).resolves.toBe("answer");
    expect(count()).toBe(3);
    expect(clock.waits).toEqual([100, 200]);
    expect(told).toEqual(["503 retry 1 in 100 ms", "503 retry 2 in 200 ms"]);
  });

  it("gives up with the owner's error: final at once, spent after the policy's retries", async () => {
    const clock = new FakeClock();
    const final = attempts<string>([{ ok: false, failure: { name: "404", retryable: false } }]);
    await expect(retrying(final.attempt, loop(clock).options)).rejects.toThrow(
      "404: final after 0 retries",
    );
    expect(final.count()).toBe(1);
    const spent = attempts<string>([{ ok: false, failure: transient }]);
    await expect(retrying(spent.attempt, loop(clock).options)).rejects.toThrow(
      "503: retries-spent after 3 retries",
    );
    expect(spent.count()).toBe(4);
  });

  it("an attempt asking to go again at once (a renewed token) is no retry and waits nothing", async () => {
    const clock = new FakeClock();
    const { attempt, count } = attempts<string>([
      { ok: false, again: true },
      { ok: false, again: true },
      { ok: true, value: "after two renewals" },
    ]);
    await expect(retrying(attempt, loop(clock).options)).resolves.toBe("after two renewals");
    expect(count()).toBe(3);
    expect(clock.waits).toEqual([]);
  });

  it("never waits past the deadline: the wait is counted against it", async () => {
    const clock = new FakeClock();
    const deadline = new Deadline(350, clock.now);
    const { attempt, count } = attempts<string>([{ ok: false, failure: transient }]);
    // waits 100 and 200 fit in 350; the next (400) would not
    await expect(retrying(attempt, loop(clock, deadline).options)).rejects.toThrow(
      "503: past-deadline after 2 retries",
    );
    expect(count()).toBe(3);
    expect(clock.waits).toEqual([100, 200]);
    expect(deadline.remainingMs()).toBe(50);
  });
});

describe("Deadline", () => {
  it("counts only while resumed", () => {
    const clock = new FakeClock();
    const deadline = new Deadline(1_000, clock.now);
    deadline.resume();
    clock.nowMs += 300;
    deadline.suspend();
    clock.nowMs += 10_000; // waiting for a slot, a token or the caller: not counted
    deadline.resume();
    clock.nowMs += 200;
    expect(deadline.remainingMs()).toBe(500);
    deadline.finish();
  });

  it("a linked signal ends it, with that signal's reason in words; the first cause stays", () => {
    const shutdown = new AbortController();
    const deadline = new Deadline(1_000, Date.now, [shutdown.signal, undefined]);
    expect(deadline.signal.aborted).toBe(false);
    shutdown.abort("the service is stopping");
    expect(deadline.signal.aborted).toBe(true);
    expect(deadline.endCause).toEqual({ kind: "aborted", reason: "the service is stopping" });
    deadline.abort("later");
    expect(deadline.endCause).toEqual({ kind: "aborted", reason: "the service is stopping" });
  });

  it("an already aborted caller ends it at once; a spent budget ends it as the deadline", async () => {
    const gone = AbortSignal.abort(new Error("the tick was cancelled"));
    expect(new Deadline(1_000, Date.now, [gone]).endCause).toEqual({
      kind: "aborted",
      reason: "the tick was cancelled",
    });
    const clock = new FakeClock();
    const spent = new Deadline(0, clock.now);
    spent.resume();
    expect(spent.endCause).toEqual({ kind: "deadline" });
    expect(reasonOf(spent.signal)).toBe("the deadline passed");
  });

  it("its sleep rejects with the signal's reason as soon as it aborts", async () => {
    const deadline = new Deadline(60_000);
    const waiting = deadline.sleep(50_000);
    deadline.abort("shutting down");
    await expect(waiting).rejects.toEqual({ kind: "aborted", reason: "shutting down" });
    deadline.finish();
  });
});
