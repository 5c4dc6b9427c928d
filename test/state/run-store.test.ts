import { processOwner } from "../../src/state/owner.js";
import type { RunKind, RunSummary } from "../../src/state/types.js";
import { T0, T1, T2, useStateStore } from "./support.js";

const ctx = useStateStore("energy-etl-runs-");

const OK: RunSummary = {
  status: "ok",
  devices: 1,
  requests: 1,
  points: 1,
  errors: 0,
  detail: null,
};

it("runs start, finish, and the finished ones are listed newest first", () => {
  const { runs } = ctx.store;
  const sync = runs.start("sync", T0);
  expect(runs.last()).toEqual({
    id: sync,
    kind: "sync",
    startedAt: T0.toISOString(),
    endedAt: null,
    status: "running",
  });
  runs.finish(
    sync,
    { status: "partial", devices: 3, requests: 12, points: 400, errors: 1, detail: '{"d":1}' },
    T1,
  );
  const backfill = runs.start("backfill", T1);
  runs.finish(
    backfill,
    { status: "ok", devices: 1, requests: 2, points: 3, errors: 0, detail: null },
    T2,
  );
  expect(runs.last("sync")).toEqual({
    id: sync,
    kind: "sync",
    startedAt: T0.toISOString(),
    endedAt: T1.toISOString(),
    status: "partial",
    devices: 3,
    requests: 12,
    points: 400,
    errors: 1,
    detail: '{"d":1}',
  });
  expect(runs.last()).toMatchObject({ id: backfill, status: "ok", detail: null });
  expect(runs.last("backfill")?.id).toBe(backfill);
  const again = runs.start("sync", T2);
  runs.finish(again, OK, T2);
  runs.start("sync", T2);
  expect(runs.recentFinished("sync", 10).map((r) => r.id)).toEqual([again, sync]);
  expect(runs.recentFinished("sync", 1).map((r) => r.id)).toEqual([again]);
  expect(runs.recentFinished("sync", 0)).toEqual([]);
  expect(runs.recentFinished("backfill", 10).map((r) => r.id)).toEqual([backfill]);
  expect(runs.recentFinished("catalog", 10)).toEqual([]);
});

it("runs left running by a dead process are marked interrupted", () => {
  const { runs } = ctx.store;
  const done = runs.start("sync", T0);
  runs.finish(done, OK, T0);
  const stale1 = runs.start("sync", T1);
  const stale2 = runs.start("backfill", T1);
  const store = ctx.reopen();
  expect(store.runs.markStaleInterrupted(T2, processOwner("test"))).toBe(2);
  expect(store.runs.markStaleInterrupted(T2, processOwner("test"))).toBe(0);
  for (const id of [stale1, stale2]) {
    const finished = [
      ...store.runs.recentFinished("sync", 5),
      ...store.runs.recentFinished("backfill", 5),
    ];
    expect(finished.find((r) => r.id === id)).toMatchObject({
      status: "interrupted",
      endedAt: T2.toISOString(),
    });
  }
  expect(store.runs.last("sync")).toMatchObject({ id: stale1, status: "interrupted" });
  expect(store.runs.recentFinished("sync", 5).find((r) => r.id === done)).toMatchObject({
    status: "ok",
    endedAt: T0.toISOString(),
  });
});

it("last is undefined without runs", () => {
  expect(ctx.store.runs.last()).toBeUndefined();
  expect(ctx.store.runs.last("backfill")).toBeUndefined();
  ctx.store.runs.start("sync", T0);
  expect(ctx.store.runs.last("backfill")).toBeUndefined();
});

describe("finish", () => {
  it("an unknown run is a RangeError", () => {
    expect(() => ctx.store.runs.finish(999, OK, T0)).toThrow(/no run 999/);
  });

  it.each<[string, RunSummary, RegExp | RangeErrorConstructor]>([
    [
      "the status running",
      { ...OK, status: "running" as RunSummary["status"] },
      /unexpected run status/,
    ],
    ["negative devices", { ...OK, devices: -1 }, RangeError],
    ["fractional requests", { ...OK, requests: 0.5 }, RangeError],
    ["negative points", { ...OK, points: -3 }, RangeError],
    ["fractional errors", { ...OK, errors: 1.5 }, RangeError],
  ])("rejects %s and leaves the run running", (_what, summary, error) => {
    const id = ctx.store.runs.start("sync", T0);
    expect(() => ctx.store.runs.finish(id, summary, T1)).toThrow(error);
    expect(ctx.store.runs.last()).toMatchObject({ id, status: "running", endedAt: null });
  });
});

it("an unknown kind is an error", () => {
  expect(() => ctx.store.runs.start("audit" as RunKind, T0)).toThrow(/unexpected run kind/);
  expect(ctx.store.runs.last()).toBeUndefined();
});

it("recentFinished rejects a negative limit", () => {
  expect(() => ctx.store.runs.recentFinished("sync", -1)).toThrow(RangeError);
});
