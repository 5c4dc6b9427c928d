import { afterCommit } from "../../src/pipeline/cursor.js";
import type { WindowCommit } from "../../src/state/cursor-store.js";
import type { Cursor } from "../../src/state/types.js";
import { commitWindow } from "../support/cursors.js";
import { T0, T1, T2, T3, useStateStore } from "./support.js";

const ctx = useStateStore("energy-etl-cursors-");

const DEV = "dev-1";
const RES = "inverter";

describe("begin", () => {
  it("creates the cursor: fetched until startedS - 1, no record, no failures", () => {
    const { cursors } = ctx.store;
    expect(cursors.get(DEV, RES)).toBeUndefined();
    const cursor = cursors.begin(DEV, RES, 1000, T0);
    expect(cursor).toEqual({
      deviceId: DEV,
      resourceId: RES,
      fetchedUntilS: 999,
      startedS: 1000,
      failures: 0,
      updatedAt: T0.toISOString(),
    });
    expect(cursors.get(DEV, RES)).toEqual(cursor);
  });

  it("is idempotent: an existing cursor is returned unchanged", () => {
    const { cursors } = ctx.store;
    cursors.begin(DEV, RES, 1000, T0);
    const committed = commitWindow(
      cursors,
      DEV,
      RES,
      { fetchedUntilS: 5000, newestRecordS: 4000 },
      T1,
    );
    expect(cursors.begin(DEV, RES, 1000, T2)).toEqual(committed);
    expect(cursors.begin(DEV, RES, 9000, T2)).toEqual(committed);
    expect(cursors.list()).toHaveLength(1);
  });

  it.each([
    ["startedS 0", DEV, RES, 0],
    ["a negative startedS", DEV, RES, -5],
    ["a fractional startedS", DEV, RES, 1.5],
    ["an empty device id", "", RES, 1000],
    ["an empty resource id", DEV, "", 1000],
  ])("rejects %s", (_what, deviceId, resourceId, startedS) => {
    expect(() => ctx.store.cursors.begin(deviceId, resourceId, startedS, T0)).toThrow(RangeError);
    expect(ctx.store.cursors.list()).toEqual([]);
  });
});

it("cursors are kept per device and resource, listed in order", () => {
  const { cursors } = ctx.store;
  cursors.begin("dev-2", "meter", 5, T0);
  cursors.begin("dev-1", "meter", 6, T0);
  cursors.begin("dev-1", "inverter", 7, T0);
  expect(cursors.list().map((c) => [c.deviceId, c.resourceId, c.startedS])).toEqual([
    ["dev-1", "inverter", 7],
    ["dev-1", "meter", 6],
    ["dev-2", "meter", 5],
  ]);
  expect(cursors.get("dev-2", "inverter")).toBeUndefined();
});

