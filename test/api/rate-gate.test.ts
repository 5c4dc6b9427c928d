import fc from "fast-check";
import { RateGate, type RateGateOptions } from "../../src/api/rate-gate.js";

/** Lets every pending promise callback run. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * A fake clock: `sleep` registers a timer, and time only moves when the test advances it, firing
 * timers in order. No real time is involved.
 */
class FakeClock {
  t = 0;
  readonly sleeps: number[] = [];
  private timers: { at: number; fire: () => void }[] = [];

  readonly now = (): number => this.t;
  readonly sleep = (ms: number): Promise<void> => {
    this.sleeps.push(ms);
    return new Promise((fire) => this.timers.push({ at: this.t + ms, fire }));
  };

  /** Moves time forward by `ms`, firing due timers in order. */
  async advance(ms: number): Promise<void> {
    await this.runUntil(this.t + ms);
  }

  /** Fires timers until none are left. */
  async runAll(): Promise<void> {
    await this.runUntil(Number.POSITIVE_INFINITY);
  }

  private async runUntil(target: number): Promise<void> {
    await flush();
    for (let fired = 0; ; fired++) {
      // a gate that sets timers without end would loop here forever
      if (fired > 100_000) throw new Error("the fake clock fired 100000 timers: they never stop");
      this.timers.sort((a, b) => a.at - b.at);
      const next = this.timers[0];
      if (next === undefined || next.at > target) break;
      this.timers.shift();
      this.t = Math.max(this.t, next.at);
      next.fire();
      await flush();
    }
    if (Number.isFinite(target)) this.t = Math.max(this.t, target);
    await flush();
  }
}

function setup(options: Omit<RateGateOptions, "now" | "sleep">) {
  const clock = new FakeClock();
  const gate = new RateGate({ ...options, now: clock.now, sleep: clock.sleep });
  const granted: number[] = [];
  const take = async (n = 1): Promise<void> => {
    await Promise.all(
      Array.from({ length: n }, async () => {
        await gate.take();
        granted.push(clock.t);
      }),
    );
  };
  return { clock, gate, granted, take };
}

