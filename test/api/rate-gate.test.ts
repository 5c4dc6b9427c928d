import { afterEach, beforeEach, describe, expect, it, jest } from "@jest/globals";
import fc from "fast-check";
import { RateGate } from "../../src/api/rate-gate.js";
import { timerSleep, useFakeTime, useRealTime } from "../support/fake-time.js";
import { propertyRuns } from "../support/property-runs.js";

/**
 * The rate limit is p-queue's, on the global timers: these tests run on jest's fake clock
 * (Date, setTimeout, setInterval), which moves only when a test advances it. No real time.
 */

/** Lets every pending promise callback run. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Moves the fake clock forward by `ms`, firing due timers in order (promises run between). */
const advance = (ms: number): Promise<void> => jest.advanceTimersByTimeAsync(ms);

/** Fires timers until none are left (fails after 100,000: timers that never stop). */
const runAll = (): Promise<void> => jest.runAllTimersAsync();

/** A gate on the fake clock (its pauses too), and when each caller got its slot. */
function setup(ratePerSecond: number) {
  const gate = new RateGate({ ratePerSecond, sleep: timerSleep });
  const granted: number[] = [];
  const take = async (n = 1): Promise<void> => {
    await Promise.all(
      Array.from({ length: n }, async () => {
        await gate.take();
        granted.push(Date.now());
      }),
    );
  };
  return { gate, granted, take };
}