describe("commit", () => {
  beforeEach(() => {
    ctx.store.cursors.begin(DEV, RES, 1000, T0);
  });

  it("a first commit sets both positions", () => {
    expect(
      commitWindow(ctx.store.cursors, DEV, RES, { fetchedUntilS: 2000, newestRecordS: 1900 }, T1),
    ).toEqual({
      deviceId: DEV,
      resourceId: RES,
      newestRecordS: 1900,
      fetchedUntilS: 2000,
      startedS: 1000,
      failures: 0,
      updatedAt: T1.toISOString(),
    });
  });

  it("a commit without records moves fetched_until only", () => {
    const cursor = commitWindow(ctx.store.cursors, DEV, RES, { fetchedUntilS: 2000 }, T1);
    expect(cursor.fetchedUntilS).toBe(2000);
    expect(cursor).not.toHaveProperty("newestRecordS");
  });

  // after { fetchedUntilS: 2000, newestRecordS: 1900 }
  it.each<[string, WindowCommit, number, number]>([
    ["smaller values move nothing back", { fetchedUntilS: 1500, newestRecordS: 1800 }, 2000, 1900],
    ["equal values keep both", { fetchedUntilS: 2000, newestRecordS: 1900 }, 2000, 1900],
    ["a later window without records keeps the newest", { fetchedUntilS: 2500 }, 2500, 1900],
    [
      "an older window with a newer record",
      { fetchedUntilS: 1500, newestRecordS: 1950 },
      2000,
      1950,
    ],
    [
      "a later window with an older record",
      { fetchedUntilS: 2500, newestRecordS: 1000 },
      2500,
      1900,
    ],
    ["larger values move both", { fetchedUntilS: 3000, newestRecordS: 2950 }, 3000, 2950],
  ])("moves forward only: %s", (_what, window, fetchedUntilS, newestRecordS) => {
    const { cursors } = ctx.store;
    commitWindow(cursors, DEV, RES, { fetchedUntilS: 2000, newestRecordS: 1900 }, T1);
    expect(commitWindow(cursors, DEV, RES, window, T2)).toMatchObject({
      fetchedUntilS,
      newestRecordS,
    });
    expect(cursors.get(DEV, RES)).toMatchObject({
      fetchedUntilS,
      newestRecordS,
      startedS: 1000,
      updatedAt: T2.toISOString(),
    });
  });

  it("ends a failure streak: failures, retry_at and last_error are cleared", () => {
    const { cursors } = ctx.store;
    cursors.recordFailure(DEV, RES, "API error 503", 5000, T1);
    cursors.recordFailure(DEV, RES, "API error 504", 6000, T1);
    const cursor = commitWindow(cursors, DEV, RES, { fetchedUntilS: 1500 }, T2);
    expect(cursor.failures).toBe(0);
    expect(cursor).not.toHaveProperty("retryAtS");
    expect(cursor).not.toHaveProperty("lastError");
  });

  // next_probe_at is set to 9000 on a cursor whose newest record is `newest` (none: undefined)
  it.each<[string, number | undefined, WindowCommit, boolean]>([
    ["no record keeps the probe", 1900, { fetchedUntilS: 2500 }, true],
    ["an older record keeps the probe", 1900, { fetchedUntilS: 2500, newestRecordS: 1800 }, true],
    ["the same record keeps the probe", 1900, { fetchedUntilS: 2500, newestRecordS: 1900 }, true],
    ["a newer record clears the probe", 1900, { fetchedUntilS: 2500, newestRecordS: 1901 }, false],
    [
      "a first record ever clears the probe",
      undefined,
      { fetchedUntilS: 2500, newestRecordS: 5 },
      false,
    ],
    ["no record on a cursor without any keeps the probe", undefined, { fetchedUntilS: 2500 }, true],
  ])("silence: %s", (_what, newest, window, kept) => {
    const { cursors } = ctx.store;
    if (newest !== undefined) {
      commitWindow(cursors, DEV, RES, { fetchedUntilS: 2000, newestRecordS: newest }, T1);
    }
    cursors.setNextProbe(DEV, RES, 9000, T1);
    const cursor = commitWindow(cursors, DEV, RES, window, T2);
    if (kept) expect(cursor.nextProbeS).toBe(9000);
    else expect(cursor).not.toHaveProperty("nextProbeS");
    expect(cursors.get(DEV, RES)).toEqual(cursor);
  });

  it.each<[string, WindowCommit]>([
    ["a negative fetchedUntilS", { fetchedUntilS: -1 }],
    ["a fractional fetchedUntilS", { fetchedUntilS: 1.5 }],
    ["a fractional newestRecordS", { fetchedUntilS: 2000, newestRecordS: 1.5 }],
    ["a negative newestRecordS", { fetchedUntilS: 2000, newestRecordS: -3 }],
  ])("rejects %s and changes nothing", (_what, window) => {
    const { cursors } = ctx.store;
    const before = cursors.get(DEV, RES);
    expect(() => commitWindow(cursors, DEV, RES, window, T1)).toThrow(RangeError);
    expect(cursors.get(DEV, RES)).toEqual(before);
  });
});

/** A failed attempt as a change: what recordFailure stores, through update. */
const afterFailure = (c: Cursor): Cursor => ({
  ...c,
  failures: c.failures + 1,
  retryAtS: 5,
  lastError: "x",
});

describe("update from the cursor last seen", () => {
  const advance = (to: number) => (c: Cursor) => afterCommit(c, { fetchedUntilS: to });

  it("saves over the cursor seen while the row is unchanged; the result is what a read gives", () => {
    const { cursors } = ctx.store;
    let seen = cursors.begin(DEV, RES, 1000, T0);
    seen = cursors.update(DEV, RES, advance(2000), T1, seen);
    expect(seen).toEqual(cursors.get(DEV, RES));
    seen = cursors.update(DEV, RES, afterFailure, T2, seen);
    expect(seen).toEqual(cursors.get(DEV, RES));
    expect(cursors.update(DEV, RES, advance(3000), T3, seen)).toEqual(cursors.get(DEV, RES));
    expect(cursors.get(DEV, RES)).toMatchObject({ fetchedUntilS: 3000, failures: 0 });
  });

  it("a cursor another process moved meanwhile: the change applies to the stored one", () => {
    const { cursors } = ctx.store;
    const seen = cursors.begin(DEV, RES, 1000, T0);
    const other = ctx.tmp.open(ctx.path);
    try {
      // the same instant: the row differs by its position only
      other.cursors.update(DEV, RES, advance(5000), T0);
    } finally {
      other.close();
    }
    const changed: Cursor[] = [];
    const next = cursors.update(
      DEV,
      RES,
      (c) => {
        changed.push(c);
        return { ...c, failures: c.failures + 1, lastError: `after ${c.fetchedUntilS}` };
      },
      T1,
      seen,
    );
    // tried on the cursor seen, then applied to the stored one
    expect(changed.map((c) => c.fetchedUntilS)).toEqual([999, 5000]);
    expect(next).toMatchObject({ fetchedUntilS: 5000, failures: 1, lastError: "after 5000" });
    expect(cursors.get(DEV, RES)).toEqual(next);
  });
});

