/**
 * The answer budget's rules (src/pipeline/answer-budget.ts), one reservation at a time: room is
 * granted first come first served, a reservation larger than the budget runs alone (never a
 * deadlock), what a reservation holds follows its answer, and every way a chunk ends gives its
 * bytes back (done, failed, aborted while it waited).
 */
import {
  AnswerBudget,
  claimFor,
  estimateJsonBytes,
  heldEstimate,
  type Reservation,
  workingBytes,
} from "../../src/pipeline/answer-budget.js";

/** Lets every settled promise run its callbacks (one turn of the event loop, no clock). */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Reserves `bytes` under `name`, noting the name in `granted` once it is granted. */
function reserveNoted(
  budget: AnswerBudget,
  granted: string[],
  name: string,
  bytes: number,
  signal?: AbortSignal,
): Promise<Reservation> {
  return budget.reserve(bytes, signal).then((reservation) => {
    granted.push(name);
    return reservation;
  });
}

describe("AnswerBudget", () => {
  it("grants at once while the bytes fit, then makes the next wait until room is given back", async () => {
    const budget = new AnswerBudget(100);
    const granted: string[] = [];
    const a = reserveNoted(budget, granted, "a", 60);
    const b = reserveNoted(budget, granted, "b", 40);
    const c = reserveNoted(budget, granted, "c", 10);
    await turn();
    expect(granted).toEqual(["a", "b"]);
    expect(budget.held).toBe(100);
    expect(budget.waiting).toBe(1);
    (await a).release();
    await turn();
    expect(granted).toEqual(["a", "b", "c"]);
    expect(budget.held).toBe(50);
    (await b).release();
    (await c).release();
    expect(budget.held).toBe(0);
    expect(budget.peak).toBe(100);
  });

  it("serves waiters in order: a small one does not overtake a large one that waits", async () => {
    const budget = new AnswerBudget(100);
    const granted: string[] = [];
    const first = await reserveNoted(budget, granted, "first", 70);
    const large = reserveNoted(budget, granted, "large", 60);
    const small = reserveNoted(budget, granted, "small", 10);
    await turn();
    // 10 bytes would fit beside the first, but the large one came before
    expect(granted).toEqual(["first"]);
    expect(budget.waiting).toBe(2);
    first.release();
    await turn();
    expect(granted).toEqual(["first", "large", "small"]);
    expect(budget.held).toBe(70);
    (await large).release();
    (await small).release();
    expect(budget.held).toBe(0);
  });

  it("runs a reservation larger than the whole budget alone, once nothing else is held", async () => {
    const budget = new AnswerBudget(100);
    const granted: string[] = [];
    const before = await reserveNoted(budget, granted, "before", 30);
    const huge = reserveNoted(budget, granted, "huge", 250);
    const after = reserveNoted(budget, granted, "after", 10);
    await turn();
    expect(granted).toEqual(["before"]);
    before.release();
    await turn();
    // alone: the one behind it waits although 10 bytes are few
    expect(granted).toEqual(["before", "huge"]);
    expect(budget.held).toBe(250);
    expect(budget.waiting).toBe(1);
    (await huge).release();
    await turn();
    expect(granted).toEqual(["before", "huge", "after"]);
    (await after).release();
    expect(budget.peak).toBe(250);
    expect(budget.held).toBe(0);
  });

  it("grants a reservation larger than the budget at once when the budget is idle", async () => {
    const budget = new AnswerBudget(100);
    const huge = await budget.reserve(1000);
    expect(budget.held).toBe(1000);
    huge.release();
    expect(budget.held).toBe(0);
  });

  it("follows a reservation's resizing: growth makes others wait, shrinking lets them in", async () => {
    const budget = new AnswerBudget(100);
    const granted: string[] = [];
    const a = await reserveNoted(budget, granted, "a", 40);
    // the answer came larger than its estimate: held already, so it never waits
    a.resize(90);
    expect(a.bytes).toBe(90);
    expect(budget.held).toBe(90);
    const b = reserveNoted(budget, granted, "b", 30);
    await turn();
    expect(granted).toEqual(["a"]);
    a.resize(50);
    await turn();
    expect(granted).toEqual(["a", "b"]);
    expect(budget.held).toBe(80);
    expect(budget.peak).toBe(90);
    a.release();
    (await b).release();
    expect(budget.held).toBe(0);
  });

  it("gives the bytes back once however often release is called, and ignores a resize after it", async () => {
    const budget = new AnswerBudget(100);
    const a = await budget.reserve(60);
    const b = await budget.reserve(40);
    a.release();
    a.release();
    a.resize(80);
    expect(budget.held).toBe(40);
    b.release();
    expect(budget.held).toBe(0);
  });

  it("releases a reservation whose work failed (a finally), and the next waiter gets its room", async () => {
    const budget = new AnswerBudget(100);
    const granted: string[] = [];
    const work = async () => {
      const reservation = await reserveNoted(budget, granted, "failing", 100);
      try {
        throw new Error("the write failed");
      } finally {
        reservation.release();
      }
    };
    const failing = work();
    const next = reserveNoted(budget, granted, "next", 100);
    await expect(failing).rejects.toThrow("the write failed");
    await turn();
    expect(granted).toEqual(["failing", "next"]);
    (await next).release();
    expect(budget.held).toBe(0);
  });

  it("ends an aborted wait with the signal's reason, holding nothing, and lets the next one in", async () => {
    const budget = new AnswerBudget(100);
    const granted: string[] = [];
    const held = await reserveNoted(budget, granted, "held", 50);
    const controller = new AbortController();
    const aborted = reserveNoted(budget, granted, "aborted", 80, controller.signal);
    const small = reserveNoted(budget, granted, "small", 50);
    await turn();
    expect(budget.waiting).toBe(2);
    controller.abort(new Error("shutting down"));
    await expect(aborted).rejects.toThrow("shutting down");
    await turn();
    // the aborted one blocked the queue's head; the small one fits beside the held one
    expect(granted).toEqual(["held", "small"]);
    expect(budget.waiting).toBe(0);
    expect(budget.held).toBe(100);
    held.release();
    (await small).release();
    expect(budget.held).toBe(0);
  });

  it("refuses a wait whose signal was aborted before, and an abort after the grant changes nothing", async () => {
    const budget = new AnswerBudget(100);
    const controller = new AbortController();
    const granted = await budget.reserve(30, controller.signal);
    controller.abort(new Error("too late"));
    expect(budget.held).toBe(30);
    await expect(budget.reserve(10, controller.signal)).rejects.toThrow("too late");
    expect(budget.waiting).toBe(0);
    granted.release();
    expect(budget.held).toBe(0);
  });

  it("refuses a budget that is not a positive whole number of bytes", () => {
    expect(() => new AnswerBudget(0)).toThrow(RangeError);
    expect(() => new AnswerBudget(1.5)).toThrow(RangeError);
  });
});