describe("RateGate (p-queue)", () => {
  beforeEach(() => useFakeTime(0));
  afterEach(useRealTime);

  it("grants the first slot at once and spaces concurrent callers 1/rate apart", async () => {
    const { granted, take } = setup(10);
    const all = take(5);
    await runAll();
    await all;
    expect(granted).toEqual([0, 100, 200, 300, 400]);
  });

  it("does not burst after idling: one slot now, the rest spaced", async () => {
    const { granted, take } = setup(4);
    await take();
    await advance(60_000);
    const all = take(3);
    await runAll();
    await all;
    expect(granted).toEqual([0, 60_000, 60_250, 60_500]);
  });

  it("serves sequential callers without a timer when they are slower than the rate", async () => {
    const { granted, take } = setup(10);
    for (let i = 0; i < 3; i++) {
      await take();
      expect(jest.getTimerCount()).toBe(0);
      await advance(150);
    }
    expect(granted).toEqual([0, 150, 300]);
  });

  it("above 50 requests/s: at most rate/50 per 20 ms, and the rate holds on average", async () => {
    const { granted, take } = setup(1_000);
    const all = take(100);
    await runAll();
    await all;
    const perWindow = new Map<number, number>();
    for (const t of granted) perWindow.set(t, (perWindow.get(t) ?? 0) + 1);
    expect([...perWindow]).toEqual([0, 20, 40, 60, 80].map((t) => [t, 20]));
  });

  it("works with a pause clock that just advances on sleep: the pause takes none of the queue's time", async () => {
    let t = 1_000;
    const gate = new RateGate({
      ratePerSecond: 5,
      now: () => t,
      sleep: async (ms) => {
        t += ms;
      },
    });
    await gate.take();
    gate.pause(1_000);
    const second = gate.take();
    await runAll();
    await second;
    expect(t).toBe(2_000);
    // the slot itself is the queue's: 1/rate after the first
    expect(Date.now()).toBe(200);
  });

  it("pause: nobody gets a slot until it ends, then slots at the configured rate (no slow-down)", async () => {
    const { gate, granted, take } = setup(10);
    gate.pause(1_000);
    expect(gate.currentRatePerSecond).toBe(0);
    const all = take(3);
    expect(gate.waiting).toBe(3);
    await advance(999);
    expect(granted).toEqual([]);
    await runAll();
    await all;
    expect(granted).toEqual([1_000, 1_100, 1_200]);
    expect(gate.currentRatePerSecond).toBe(10);
    expect(gate.waiting).toBe(0);
  });

  it("pause applies to callers already waiting for a slot", async () => {
    const { gate, granted, take } = setup(10);
    const all = take(3);
    await advance(50);
    expect(granted).toEqual([0]);
    gate.pause(500);
    await runAll();
    await all;
    expect(granted).toEqual([0, 550, 650]);
  });

  it("a 429 during a pause extends it; a shorter one does not shorten it", async () => {
    const { gate, granted, take } = setup(16);
    gate.pause(1_000);
    await advance(100);
    gate.pause(2_000);
    gate.pause(10);
    // the pause lasts until 100 + 2000: the next slot is granted then, not before
    const next = take(1);
    await runAll();
    await next;
    expect(granted).toEqual([2_100]);
  });

  it("a pause whose timer fails ends at once: the waiters are served, and the gate keeps working", async () => {
    let failing = true;
    const gate = new RateGate({
      ratePerSecond: 1,
      sleep: (ms, signal) =>
        failing ? Promise.reject(new Error("timer failed")) : timerSleep(ms, signal),
    });
    gate.pause(5_000);
    const first = gate.take();
    await flush();
    await expect(first).resolves.toBeUndefined();
    failing = false;
    gate.pause(5_000);
    const second = gate.take();
    await advance(4_999);
    expect(gate.waiting).toBe(1);
    await advance(1);
    await expect(second).resolves.toBeUndefined();
  });

  it("a waiter whose signal aborts leaves the queue at once; the others keep their order", async () => {
    const { gate, granted } = setup(10);
    const order: string[] = [];
    const controller = new AbortController();
    const take = (name: string, signal?: AbortSignal) =>
      gate.take({ signal }).then(() => {
        order.push(name);
        granted.push(Date.now());
      });
    const a = take("a");
    const b = take("b", controller.signal);
    const c = take("c");
    await advance(50);
    controller.abort(new Error("stop"));
    await expect(b).rejects.toThrow("stop");
    await runAll();
    await Promise.all([a, c]);
    expect(order).toEqual(["a", "c"]);
    expect(granted).toEqual([0, 100]);
    await expect(gate.take({ signal: controller.signal })).rejects.toThrow("stop");
  });

  it("priority waiters are served before ordinary ones, in their own order", async () => {
    const { gate } = setup(10);
    const order: string[] = [];
    const take = (name: string, priority = false) =>
      gate.take({ priority }).then(() => void order.push(name));
    const all = [take("a"), take("b"), take("c"), take("p1", true), take("p2", true)];
    await runAll();
    await Promise.all(all);
    expect(order).toEqual(["a", "p1", "p2", "b", "c"]);
  });

  it("when the last waiter gives up, the gate holds no timer (rate slot or pause)", async () => {
    const { gate } = setup(1);
    await gate.take();
    const controller = new AbortController();
    const waiting = gate.take({ signal: controller.signal });
    expect(jest.getTimerCount()).toBe(1);
    controller.abort();
    await expect(waiting).rejects.toBeDefined();
    expect(jest.getTimerCount()).toBe(0);

    const paused = new AbortController();
    const signals: AbortSignal[] = [];
    const pausedGate = new RateGate({
      ratePerSecond: 1,
      sleep: (ms, signal) => {
        if (signal) signals.push(signal);
        return timerSleep(ms, signal);
      },
    });
    pausedGate.pause(60_000);
    const onPause = pausedGate.take({ signal: paused.signal });
    await flush();
    expect(jest.getTimerCount()).toBe(1);
    paused.abort();
    await expect(onPause).rejects.toBeDefined();
    expect(signals.map((s) => s.aborted)).toEqual([true]);
    expect(jest.getTimerCount()).toBe(0);
  });

  it.each([
    ["gave up", "at its slot", (gate: RateGate) => gate.take()],
    ["left a pause", "when the pause ends", async (gate: RateGate) => gate.pause(1_000)],
  ])(
    "a caller that comes just after the last one %s is served %s",
    async (_what, _when, before) => {
      const { gate, granted } = setup(1);
      await before(gate);
      const controller = new AbortController();
      const leaving = gate.take({ signal: controller.signal });
      await flush();
      controller.abort();
      const next = gate.take().then(() => granted.push(Date.now()));
      await expect(leaving).rejects.toBeDefined();
      await advance(999);
      expect(granted).toEqual([]);
      await advance(1);
      expect(granted).toEqual([1000]);
      await next;
    },
  );

  it.each([
    ["zero rate", 0],
    ["negative rate", -1],
    ["NaN rate", Number.NaN],
    ["infinite rate", Number.POSITIVE_INFINITY],
  ])("rejects options: %s, naming it", (_name, ratePerSecond) => {
    expect(() => new RateGate({ ratePerSecond })).toThrow(RangeError);
    expect(() => new RateGate({ ratePerSecond })).toThrow(`bad rate: ${ratePerSecond}`);
  });

  it.each([-1, Number.NaN, Number.POSITIVE_INFINITY])("rejects pause(%p), naming it", (ms) => {
    const { gate } = setup(1);
    expect(() => gate.pause(ms)).toThrow(RangeError);
    expect(() => gate.pause(ms)).toThrow(`bad pause: ${ms} ms`);
  });

  it("a 429 with Retry-After: 0 (pause(0)) holds nobody: the next slot comes at the rate", async () => {
    const { gate, granted, take } = setup(10);
    await take();
    gate.pause(0);
    expect(gate.currentRatePerSecond).toBe(10);
    const next = take(1);
    await runAll();
    await next;
    expect(granted).toEqual([0, 100]);
  });

  it("the rate is back at the very millisecond the pause ends", async () => {
    const { gate } = setup(10);
    gate.pause(1_000);
    await advance(999);
    expect(gate.currentRatePerSecond).toBe(0);
    await advance(1);
    expect(gate.currentRatePerSecond).toBe(10);
  });

  it("a pause with nobody waiting holds no timer; the first caller after it waits it out", async () => {
    const { gate, granted, take } = setup(10);
    gate.pause(60_000);
    await flush();
    expect(jest.getTimerCount()).toBe(0);
    await advance(1_000);
    const next = take(1);
    await flush();
    expect(jest.getTimerCount()).toBe(1);
    await runAll();
    await next;
    expect(granted).toEqual([60_000]);
  });

  it("one timer for a pause, however many callers wait and however often it is extended", async () => {
    const { gate, granted, take } = setup(10);
    gate.pause(1_000);
    const all = take(3);
    await flush();
    gate.pause(2_000);
    await flush();
    expect(jest.getTimerCount()).toBe(1);
    await runAll();
    await all;
    expect(granted).toEqual([2_000, 2_100, 2_200]);
  });

  type Op =
    | { kind: "take"; n: number }
    | { kind: "advance"; ms: number }
    | { kind: "pause"; ms: number };

  const opArb: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant("take" as const), n: fc.integer({ min: 1, max: 5 }) }),
    fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 3_000 }) }),
    fc.record({ kind: fc.constant("pause" as const), ms: fc.integer({ min: 0, max: 5_000 }) }),
  );

  it("property: grants every caller once, never inside a pause, never closer than 1/rate", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.double({ min: 0.5, max: 50, noNaN: true }),
        fc.array(opArb, { maxLength: 25 }),
        async (rate, ops) => {
          useFakeTime(0);
          const gate = new RateGate({ ratePerSecond: rate, sleep: timerSleep });
          const grants: { t: number; pausedUntil: number }[] = [];
          const pending: Promise<void>[] = [];
          // the pause as the gate is told it (a longer one is kept), independent of the gate
          let pausedUntil = 0;
          for (const op of ops) {
            if (op.kind === "take") {
              for (let i = 0; i < op.n; i++) {
                pending.push(
                  gate.take().then(() => void grants.push({ t: Date.now(), pausedUntil })),
                );
              }
              await flush(); // record grants made at once before the next op
            } else if (op.kind === "advance") {
              await advance(op.ms);
            } else {
              gate.pause(op.ms);
              pausedUntil = Math.max(pausedUntil, Date.now() + op.ms);
            }
          }
          await runAll();
          await Promise.all(pending);
          expect(grants).toHaveLength(pending.length);
          grants.forEach((g, i) => {
            expect(g.t).toBeGreaterThanOrEqual(g.pausedUntil);
            const prev = grants[i - 1];
            if (prev) expect(g.t - prev.t).toBeGreaterThanOrEqual(1000 / rate - 1e-6);
          });
        },
      ),
      { numRuns: propertyRuns(100) },
    );
  });
});
