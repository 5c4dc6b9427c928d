/**
 * A target's way through its hours in a recompute (src/rollups/lane.ts), pure: what it asks
 * InfluxDB about, span by span, and which points it writes, given what InfluxDB answers (facts
 * built by hand here).
 */
import type { HourPoint, HourSpan, SpanFacts } from "../../src/rollups/hour-increases.js";
import { lanesOf } from "../../src/rollups/lane.js";
import type { RollupTarget, SeriesTags } from "../../src/rollups/series.js";

const H = 3600;
const T0 = Date.UTC(2026, 5, 1) / 1000;
const target: RollupTarget = {
  deviceId: "d",
  resourceId: "r",
  counters: [{ measurement: "e", unit: "kWh", type: "cumulative" }],
};
const A: SeriesTags = { measurement: "e", valuesId: "001", unit: "kWh", type: "cumulative" };
const B: SeriesTags = { measurement: "e", valuesId: "002", unit: "kWh", type: "cumulative" };
const key = (t: SeriesTags) => JSON.stringify([t.measurement, t.valuesId, t.unit, t.type]);

/** Facts of a span: each series' next reading after it, and the points stored over it. */
function facts(
  next: [SeriesTags, number][] = [],
  stored: [SeriesTags, number, { increase: number; base: number }][] = [],
  hours = 1,
): SpanFacts {
  const f: SpanFacts = { before: new Map(), hours: new Map(), stored: new Map(), next: new Map() };
  for (const [t, s] of next) f.next.set(key(t), s);
  for (const [t, s, point] of stored) {
    const points = f.stored.get(key(t)) ?? new Map();
    points.set(s, point);
    f.stored.set(key(t), points);
  }
  if (hours > 0) f.hours.set(key(A), { tags: A, hours: new Map() });
  return f;
}

const point = (series: SeriesTags, startS: number, increase: number, base: number): HourPoint => ({
  series,
  startS,
  increase,
  base,
});

/** The span's shape: where it starts and ends (in hours after T0) and what it asks. */
const shape = (span: HourSpan | undefined) =>
  span && {
    from: (span.fromS - T0) / H,
    to: (span.toS - T0) / H,
    lookup: span.lookup,
    next: span.next,
    stored: span.stored,
  };