describe("a chunk's claim on the budget", () => {
  const DAY_S = 86_400;
  const KIB = 1024;
  const week = { values: Array.from({ length: 20 }, (_, i) => `v${i}`), fromS: 0, toS: 7 * DAY_S };
  /** A 7-day answer of 20 values at a minute: 10,081 records of 64 + 36 x 20 bytes. */
  const weekJson = 10_081 * (64 + 36 * 20);

  it("estimates an answer's bytes from its values and a record a minute in its window", () => {
    expect(estimateJsonBytes(week)).toBe(weekJson);
    expect(estimateJsonBytes({ values: ["a"], fromS: 0, toS: 60 })).toBe(2 * (64 + 36));
  });

  it("holds the first 240 KiB of a body as they came and the rest at least 8-fold smaller", () => {
    expect(heldEstimate(1000)).toBe(1000);
    expect(heldEstimate(240 * KIB + 800)).toBe(240 * KIB + 100);
  });

  it("adds three batches (line buffer, batch, request body) and an inflated block to transcode", () => {
    // 5,000 lines of 128 bytes; a body beyond 240 KiB is inflated a block of 120 KiB at a time
    expect(workingBytes(weekJson, 5000)).toBe(3 * 5000 * 128 + 120 * KIB);
    // a small answer's lines are no more than twice its JSON
    expect(workingBytes(1000, 5000)).toBe(3 * 2000);
  });

  it("waits for its estimate, keeps it while the answer arrives, then holds what the answer holds", async () => {
    const budget = new AnswerBudget(64 * 2 ** 20);
    const estimate = heldEstimate(weekJson) + workingBytes(weekJson, 5000);
    const claim = await claimFor(budget, week, 5000, new AbortController().signal);
    expect(budget.held).toBe(estimate);
    // the first pieces: below the estimate, which stays (more is to come)
    claim.onHeld({ bytes: 64 * KIB, heldBytes: 64 * KIB });
    expect(budget.held).toBe(estimate);
    // more than estimated arrived (a device with 5 rows a minute)
    claim.onHeld({ bytes: 38_000_000, heldBytes: 1_500_000 });
    const big = 1_500_000 + 3 * 5000 * 128 + 120 * KIB;
    expect(big).toBeGreaterThan(estimate);
    expect(budget.held).toBe(big);
    // the answer of a retried attempt came whole, smaller
    claim.onHeld({ bytes: 100 * KIB, heldBytes: 100 * KIB });
    claim.whole();
    expect(budget.held).toBe(100 * KIB + 3 * 2 * 100 * KIB);
    claim.release();
    expect(budget.held).toBe(0);
    expect(budget.peak).toBe(big);
  });
});
