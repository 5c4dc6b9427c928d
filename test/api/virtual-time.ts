import { setTimeout as realDelay } from "node:timers/promises";
import { jest } from "@jest/globals";
import type { ApiTelemetry } from "../../src/api/api-request.js";
import { timerSleep, useFakeTime, useRealTime } from "../support/fake-time.js";
import type { ManualClock } from "../support/simulator.js";

/** Lets every pending callback run: a few turns of the event loop (I/O included). */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * Discrete-event virtual time over a {@link ManualClock} and jest's fake timers (which the rate
 * gate's p-queue runs on): {@link run} fires the earliest timer, and moves the clock to it, only
 * while no HTTP attempt is in flight (the client's {@link telemetry} keeps {@link inFlight}). So
 * requests reach the simulator at the virtual time of their slot, and a long wait costs no real
 * time. Made in a test, it fakes the timers from the clock's time on; {@link dispose} (in
 * `finally`) puts the real ones back.
 */
export class VirtualTime {
  /** HTTP attempts sent and not yet reported. */
  inFlight = 0;
  /** Events so far (sends, ends, wake-ups), to tell a hang from a long run. */
  private progress = 0;

  constructor(readonly clock: ManualClock) {
    useFakeTime(clock.nowMs);
  }

  /** A sleep on the virtual clock (a fake timer). */
  readonly sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
    timerSleep(Math.max(0, ms), signal);

  /** For ApiClientOptions.telemetry: counts the attempts in flight. */
  readonly telemetry: ApiTelemetry = {
    attemptSent: () => {
      this.inFlight++;
      this.progress++;
    },
    attemptEnded: () => {
      this.inFlight--;
      this.progress++;
    },
    retried: () => undefined,
  };

  /** The real timers again. */
  dispose(): void {
    useRealTime();
  }

  /**
   * Runs until `work` settles, firing timers in time order whenever nothing is in flight.
   * Fails when nothing happens for `stallMs` of real time (a hang, not a slow run).
   */
  async run<T>(work: Promise<T>, stallMs = 20_000): Promise<T> {
    let done = false;
    work.then(
      () => {
        done = true;
      },
      () => {
        done = true;
      },
    );
    let idleSince = performance.now();
    let seen = this.progress;
    while (!done) {
      await settle();
      if (done) break;
      if (this.progress !== seen) {
        seen = this.progress;
        idleSince = performance.now();
      }
      if (this.inFlight > 0 || jest.getTimerCount() === 0) {
        if (performance.now() - idleSince > stallMs)
          throw new Error("virtual time: nothing happens");
        await realDelay(1);
        continue;
      }
      this.progress++;
      jest.advanceTimersToNextTimer();
      this.clock.nowMs = Math.max(this.clock.nowMs, jest.now());
    }
    return work;
  }
}