describe("recordFailure", () => {
  it("counts the streak, sets retry_at and last_error, and a commit resets it", () => {
    const { cursors } = ctx.store;
    cursors.begin(DEV, RES, 1000, T0);
    expect(cursors.recordFailure(DEV, RES, "API error 503", 5000, T1)).toBe(1);
    expect(cursors.get(DEV, RES)).toMatchObject({
      failures: 1,
      retryAtS: 5000,
      lastError: "API error 503",
      fetchedUntilS: 999,
      updatedAt: T1.toISOString(),
    });
    expect(cursors.recordFailure(DEV, RES, "timeout", 7000, T2)).toBe(2);
    expect(cursors.get(DEV, RES)).toMatchObject({
      failures: 2,
      retryAtS: 7000,
      lastError: "timeout",
      updatedAt: T2.toISOString(),
    });
    commitWindow(cursors, DEV, RES, { fetchedUntilS: 2000 }, T2);
    expect(cursors.recordFailure(DEV, RES, "again", 8000, T3)).toBe(1);
  });

  it("keeps the failures of each resource apart", () => {
    const { cursors } = ctx.store;
    cursors.begin(DEV, RES, 1000, T0);
    cursors.begin(DEV, "meter", 1000, T0);
    cursors.recordFailure(DEV, RES, "x", 5000, T1);
    cursors.recordFailure(DEV, RES, "x", 5000, T1);
    expect(cursors.recordFailure(DEV, "meter", "y", 5000, T1)).toBe(1);
    expect(cursors.get(DEV, RES)?.failures).toBe(2);
  });
});

describe("setNextProbe", () => {
  it("sets and clears the silence of a resource", () => {
    const { cursors } = ctx.store;
    cursors.begin(DEV, RES, 1000, T0);
    cursors.setNextProbe(DEV, RES, 4000, T1);
    expect(cursors.get(DEV, RES)).toMatchObject({ nextProbeS: 4000, updatedAt: T1.toISOString() });
    cursors.setNextProbe(DEV, RES, 8000, T1);
    expect(cursors.get(DEV, RES)?.nextProbeS).toBe(8000);
    cursors.setNextProbe(DEV, RES, undefined, T2);
    const cleared = cursors.get(DEV, RES);
    expect(cleared).not.toHaveProperty("nextProbeS");
    expect(cleared?.updatedAt).toBe(T2.toISOString());
  });
});

describe("an unknown cursor", () => {
  it.each<[string, () => unknown]>([
    ["commit", () => commitWindow(ctx.store.cursors, "dev-x", RES, { fetchedUntilS: 10 }, T1)],
    ["recordFailure", () => ctx.store.cursors.recordFailure("dev-x", RES, "e", 10, T1)],
    ["setNextProbe", () => ctx.store.cursors.setNextProbe("dev-x", RES, 10, T1)],
  ])("%s throws a RangeError naming it and creates nothing", (_what, call) => {
    ctx.store.cursors.begin(DEV, RES, 1000, T0);
    expect(call).toThrow(RangeError);
    expect(call).toThrow("no cursor dev-x/inverter");
    expect(ctx.store.cursors.list().map((c) => c.deviceId)).toEqual([DEV]);
  });
});

it("cursors survive close and reopen", () => {
  const { cursors } = ctx.store;
  cursors.begin(DEV, RES, 1000, T0);
  commitWindow(cursors, DEV, RES, { fetchedUntilS: 2000, newestRecordS: 1900 }, T1);
  cursors.setNextProbe(DEV, RES, 3000, T1);
  cursors.recordFailure(DEV, RES, "boom", 4000, T2);
  const before = cursors.get(DEV, RES);
  expect(ctx.reopen().cursors.get(DEV, RES)).toEqual(before);
});
