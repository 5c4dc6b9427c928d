import type { HeldSize } from "../api/data-stream.js";
import { BLOCK_BYTES } from "../api/held-body.js";

/** Bytes one chunk holds now: resized as its answer arrives, released once. */
export interface Reservation {
  /** The bytes it holds of the budget now. */
  readonly bytes: number;
  /** Holds `bytes` now instead (never waits: what arrived is held already). */
  resize(bytes: number): void;
  /** Gives its bytes back (again: nothing). */
  release(): void;
}

interface Waiter {
  readonly bytes: number;
  grant(reservation: Reservation): void;
}

/**
 * One byte budget (API_ANSWER_BUDGET_MB) for the answers held at once: a chunk reserves its
 * estimate before its request, first come first served, and holds what it holds until its write
 * settled. A reservation over the whole budget is granted when nothing else is held. No timers.
 */
export class AnswerBudget {
  /** Bytes reserved now (may exceed the limit: an answer larger than its estimate, or alone). */
  held = 0;
  /** The most bytes reserved at once (a high-water mark, for metrics and tests). */
  peak = 0;
  private readonly queue: Waiter[] = [];

  constructor(readonly limitBytes: number) {
    if (!Number.isSafeInteger(limitBytes) || limitBytes < 1) {
      throw new RangeError(`limitBytes must be a positive integer, got ${limitBytes}`);
    }
  }

  get waiting(): number {
    return this.queue.length;
  }

  /**
   * Resolves with a reservation of `bytes` once they fit (after every earlier waiter), or at once
   * when nothing is held if they exceed the whole budget. `signal` ends the wait: it rejects with
   * the signal's reason and holds nothing.
   */
  reserve(bytes: number, signal?: AbortSignal): Promise<Reservation> {
    const wanted = Math.max(0, Math.ceil(bytes));
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.queue.length === 0 && this.fits(wanted)) return Promise.resolve(this.take(wanted));
    return new Promise<Reservation>((resolve, reject) => {
      const onAbort = () => {
        const at = this.queue.indexOf(waiter);
        if (at === -1) return;
        this.queue.splice(at, 1);
        reject(signal?.reason);
        // the next waiter may fit now that the first one left
        this.grant();
      };
      const waiter: Waiter = {
        bytes: wanted,
        grant: (reservation) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(reservation);
        },
      };
      this.queue.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  private fits(bytes: number): boolean {
    return this.held === 0 || this.held + bytes <= this.limitBytes;
  }

  private take(bytes: number): Reservation {
    let own = 0;
    let released = false;
    const set = (to: number) => {
      const next = Math.max(0, Math.ceil(to));
      this.held += next - own;
      own = next;
      this.peak = Math.max(this.peak, this.held);
    };
    set(bytes);
    return {
      get bytes() {
        return own;
      },
      resize: (to) => {
        if (released) return;
        const shrinks = to < own;
        set(to);
        if (shrinks) this.grant();
      },
      release: () => {
        if (released) return;
        set(0);
        released = true;
        this.grant();
      },
    };
  }

  /** Grants waiters in order while the first one fits. */
  private grant(): void {
    for (let first = this.queue[0]; first && this.fits(first.bytes); first = this.queue[0]) {
      this.queue.shift();
      first.grant(this.take(first.bytes));
    }
  }
}

/**
 * JSON bytes of a GET /data record: its timestamp and `values_id`, and each value's member
 * (measured on the simulator's answers: 69 bytes with one value, 204 with 5, 746-760 with 20).
 */
const RECORD_BYTES = 64;
const VALUE_BYTES = 36;
/** Line protocol bytes of a point (the simulator's answers: 123-128). */
const LINE_BYTES = 128;
/** Deflating a block saves at least this much (level 1; the simulator's answers: 19-53 fold). */
const DEFLATE_FOLD = 8;

/** The bytes of a chunk's answer before it came: a record a minute (the finest fleets send). */
export function estimateJsonBytes(chunk: {
  readonly values: readonly unknown[];
  readonly fromS: number;
  readonly toS: number;
}): number {
  const records = Math.floor((chunk.toS - chunk.fromS) / 60) + 1;
  return records * (RECORD_BYTES + VALUE_BYTES * chunk.values.length);
}

/** What a body of `jsonBytes` holds: its first block as it came, one gathered, the rest deflated. */
export function heldEstimate(jsonBytes: number): number {
  const raw = Math.min(jsonBytes, 2 * BLOCK_BYTES);
  return raw + Math.ceil((jsonBytes - raw) / DEFLATE_FOLD);
}

/**
 * What a chunk holds besides its body while it is transcoded and written: a block inflated, the
 * transcoder's line buffer, the batch being written and its request body (measured: a batch of
 * 5,000 lines is 610-640 KB), no more than an answer of `jsonBytes` makes.
 */
export function workingBytes(jsonBytes: number, batchLines: number): number {
  const batch = Math.min(batchLines * LINE_BYTES, 2 * jsonBytes);
  return 3 * batch + (jsonBytes > 2 * BLOCK_BYTES ? BLOCK_BYTES : 0);
}

/** The budget a chunk takes: reserved before its request, following its answer as it arrives. */
export interface ChunkClaim {
  /** Told the answer's body as each piece arrives (DataCallOptions.onHeld). */
  readonly onHeld: (body: HeldSize) => void;
  /** The answer came whole: the reservation becomes what it holds. */
  whole(): void;
  /** The chunk's write settled (or failed, or was cut): its bytes are given back. */
  release(): void;
}

/** Waits until the budget has room for what `chunk` is estimated to hold (or `signal`); its claim. */
export async function claimFor(
  budget: AnswerBudget,
  chunk: Parameters<typeof estimateJsonBytes>[0],
  batchLines: number,
  signal: AbortSignal,
): Promise<ChunkClaim> {
  const json = estimateJsonBytes(chunk);
  const estimate = heldEstimate(json) + workingBytes(json, batchLines);
  const reservation = await budget.reserve(estimate, signal);
  let holds = 0;
  return {
    onHeld: (body) => {
      holds = body.heldBytes + workingBytes(body.bytes, batchLines);
      // while it arrives the estimate stays the floor: more is to come
      reservation.resize(Math.max(estimate, holds));
    },
    whole: () => reservation.resize(holds),
    release: () => reservation.release(),
  };
}
