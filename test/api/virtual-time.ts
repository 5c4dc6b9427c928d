import type { ApiTelemetry } from "../../src/api/api-request.js";
import type { ManualClock } from "../support/simulator.js";

/** Lets every pending callback run: a few turns of the event loop (I/O included). */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * Discrete-event virtual time over a {@link ManualClock}: `sleep` registers a wake-up, and
 * {@link run} moves the clock to the earliest one only while no HTTP attempt is in flight (the
 * client's {@link telemetry} keeps {@link inFlight}). So requests reach the simulator at
 * the virtual time of their slot, and a long wait costs no real time.
 */
export class VirtualTime {
  /** HTTP attempts sent and not yet reported. */
  inFlight = 0;
  /** Events so far (sends, ends, wake-ups), to tell a hang from a long run. */
  private progress = 0;
  private readonly timers: { at: number; seq: number; wake: () => void }[] = [];
  private seq = 0;

  constructor(readonly clock: ManualClock) {}

  /** A sleep on the virtual clock. */
  readonly sleep = (ms: number): Promise<void> =>
    new Promise<void>((wake) => {
      this.timers.push({ at: this.clock.nowMs + Math.max(0, ms), seq: this.seq++, wake });
    });

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

  /**
   * Runs until `work` settles, firing wake-ups in time order whenever nothing is in flight.
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
    let idleSince = Date.now();
    let seen = this.progress;
    while (!done) {
      await settle();
      if (done) break;
      if (this.progress !== seen) {
        seen = this.progress;
        idleSince = Date.now();
      }
      if (this.inFlight > 0 || this.timers.length === 0) {
        if (Date.now() - idleSince > stallMs) throw new Error("virtual time: nothing happens");
        await new Promise<void>((resolve) => setTimeout(resolve, 1));
        continue;
      }
      this.progress++;
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers.shift();
      if (next === undefined) continue;
      this.clock.nowMs = Math.max(this.clock.nowMs, next.at);
      next.wake();
    }
    return work;
  }
}