describe("RateGate", () => {
  it("grants the first slot at once and spaces concurrent callers 1/rate apart", async () => {
    const { clock, granted, take } = setup({ ratePerSecond: 10 });
    const all = take(5);
    await clock.runAll();
    await all;
    expect(granted).toEqual([0, 100, 200, 300, 400]);
  });

  it("does not burst after idling: one slot now, the rest spaced", async () => {
    const { clock, granted, take } = setup({ ratePerSecond: 4 });
    await take();
    await clock.advance(60_000);
    const all = take(3);
    await clock.runAll();
    await all;
    expect(granted).toEqual([0, 60_000, 60_250, 60_500]);
  });

  it("serves sequential callers without sleeping when they are slower than the rate", async () => {
    const { clock, granted, take } = setup({ ratePerSecond: 10 });
    for (let i = 0; i < 3; i++) {
      await take();
      await clock.advance(150);
    }
    expect(granted).toEqual([0, 150, 300]);
    expect(clock.sleeps).toEqual([]);
  });

  it("works with a clock that just advances on sleep", async () => {
    let t = 1_000;
    const gate = new RateGate({
      ratePerSecond: 5,
      now: () => t,
      sleep: async (ms) => {
        t += ms;
      },
    });
    const times: number[] = [];
    for (let i = 0; i < 4; i++) {
      await gate.take();
      times.push(t);
    }
    expect(times).toEqual([1_000, 1_200, 1_400, 1_600]);
  });

  it("pause: nobody gets a slot until it ends, then the rate is halved", async () => {
    const { clock, gate, granted, take } = setup({ ratePerSecond: 10 });
    gate.pause(1_000);
    expect(gate.currentRatePerSecond).toBe(5);
    const all = take(3);
    await clock.advance(999);
    expect(granted).toEqual([]);
    await clock.runAll();
    await all;
    expect(granted).toEqual([1_000, 1_200, 1_400]);
  });

  it("pause applies to callers already waiting for a slot", async () => {
    const { clock, gate, granted, take } = setup({ ratePerSecond: 10 });
    const all = take(3);
    await clock.advance(50);
    expect(granted).toEqual([0]);
    gate.pause(500);
    await clock.runAll();
    await all;
    expect(granted).toEqual([0, 550, 750]);
  });

  it("a 429 during a pause extends it without halving the rate again", async () => {
    const { clock, gate, granted, take } = setup({ ratePerSecond: 16 });
    gate.pause(1_000);
    await clock.advance(100);
    gate.pause(2_000);
    gate.pause(10);
    expect(gate.currentRatePerSecond).toBe(8);
    // the pause lasts until 100 + 2000: the next slot is granted then, not before
    const next = take(1);
    await clock.runAll();
    await next;
    expect(granted).toEqual([2_100]);
    await clock.advance(2_000);
    gate.pause(0);
    expect(gate.currentRatePerSecond).toBe(4);
  });

  it("never halves below the minimum rate", async () => {
    const { gate } = setup({ ratePerSecond: 16 });
    for (let i = 0; i < 10; i++) gate.pause(0);
    expect(gate.currentRatePerSecond).toBe(1);

    const custom = setup({ ratePerSecond: 16, minRatePerSecond: 3 });
    for (let i = 0; i < 10; i++) custom.gate.pause(0);
    expect(custom.gate.currentRatePerSecond).toBe(3);
  });

  it("recovers x1.25 every recoverAfter successes, capped at the configured rate", async () => {
    const { gate } = setup({ ratePerSecond: 10, recoverAfter: 3 });
    gate.pause(0);
    expect(gate.currentRatePerSecond).toBe(5);
    const rates: number[] = [];
    for (let i = 0; i < 15; i++) {
      gate.success();
      rates.push(gate.currentRatePerSecond);
    }
    expect(rates).toEqual([
      5, 5, 6.25, 6.25, 6.25, 7.8125, 7.8125, 7.8125, 9.765625, 9.765625, 9.765625, 10, 10, 10, 10,
    ]);
  });

  it("defaults to a recovery step every 20 successes", () => {
    const { gate } = setup({ ratePerSecond: 8 });
    gate.pause(0);
    for (let i = 0; i < 19; i++) gate.success();
    expect(gate.currentRatePerSecond).toBe(4);
    gate.success();
    expect(gate.currentRatePerSecond).toBe(5);
  });

  it("ignores successes during a pause and restarts the count on a pause", async () => {
    const { clock, gate } = setup({ ratePerSecond: 10, recoverAfter: 2 });
    gate.pause(100);
    gate.success();
    gate.success();
    expect(gate.currentRatePerSecond).toBe(5);
    await clock.advance(100);
    gate.success();
    gate.pause(0);
    gate.success();
    expect(gate.currentRatePerSecond).toBe(2.5);
    gate.success();
    expect(gate.currentRatePerSecond).toBe(3.125);
  });

  it("spaces slots at the lowered rate after a pause and speeds up on recovery", async () => {
    const { clock, gate, granted, take } = setup({ ratePerSecond: 10, recoverAfter: 1 });
    gate.pause(0);
    const first = take(2);
    await clock.runAll();
    await first;
    expect(granted).toEqual([0, 200]);
    gate.success(); // 6.25/s -> 160 ms
    const second = take(2);
    await clock.runAll();
    await second;
    expect(granted).toEqual([0, 200, 400, 560]);
  });

  it("rejects every waiting caller when sleep fails, and keeps working afterwards", async () => {
    let t = 0;
    let failing = true;
    const gate = new RateGate({
      ratePerSecond: 1,
      now: () => t,
      sleep: async (ms) => {
        if (failing) throw new Error("sleep failed");
        t += ms;
      },
    });
    await gate.take();
    const results = await Promise.allSettled([gate.take(), gate.take()]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    failing = false;
    await expect(gate.take()).resolves.toBeUndefined();
    expect(t).toBe(1_000);
  });

  it("works with the default clock and timers", async () => {
    const gate = new RateGate({ ratePerSecond: 1_000 });
    await Promise.all([gate.take(), gate.take(), gate.take()]);
    expect(gate.currentRatePerSecond).toBe(1_000);
  });

  it("a waiter whose signal aborts leaves the queue at once; the others keep their order", async () => {
    const { clock, gate, granted } = setup({ ratePerSecond: 10 });
    const order: string[] = [];
    const controller = new AbortController();
    const take = (name: string, signal?: AbortSignal) =>
      gate.take({ signal }).then(() => {
        order.push(name);
        granted.push(clock.t);
      });
    const a = take("a");
    const b = take("b", controller.signal);
    const c = take("c");
    await clock.advance(50);
    controller.abort(new Error("stop"));
    await expect(b).rejects.toThrow("stop");
    await clock.runAll();
    await Promise.all([a, c]);
    expect(order).toEqual(["a", "c"]);
    expect(granted).toEqual([0, 100]);
    await expect(gate.take({ signal: controller.signal })).rejects.toThrow("stop");
  });

  it("priority waiters are served before ordinary ones, in their own order", async () => {
    const { clock, gate } = setup({ ratePerSecond: 10 });
    const order: string[] = [];
    const take = (name: string, priority = false) =>
      gate.take({ priority }).then(() => void order.push(name));
    const all = [take("a"), take("b"), take("c"), take("p1", true), take("p2", true)];
    await clock.runAll();
    await Promise.all(all);
    expect(order).toEqual(["a", "p1", "p2", "b", "c"]);
  });

  it("when the last waiter gives up, the gate's sleep is interrupted (its timer cleared)", async () => {
    const signals: AbortSignal[] = [];
    const gate = new RateGate({
      ratePerSecond: 1,
      now: () => 0,
      sleep: (_ms, signal) => {
        if (signal) signals.push(signal);
        return new Promise(() => undefined);
      },
    });
    await gate.take();
    const controller = new AbortController();
    const waiting = gate.take({ signal: controller.signal });
    await flush();
    expect(signals).toHaveLength(1);
    expect(signals[0]?.aborted).toBe(false);
    controller.abort();
    await expect(waiting).rejects.toBeDefined();
    expect(signals[0]?.aborted).toBe(true);
  });

  it("a caller that comes just after the last one gave up is served at its slot (the pump sleeps again, no spin)", async () => {
    const clock = new FakeClock();
    // like the default sleep: an aborted signal rejects at once (a pump that spun on it would
    // call it without end: after 100 calls it is left waiting, and the caller is never served)
    let refused = 0;
    const sleep = (ms: number, signal?: AbortSignal): Promise<void> => {
      if (!signal?.aborted) return clock.sleep(ms);
      refused++;
      return refused > 100 ? new Promise(() => undefined) : Promise.reject(signal.reason);
    };
    const gate = new RateGate({ ratePerSecond: 1, now: clock.now, sleep });
    await gate.take();
    const controller = new AbortController();
    const leaving = gate.take({ signal: controller.signal });
    await flush();
    controller.abort();
    const granted: number[] = [];
    const next = gate.take().then(() => granted.push(clock.t));
    await expect(leaving).rejects.toBeDefined();
    await clock.advance(999);
    expect(granted).toEqual([]);
    await clock.advance(1);
    expect(granted).toEqual([1000]);
    expect(refused).toBeLessThanOrEqual(1);
    await next;
  });

  it("the default sleep holds no timer beyond 2^31-1 ms: a pause of 1e12 ms gives no TimeoutOverflowWarning", async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const gate = new RateGate({ ratePerSecond: 1_000 });
      gate.pause(1e12);
      const controller = new AbortController();
      const waiting = gate.take({ signal: controller.signal });
      await flush(); // the take is asleep on its pause: its timer is set
      controller.abort();
      await expect(waiting).rejects.toBeDefined();
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.name === "TimeoutOverflowWarning")).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });

  it.each<[string, RateGateOptions]>([
    ["zero rate", { ratePerSecond: 0 }],
    ["negative rate", { ratePerSecond: -1 }],
    ["NaN rate", { ratePerSecond: Number.NaN }],
    ["infinite rate", { ratePerSecond: Number.POSITIVE_INFINITY }],
    ["min above rate", { ratePerSecond: 1, minRatePerSecond: 2 }],
    ["zero min", { ratePerSecond: 1, minRatePerSecond: 0 }],
    ["zero recoverAfter", { ratePerSecond: 1, recoverAfter: 0 }],
    ["fractional recoverAfter", { ratePerSecond: 1, recoverAfter: 1.5 }],
  ])("rejects options: %s", (_name, options) => {
    expect(() => new RateGate(options)).toThrow(RangeError);
  });

  it.each([-1, Number.NaN, Number.POSITIVE_INFINITY])("rejects pause(%p)", (ms) => {
    const { gate } = setup({ ratePerSecond: 1 });
    expect(() => gate.pause(ms)).toThrow(RangeError);
  });

  type Op =
    | { kind: "take"; n: number }
    | { kind: "advance"; ms: number }
    | { kind: "pause"; ms: number }
    | { kind: "success"; n: number };

  const opArb: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant("take" as const), n: fc.integer({ min: 1, max: 5 }) }),
    fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 3_000 }) }),
    fc.record({ kind: fc.constant("pause" as const), ms: fc.integer({ min: 0, max: 5_000 }) }),
    fc.record({ kind: fc.constant("success" as const), n: fc.integer({ min: 1, max: 10 }) }),
  );

  it("property: grants every caller once, never inside a pause, never closer than 1/rate", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.double({ min: 0.5, max: 50, noNaN: true }),
        fc.array(opArb, { maxLength: 25 }),
        async (rate, ops) => {
          const clock = new FakeClock();
          const gate = new RateGate({
            ratePerSecond: rate,
            recoverAfter: 3,
            now: clock.now,
            sleep: clock.sleep,
          });
          const grants: { t: number; rate: number; pausedUntil: number }[] = [];
          const pending: Promise<void>[] = [];
          // the pause as the gate is told it (a longer one is kept), independent of the gate
          let pausedUntil = 0;
          for (const op of ops) {
            if (op.kind === "take") {
              for (let i = 0; i < op.n; i++) {
                pending.push(
                  gate.take().then(() => {
                    grants.push({
                      t: clock.t,
                      rate: gate.currentRatePerSecond,
                      pausedUntil,
                    });
                  }),
                );
              }
              await flush(); // record grants made at once before the next op changes the rate
            } else if (op.kind === "advance") {
              await clock.advance(op.ms);
            } else if (op.kind === "pause") {
              gate.pause(op.ms);
              pausedUntil = Math.max(pausedUntil, clock.t + op.ms);
            } else {
              for (let i = 0; i < op.n; i++) gate.success();
            }
            const r = gate.currentRatePerSecond;
            expect(r).toBeLessThanOrEqual(rate);
            expect(r).toBeGreaterThanOrEqual(rate / 16 - 1e-12);
          }
          await clock.runAll();
          await Promise.all(pending);
          expect(grants).toHaveLength(pending.length);
          grants.forEach((g, i) => {
            expect(g.t).toBeGreaterThanOrEqual(g.pausedUntil - 1e-6);
            const prev = grants[i - 1];
            if (prev) expect(g.t - prev.t).toBeGreaterThanOrEqual(1000 / prev.rate - 1e-6);
          });
        },
      ),
      { numRuns: 100 },
    );
  });
});
