import { describe, expect, it } from "@jest/globals";
import { RateGate } from "../../src/api/rate-gate.js";

/**
 * The rate gate on Node.js's own timers and clock (its defaults), where the fake clock of
 * rate-gate.test.ts cannot reach: no timer overflow, and no timer left for nobody. Nothing waits
 * for real time: every wait is aborted, and timers are counted, not timed.
 */

/** Lets every pending promise callback run. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A take that waits on `gate`, aborted once its timer is set: Node warns of no timer overflow. */
async function abortedWithoutOverflow(gate: RateGate): Promise<void> {
  const warnings: Error[] = [];
  const onWarning = (warning: Error): void => void warnings.push(warning);
  process.on("warning", onWarning);
  try {
    const controller = new AbortController();
    const waiting = gate.take({ signal: controller.signal });
    await flush(); // the take waits: its timer is set
    controller.abort();
    await expect(waiting).rejects.toBeDefined();
    await flush();
    expect(warnings.filter((w) => w.name === "TimeoutOverflowWarning")).toEqual([]);
  } finally {
    process.off("warning", onWarning);
  }
}

describe("RateGate on the real timers", () => {
  it("works with the default clock and timers", async () => {
    const gate = new RateGate({ ratePerSecond: 1_000 });
    await Promise.all([gate.take(), gate.take(), gate.take()]);
    expect(gate.currentRatePerSecond).toBe(1_000);
  });

  it("holds no timer beyond 2^31-1 ms: a pause of 1e12 ms gives no TimeoutOverflowWarning", async () => {
    const gate = new RateGate({ ratePerSecond: 1_000 });
    gate.pause(1e12);
    await abortedWithoutOverflow(gate);
  });

  it("a pause on the default timers that its last waiter leaves holds no timer", async () => {
    const timeouts = (): number =>
      process.getActiveResourcesInfo().filter((kind) => kind === "Timeout").length;
    const before = timeouts();
    const gate = new RateGate({ ratePerSecond: 1_000 });
    gate.pause(60_000);
    const controller = new AbortController();
    const waiting = gate.take({ signal: controller.signal });
    await flush(); // the take waits out the pause: its timer is set
    expect(timeouts()).toBe(before + 1);
    controller.abort();
    await expect(waiting).rejects.toBeDefined();
    await flush();
    expect(timeouts()).toBe(before);
  });

  it("a rate so low its window passes what a timer holds: the window is capped, no overflow", async () => {
    const gate = new RateGate({ ratePerSecond: 1e-9 });
    await gate.take();
    await abortedWithoutOverflow(gate);
  });
});
