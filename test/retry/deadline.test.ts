/**
 * The time budget of one request (src/retry/deadline.ts): what it counts, when its timer ends it,
 * and the reason given in words. An injected clock, or jest's fake timers: no wall-clock timing.
 */
import { afterEach, describe, expect, it, jest } from "@jest/globals";
import { Deadline, reasonOf } from "../../src/retry/deadline.js";
import { MAX_TIMER_MS } from "../../src/util/timers.js";
import { useFakeTime, useRealTime } from "../support/fake-time.js";

/** A clock that moves when the test says, or when a wait is slept on it. */
function manualClock() {
  const clock = {
    nowMs: 0,
    now: (): number => clock.nowMs,
    sleep: async (ms: number): Promise<void> => {
      clock.nowMs += ms;
    },
  };
  return clock;
}

describe("Deadline: what it counts", () => {
  it("resuming while already running keeps the time counted so far", () => {
    const clock = manualClock();
    const deadline = new Deadline(1_000, clock.now);
    deadline.resume();
    clock.nowMs += 300;
    deadline.resume();
    clock.nowMs += 200;
    expect(deadline.remainingMs()).toBe(500);
    deadline.finish();
  });

  it("a sleep while suspended counts the wait, then stops counting", async () => {
    const clock = manualClock();
    const deadline = new Deadline(1_000, clock.now);
    await deadline.sleep(100, clock.sleep);
    expect(deadline.remainingMs()).toBe(900);
    clock.nowMs += 5_000; // waiting for a slot or a token after the backoff: not counted
    expect(deadline.remainingMs()).toBe(900);
    deadline.finish();
  });

  it("a sleep while running counts the wait, and it keeps running afterwards", async () => {
    const clock = manualClock();
    const deadline = new Deadline(1_000, clock.now);
    deadline.resume();
    clock.nowMs += 100;
    await deadline.sleep(200, clock.sleep);
    expect(deadline.remainingMs()).toBe(700);
    clock.nowMs += 50;
    expect(deadline.remainingMs()).toBe(650);
    deadline.finish();
  });

  it("finish stops counting and lets go of the linked signals", () => {
    const clock = manualClock();
    const shutdown = new AbortController();
    const deadline = new Deadline(1_000, clock.now, [shutdown.signal]);
    deadline.resume();
    clock.nowMs += 100;
    deadline.finish();
    clock.nowMs += 5_000;
    expect(deadline.remainingMs()).toBe(900);
    shutdown.abort("the service is stopping");
    expect(deadline.signal.aborted).toBe(false);
    expect(deadline.endCause).toBeUndefined();
  });
});

describe("Deadline: its timer (jest's fake clock)", () => {
  afterEach(useRealTime);

  it("ends the request when the budget is spent, not a millisecond before", () => {
    useFakeTime(0);
    const deadline = new Deadline(1_000);
    deadline.resume();
    jest.advanceTimersByTime(999);
    expect(deadline.signal.aborted).toBe(false);
    jest.advanceTimersByTime(1);
    expect(deadline.endCause).toEqual({ kind: "deadline" });
    expect(reasonOf(deadline.signal)).toBe("the deadline passed");
    deadline.finish();
  });

  it("time suspended (waiting for a slot) does not bring the end nearer", () => {
    useFakeTime(0);
    const deadline = new Deadline(1_000);
    deadline.resume();
    jest.advanceTimersByTime(600);
    deadline.suspend();
    jest.advanceTimersByTime(60_000);
    expect(deadline.signal.aborted).toBe(false);
    deadline.resume();
    jest.advanceTimersByTime(399);
    expect(deadline.signal.aborted).toBe(false);
    jest.advanceTimersByTime(1);
    expect(deadline.endCause).toEqual({ kind: "deadline" });
    deadline.finish();
  });

  it("a budget longer than a timer holds ends on time, in steps", () => {
    useFakeTime(0);
    const deadline = new Deadline(MAX_TIMER_MS + 1_000);
    deadline.resume();
    jest.advanceTimersByTime(MAX_TIMER_MS);
    expect(deadline.signal.aborted).toBe(false);
    jest.advanceTimersByTime(999);
    expect(deadline.signal.aborted).toBe(false);
    jest.advanceTimersByTime(1);
    expect(deadline.endCause).toEqual({ kind: "deadline" });
    deadline.finish();
  });
});

/**
 * An Error named AbortError ("This operation was aborted", as timers/promises and got throw): its
 * message says nothing of who ended the request. Made here, as jest's realm does not see the
 * platform's DOMException as an Error.
 */
function abortError(): Error {
  const error = new Error("This operation was aborted");
  error.name = "AbortError";
  return error;
}

describe("reasonOf", () => {
  it.each([
    ["a reason in words", AbortSignal.abort("the service is stopping"), "the service is stopping"],
    [
      "an Error's message",
      AbortSignal.abort(new Error("the tick was cancelled")),
      "the tick was cancelled",
    ],
    [
      "a request ended by its owner",
      AbortSignal.abort({ kind: "aborted", reason: "a refused token" }),
      "a refused token",
    ],
    [
      "a request ended by its budget",
      AbortSignal.abort({ kind: "deadline" }),
      "the deadline passed",
    ],
    ["no reason (an AbortError)", AbortSignal.abort(), "the caller cancelled it"],
    [
      "an AbortError of this realm, its message",
      AbortSignal.abort(abortError()),
      "the caller cancelled it",
    ],
    ["an empty reason", AbortSignal.abort(""), "the caller cancelled it"],
    ["an Error without a message", AbortSignal.abort(new Error("")), "the caller cancelled it"],
    ["an object without a kind", AbortSignal.abort({ code: 7 }), "the caller cancelled it"],
    ["a number", AbortSignal.abort(42), "the caller cancelled it"],
  ])("%s", (_name, signal, words) => {
    expect(reasonOf(signal)).toBe(words);
  });

  it("a caller's signal aborted without a reason ends the deadline as cancelled by the caller", () => {
    const caller = new AbortController();
    const deadline = new Deadline(1_000, Date.now, [caller.signal]);
    caller.abort();
    expect(deadline.endCause).toEqual({ kind: "aborted", reason: "the caller cancelled it" });
    deadline.finish();
  });
});
