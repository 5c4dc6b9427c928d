import fc from "fast-check";
import { MAX_VALUES_PER_REQUEST, MAX_WINDOW_MS, VALUES_ID } from "../../src/api/limits.js";
import {
  type Chunk,
  countChunks,
  MAX_WINDOW_S,
  planChunks,
  timeWindows,
} from "../../src/pipeline/plan-chunks.js";
import { propertyRuns } from "../support/property-runs.js";

const HOUR = 3600;
const DAY = 86_400;
const WEEK = 7 * DAY;
const FROM = 1_704_067_200; // 2024-01-01T00:00:00Z

const ids = (n: number, prefix = "v"): string[] =>
  Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(3, "0")}`);

/** Checks every invariant of a plan for `valueIds` over `[fromS, toS]`. */
function expectValidPlan(chunks: Chunk[], valueIds: readonly string[], fromS: number, toS: number) {
  const wanted = new Set(valueIds);
  wanted.delete(VALUES_ID);
  const windows = timeWindows(fromS, toS);
  const groups = Math.ceil(wanted.size / MAX_VALUES_PER_REQUEST);
  expect(chunks).toHaveLength(groups * windows.length);
  expect(countChunks(wanted.size, fromS, toS)).toBe(chunks.length);

  chunks.forEach((chunk, i) => {
    expect(chunk.index).toBe(i);
    expect(chunk.values.length).toBeGreaterThan(0);
    expect(chunk.values.length).toBeLessThanOrEqual(MAX_VALUES_PER_REQUEST);
    expect(chunk.toS - chunk.fromS).toBeLessThanOrEqual(MAX_WINDOW_MS / 1000);
    expect(chunk.toS).toBeGreaterThanOrEqual(chunk.fromS);
    expect(chunk.values).not.toContain(VALUES_ID);
    // Window-major order: chunk i belongs to window floor(i / groups).
    const window = windows[Math.floor(i / groups)];
    expect({ fromS: chunk.fromS, toS: chunk.toS }).toEqual(window);
  });

  // Within each window, every wanted value appears in exactly one chunk.
  for (const window of windows) {
    const seen = chunks
      .filter((c) => c.fromS === window.fromS)
      .flatMap((c) => [...c.values])
      .sort();
    expect(seen).toEqual([...wanted].sort());
  }
}

/** Checks that the windows cover [fromS, toS] exactly, in order, with no overlap or gap. */
function expectExactCover(windows: { fromS: number; toS: number }[], fromS: number, toS: number) {
  expect(windows[0]?.fromS).toBe(fromS);
  expect(windows.at(-1)?.toS).toBe(toS);
  windows.forEach((w, k) => {
    expect(w.toS).toBeGreaterThanOrEqual(w.fromS);
    expect(w.toS - w.fromS).toBeLessThanOrEqual(MAX_WINDOW_S);
    const next = windows[k + 1];
    if (next) expect(next.fromS).toBe(w.toS + 1);
  });
}

const valueIdArb = fc.oneof(
  { weight: 1, arbitrary: fc.constant(VALUES_ID) },
  { weight: 9, arbitrary: fc.string({ minLength: 1, maxLength: 6 }) },
);

/** Spans anywhere up to 120 days, or within 2 s of a multiple of 7 days or of 7 days + 1 s. */
const spanArb = fc.oneof(
  fc.integer({ min: 0, max: 120 * DAY }),
  fc
    .tuple(
      fc.integer({ min: 1, max: 20 }),
      fc.constantFrom(WEEK, WEEK + 1),
      fc.integer({ min: -2, max: 2 }),
    )
    .map(([k, unit, delta]) => Math.max(0, k * unit + delta)),
);

const rangeArb = fc
  .tuple(fc.integer({ min: -2_000_000_000, max: 4_000_000_000 }), spanArb)
  .map(([from, span]) => ({ from, to: from + span }));

describe("planChunks", () => {
  it.each<[string, number, number, number, number]>([
    // [case, values, span T (s), expected windows, expected chunks]
    ["1 value, 1 hour", 1, HOUR, 1, 1],
    ["62 values, 90 days", 62, 90 * DAY, 13, 52],
    ["40 values, exactly 7 days", 40, WEEK, 1, 2],
    ["20 values, exactly 7 days", 20, WEEK, 1, 1],
    ["21 values, 1 day", 21, DAY, 1, 2],
    ["1 value, 7 days + 1 s", 1, WEEK + 1, 2, 2],
    ["1 value, 14 days", 1, 2 * WEEK, 2, 2],
    ["1 value, 14 days + 1 s (still 2 inclusive windows)", 1, 2 * WEEK + 1, 2, 2],
    ["1 value, 14 days + 2 s", 1, 2 * WEEK + 2, 3, 3],
    ["1 value, a single instant", 1, 0, 1, 1],
    ["100 values, 365 days", 100, 365 * DAY, 53, 265],
  ])("%s", (_name, valueCount, span, windows, total) => {
    const values = ids(valueCount);
    const chunks = planChunks(values, FROM, FROM + span);
    expect(timeWindows(FROM, FROM + span)).toHaveLength(windows);
    expect(chunks).toHaveLength(total);
    expect(countChunks(valueCount, FROM, FROM + span)).toBe(total);
    expectValidPlan(chunks, values, FROM, FROM + span);
  });

  it("orders chunks by window, then by group", () => {
    const chunks = planChunks(ids(45), FROM, FROM + 10 * DAY);
    expect(chunks.map((c) => [c.index, c.fromS, c.toS, c.values[0], c.values.length])).toEqual([
      [0, FROM, FROM + WEEK, "v000", 20],
      [1, FROM, FROM + WEEK, "v020", 20],
      [2, FROM, FROM + WEEK, "v040", 5],
      [3, FROM + WEEK + 1, FROM + 10 * DAY, "v000", 20],
      [4, FROM + WEEK + 1, FROM + 10 * DAY, "v020", 20],
      [5, FROM + WEEK + 1, FROM + 10 * DAY, "v040", 5],
    ]);
  });

  it("drops values_id, de-duplicates and sorts in plain string order", () => {
    const chunks = planChunks(["b", VALUES_ID, "a", "B", "b", "a10", "a9", VALUES_ID], 0, 10);
    expect(chunks).toEqual([{ index: 0, values: ["B", "a", "a10", "a9", "b"], fromS: 0, toS: 10 }]);
  });

  it.each<[string, string[], number, number]>([
    ["from after to", ["a"], 10, 9],
    ["no values", [], 0, 100],
    ["only values_id", [VALUES_ID, VALUES_ID], 0, 100],
  ])("returns [] for %s", (_name, values, from, to) => {
    expect(planChunks(values, from, to)).toEqual([]);
  });

  // the client does not re-check spec 8's limits: what it used to refuse is never planned
  it.each<[string, string[], number, number]>([
    ["21 values", ids(21), FROM, FROM + HOUR],
    ["7 days and 1 second", ids(1), FROM, FROM + WEEK + 1],
    ["exactly 20 values over exactly 7 days", ids(20), FROM, FROM + WEEK],
    ["to before from", ids(1), FROM, FROM - 1],
    ["no values", [], FROM, FROM + HOUR],
    ["values_id", [VALUES_ID, "v"], FROM, FROM + HOUR],
  ])("plans %s as requests within both limits", (_name, values, from, to) => {
    const chunks = planChunks(values, from, to);
    for (const chunk of chunks) {
      expect(chunk.values.length).toBeGreaterThan(0);
      expect(chunk.values.length).toBeLessThanOrEqual(MAX_VALUES_PER_REQUEST);
      expect(chunk.values).not.toContain(VALUES_ID);
      expect(chunk.toS).toBeGreaterThanOrEqual(chunk.fromS);
      expect((chunk.toS - chunk.fromS) * 1000).toBeLessThanOrEqual(MAX_WINDOW_MS);
    }
    expectValidPlan(chunks, values, from, to);
  });

  it.each([
    [0.5, 10],
    [0, Number.NaN],
    [0, Number.POSITIVE_INFINITY],
  ])("rejects non-integer bounds %p..%p", (from, to) => {
    expect(() => planChunks(["a"], from, to)).toThrow(RangeError);
    expect(() => planChunks(["a"], from, to)).toThrow(
      `fromS and toS must be integer epoch seconds, got ${from}, ${to}`,
    );
    expect(() => timeWindows(from, to)).toThrow(RangeError);
    expect(() => countChunks(1, from, to)).toThrow(RangeError);
  });

  it("rejects a negative or fractional value count", () => {
    expect(() => countChunks(-1, 0, 1)).toThrow(RangeError);
    expect(() => countChunks(1.5, 0, 1)).toThrow(RangeError);
    expect(countChunks(0, 0, 1)).toBe(0);
  });

  it("names the bad value count in its error", () => {
    expect(() => countChunks(-1, 0, 1)).toThrow(
      "valueCount must be a non-negative integer, got -1",
    );
  });

  it("property: every plan stays within the limits and covers every value once per window", () => {
    fc.assert(
      fc.property(fc.array(valueIdArb, { maxLength: 70 }), rangeArb, (values, { from, to }) => {
        expectValidPlan(planChunks(values, from, to), values, from, to);
      }),
      { numRuns: propertyRuns(150) },
    );
  });

  it("property: grouping does not depend on input order or duplicates", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ minLength: 1, maxLength: 6 }), { maxLength: 70 }),
        fc.func(fc.integer()),
        (values, key) => {
          const shuffled = [...values, ...values.slice(0, 5)].sort((a, b) => key(a) - key(b));
          const groups = (vs: string[]) => planChunks(vs, 0, DAY).map((c) => c.values);
          expect(groups(shuffled)).toEqual(groups(values));
        },
      ),
    );
  });

  it("property: countChunks equals planChunks().length", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 200 }),
        fc.integer({ min: -1_000_000, max: 1_000_000 }),
        fc.integer({ min: -DAY, max: 400 * DAY }),
        (n, from, span) => {
          expect(countChunks(n, from, from + span)).toBe(
            planChunks(ids(n), from, from + span).length,
          );
        },
      ),
    );
  });
});

describe("timeWindows", () => {
  it("cuts inclusive windows of at most 7 days", () => {
    expect(timeWindows(0, 2 * WEEK + 5)).toEqual([
      { fromS: 0, toS: WEEK },
      { fromS: WEEK + 1, toS: 2 * WEEK + 1 },
      { fromS: 2 * WEEK + 2, toS: 2 * WEEK + 5 },
    ]);
    expect(timeWindows(5, 5)).toEqual([{ fromS: 5, toS: 5 }]);
    expect(timeWindows(6, 5)).toEqual([]);
  });

  it("property: windows cover [from, to] exactly, with no overlap or gap, in the minimum number", () => {
    fc.assert(
      fc.property(rangeArb, ({ from, to }) => {
        const windows = timeWindows(from, to);
        expectExactCover(windows, from, to);
        // Minimum: each inclusive window holds at most MAX_WINDOW_S + 1 seconds.
        expect(windows).toHaveLength(Math.ceil((to - from + 1) / (MAX_WINDOW_S + 1)));
      }),
      { numRuns: propertyRuns(300) },
    );
  });

  it("property: for whole days the count equals ceil(T / 7 days)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3650 }), (days) => {
        expect(timeWindows(0, days * DAY)).toHaveLength(Math.ceil(days / 7));
      }),
    );
  });
});