describe("Lane", () => {
  it("a range alone, nothing after it: one span that looks its bases up; then through", () => {
    const [lane] = lanesOf([{ target, fromS: T0 + 60, toS: T0 + 2 * H + 5, written: true }]);
    if (lane === undefined) throw new Error("no lane");
    const span = lane.nextSpan();
    expect(shape(span)).toEqual({ from: 0, to: 3, lookup: true, next: true, stored: false });
    if (span === undefined) throw new Error("no span");
    const points = [point(A, T0, 1, 10)];
    expect(lane.afterSpan(span, facts(), points)).toEqual(points);
    expect(lane.nextSpan()).toBeUndefined();
    expect(lane.hours).toEqual([{ fromS: T0, toS: T0 + 3 * H }]);
  });

  it("series that read on: the first hour of the next reading; a series whose hour equals the stored one is through, another goes on, only its points written", () => {
    const [lane] = lanesOf([{ target, fromS: T0, toS: T0 + H - 1 }]);
    if (lane === undefined) throw new Error("no lane");
    const first = lane.nextSpan();
    if (first === undefined) throw new Error("no span");
    lane.afterSpan(
      first,
      facts([
        [A, T0 + 5 * H + 120],
        [B, T0 + 7 * H],
      ]),
      [],
    );
    const ext = lane.nextSpan();
    expect(shape(ext)).toEqual({ from: 5, to: 6, lookup: false, next: true, stored: true });
    if (ext === undefined) throw new Error("no span");
    // A's hour 5 comes out as stored: A is through; B reads on at hour 7
    const a5 = point(A, T0 + 5 * H, 2, 40);
    const written = lane.afterSpan(
      ext,
      facts(
        [
          [A, T0 + 5 * H + 720],
          [B, T0 + 7 * H],
        ],
        [[A, T0 + 5 * H, { increase: 2, base: 40 }]],
      ),
      [a5],
    );
    expect(written).toEqual([a5]);
    const ext2 = lane.nextSpan();
    // 8 hours from B's next reading
    expect(shape(ext2)).toEqual({ from: 7, to: 15, lookup: false, next: true, stored: true });
    if (ext2 === undefined) throw new Error("no span");
    const b7 = point(B, T0 + 7 * H, 3, 70);
    const a7 = point(A, T0 + 7 * H, 1, 41);
    // only B (still pending) is written: A's base in memory may be stale past hour 5
    expect(lane.afterSpan(ext2, facts([]), [a7, b7])).toEqual([b7]);
    expect(lane.nextSpan()).toBeUndefined();
  });

  it("a series whose stored hour differs goes on until one equals it", () => {
    const { lane, ext } = afterFirstHour();
    const a1 = point(A, T0 + H, 5, 50);
    lane.afterSpan(ext, facts([[A, T0 + 2 * H]], [[A, T0 + H, { increase: 0, base: 50 }]]), [a1]);
    expect(shape(lane.nextSpan())).toEqual({
      from: 2,
      to: 10,
      lookup: false,
      next: true,
      stored: true,
    });
  });

  it("the next range starts before the series' next reading: no extension, the range reads the bases", () => {
    const [lane] = lanesOf([
      { target, fromS: T0, toS: T0 + H - 1 },
      { target, fromS: T0 + 4 * H, toS: T0 + 5 * H - 1 },
    ]);
    if (lane === undefined) throw new Error("no lane");
    const first = lane.nextSpan();
    if (first === undefined) throw new Error("no span");
    lane.afterSpan(first, facts([[A, T0 + 4 * H + 60]]), []);
    expect(shape(lane.nextSpan())).toEqual({
      from: 4,
      to: 5,
      lookup: true,
      next: true,
      stored: false,
    });
  });

  it("an extension stops where the next range begins", () => {
    const [lane] = lanesOf([
      { target, fromS: T0, toS: T0 + H - 1 },
      { target, fromS: T0 + 4 * H, toS: T0 + 5 * H - 1 },
    ]);
    if (lane === undefined) throw new Error("no lane");
    const first = lane.nextSpan();
    if (first === undefined) throw new Error("no span");
    lane.afterSpan(first, facts([[A, T0 + 2 * H]]), []);
    const ext = lane.nextSpan();
    if (ext === undefined) throw new Error("no span");
    // hour 2 comes out other than stored: A goes on
    lane.afterSpan(ext, facts([[A, T0 + 3 * H]], [[A, T0 + 2 * H, { increase: 0, base: 1 }]]), [
      point(A, T0 + 2 * H, 1, 1),
    ]);
    // 8 hours asked for, 1 left before the next range
    expect(shape(lane.nextSpan())).toMatchObject({ from: 3, to: 4, stored: true });
  });

  it("an hour after a range with no point stored (written meanwhile, its own mark recomputes it): through", () => {
    const { lane, ext } = afterFirstHour();
    const a1 = point(A, T0 + H, 5, 50);
    expect(lane.afterSpan(ext, facts([[A, T0 + 2 * H]]), [a1])).toEqual([a1]);
    expect(lane.nextSpan()).toBeUndefined();
  });

  it("a range energy-etl wrote that InfluxDB answers empty is noted as unread; one it did not write is not", () => {
    const lanes = lanesOf([
      { target, fromS: T0, toS: T0 + H - 1, written: true },
      { target: { ...target, deviceId: "e" }, fromS: T0, toS: T0 + H - 1 },
    ]);
    for (const lane of lanes) {
      const span = lane.nextSpan();
      if (span === undefined) throw new Error("no span");
      lane.afterSpan(span, facts([], [], 0), []);
    }
    expect(lanes.map((l) => l.unread)).toEqual([[{ fromS: T0, toS: T0 + H }], []]);
  });

  it("ranges an hour apart or less are read as one; a target without counters has no lane", () => {
    const lanes = lanesOf([
      { target, fromS: T0, toS: T0 + H - 1 },
      { target, fromS: T0 + 2 * H, toS: T0 + 3 * H - 1 },
      { target, fromS: T0 + 5 * H, toS: T0 + 6 * H - 1 },
      { target: { ...target, deviceId: "none", counters: [] }, fromS: T0, toS: T0 + H },
    ]);
    expect(lanes).toHaveLength(1);
    const spans = [];
    for (let span = lanes[0]?.nextSpan(); span; span = lanes[0]?.nextSpan()) {
      spans.push(shape(span));
      lanes[0]?.afterSpan(span, facts(), []);
    }
    expect(spans.map((s) => [s?.from, s?.to])).toEqual([
      [0, 3],
      [5, 6],
    ]);
  });

  it("a range longer than a week goes in spans of a week: the first looks the bases up, the last asks for the next readings, each span's points are written", () => {
    const WEEK = 7 * 24;
    const [lane] = lanesOf([{ target, fromS: T0, toS: T0 + (WEEK + 31) * H + 5, written: true }]);
    if (lane === undefined) throw new Error("no lane");
    const first = lane.nextSpan();
    expect(shape(first)).toEqual({ from: 0, to: WEEK, lookup: true, next: false, stored: false });
    if (first === undefined) throw new Error("no span");
    const p1 = [point(A, T0, 1, 10)];
    expect(lane.afterSpan(first, facts(), p1)).toEqual(p1);
    const second = lane.nextSpan();
    expect(shape(second)).toEqual({
      from: WEEK,
      to: WEEK + 32,
      lookup: false,
      next: true,
      stored: false,
    });
    if (second === undefined) throw new Error("no span");
    const p2 = [point(A, T0 + WEEK * H, 2, 12)];
    // no reading in the second week: the range answered readings in its first, so none is unread
    expect(lane.afterSpan(second, facts([], [], 0), p2)).toEqual(p2);
    expect(lane.nextSpan()).toBeUndefined();
    expect(lane.hours).toEqual([
      { fromS: T0, toS: T0 + WEEK * H },
      { fromS: T0 + WEEK * H, toS: T0 + (WEEK + 32) * H },
    ]);
    expect(lane.unread).toEqual([]);
  });

  it("an hour after a range with the stored increase but another base is not as stored: the series goes on", () => {
    expect(goesOn({ increase: 5, base: 49 }, point(A, T0 + H, 5, 50))).toBe(true);
    expect(goesOn({ increase: 5, base: 50 }, point(A, T0 + H, 5, 50))).toBe(false);
  });

  it("an increase as stored but for the order of its float additions is as stored; a real difference is not", () => {
    const adds = [1234.5678, 0.1, 0.2, 987654.321];
    const forwards = adds.reduce((sum, x) => sum + x, 0);
    const backwards = adds.reduceRight((sum, x) => sum + x, 0);
    expect(forwards).not.toBe(backwards);
    expect(goesOn({ increase: forwards, base: 9 }, point(A, T0 + H, backwards, 9))).toBe(false);
    // one part in 1e12, and 1e-12 for an increase under 1, is float noise; more is a difference
    expect(goesOn({ increase: 0, base: 9 }, point(A, T0 + H, 1e-12, 9))).toBe(false);
    expect(goesOn({ increase: 0, base: 9 }, point(A, T0 + H, 1e-11, 9))).toBe(true);
    expect(goesOn({ increase: 1e6, base: 9 }, point(A, T0 + H, 1e6 + 1e-3, 9))).toBe(true);
  });

  it("ranges given out of time order are read in time order, merged where an hour apart or less", () => {
    const [lane] = lanesOf([
      { target, fromS: T0 + 5 * H, toS: T0 + 6 * H - 1 },
      { target, fromS: T0 + 2 * H, toS: T0 + 3 * H - 1 },
      { target, fromS: T0 + 9 * H, toS: T0 + 10 * H - 1 },
      { target, fromS: T0, toS: T0 + H - 1 },
    ]);
    if (lane === undefined) throw new Error("no lane");
    const spans = [];
    for (let span = lane.nextSpan(); span; span = lane.nextSpan()) {
      spans.push([(span.fromS - T0) / H, (span.toS - T0) / H]);
      lane.afterSpan(span, facts(), []);
    }
    expect(spans).toEqual([
      [0, 3],
      [5, 6],
      [9, 10],
    ]);
  });

  it("merged ranges are written if one of them was (InfluxDB answering none is then unread), else not", () => {
    const other = { ...target, deviceId: "e" };
    const lanes = lanesOf([
      { target, fromS: T0, toS: T0 + H - 1 },
      { target, fromS: T0 + H, toS: T0 + 2 * H - 1, written: true },
      { target: other, fromS: T0, toS: T0 + H - 1 },
      { target: other, fromS: T0 + H, toS: T0 + 2 * H - 1 },
    ]);
    for (const lane of lanes) {
      const span = lane.nextSpan();
      if (span === undefined) throw new Error("no span");
      lane.afterSpan(span, facts([], [], 0), []);
      expect(lane.nextSpan()).toBeUndefined();
    }
    expect(lanes.map((l) => l.unread)).toEqual([[{ fromS: T0, toS: T0 + 2 * H }], []]);
  });
});

/**
 * After a one-hour range, series A's next hour (hour 1, A reading on at hour 2) recomputed as
 * `recomputed` with `stored` stored: whether A goes on (another extension span) or is through.
 */
function goesOn(stored: { increase: number; base: number }, recomputed: HourPoint): boolean {
  const { lane, ext } = afterFirstHour();
  expect(shape(ext)).toEqual({ from: 1, to: 2, lookup: false, next: true, stored: true });
  const written = lane.afterSpan(ext, facts([[A, T0 + 2 * H]], [[A, T0 + H, stored]]), [
    recomputed,
  ]);
  expect(written).toEqual([recomputed]);
  return lane.nextSpan() !== undefined;
}

/** A lane over a one-hour range whose first span read A on at hour 1, and its extension span. */
function afterFirstHour() {
  const [lane] = lanesOf([{ target, fromS: T0, toS: T0 + H - 1 }]);
  if (lane === undefined) throw new Error("no lane");
  const first = lane.nextSpan();
  if (first === undefined) throw new Error("no span");
  lane.afterSpan(first, facts([[A, T0 + H]]), []);
  const ext = lane.nextSpan();
  if (ext === undefined) throw new Error("no span");
  return { lane, ext };
}
