/**
 * JobStore.queue and JobStore.match: a request continues the unfinished jobs of its device,
 * resource and values that it overlaps, and new jobs cover only the rest of its range (issue 18,
 * item 2: a relative --from moves both ends of the request on every start). Real SQLite files.
 */
import { countChunks } from "../../src/pipeline/plan-chunks.js";
import { processOwner } from "../../src/state/owner.js";
import type { BackfillSpec } from "../../src/state/types.js";
import { T0, T1, T2, useStateStore } from "./support.js";

const ctx = useStateStore("energy-etl-job-queue-");

const DAY_S = 86_400;
const START = 1_700_000_000;
/** Ten days: two 7-day windows of one value group, so two chunks. */
const SPEC: BackfillSpec = {
  deviceId: "dev-1",
  resourceId: "inverter",
  valueIds: ["e_b", "e_a"],
  fromS: START,
  toS: START + 10 * DAY_S,
  reason: "manual",
};
/** The request as a relative --from asks it again 7 s later: both ends moved on. */
const LATER = { ...SPEC, fromS: SPEC.fromS + 7, toS: SPEC.toS + 7 };

const ranges = () =>
  ctx.store.jobs
    .recent(100)
    .sort((a, b) => a.id - b.id)
    .map((j) => [j.deviceId, j.fromS, j.toS, j.status, j.chunksTotal, j.chunksDone]);

describe("JobStore.queue", () => {
  it("a new request is one new job over its range", () => {
    const queued = ctx.store.jobs.queue(SPEC, countChunks, T0);
    expect(queued).toEqual([
      { resumed: false, job: expect.objectContaining({ status: "pending" }) },
    ]);
    expect(ranges()).toEqual([["dev-1", SPEC.fromS, SPEC.toS, "pending", 2, 0]]);
    expect(queued[0]?.job.valueIds).toEqual(["e_a", "e_b"]);
  });

  it("the same request moved on by a relative start continues the job whole; a new job covers only the seconds after it", () => {
    const { jobs } = ctx.store;
    const [first] = jobs.queue(SPEC, countChunks, T0);
    if (first === undefined) throw new Error("no job queued");
    jobs.recordChunkDone(first.job.id, 0, { points: 10, requests: 1 }, T0);
    jobs.setStatus(first.job.id, "pending", T0);

    const again = jobs.queue({ ...LATER, valueIds: ["e_a", "e_b", "e_a"] }, countChunks, T1);
    expect(again.map((q) => [q.resumed, q.job.id, q.job.fromS, q.job.toS])).toEqual([
      [true, first.job.id, SPEC.fromS, SPEC.toS],
      [false, expect.any(Number), SPEC.toS + 1, LATER.toS],
    ]);
    expect(jobs.completedChunks(first.job.id)).toEqual(new Set([0]));
    expect(ranges()).toEqual([
      ["dev-1", SPEC.fromS, SPEC.toS, "pending", 2, 1],
      ["dev-1", SPEC.toS + 1, LATER.toS, "pending", 1, 0],
    ]);
    // and once more: nothing new, both continued
    const third = jobs.queue(LATER, countChunks, T2);
    expect(third.map((q) => q.resumed)).toEqual([true, true]);
    expect(jobs.recent(100)).toHaveLength(2);
  });

  it("a wider range gets new jobs before and after the unfinished one, and between two", () => {
    const { jobs } = ctx.store;
    jobs.queue({ ...SPEC, fromS: START + 2 * DAY_S, toS: START + 3 * DAY_S }, countChunks, T0);
    jobs.queue({ ...SPEC, fromS: START + 5 * DAY_S, toS: START + 6 * DAY_S }, countChunks, T0);
    const queued = jobs.queue(SPEC, countChunks, T1);
    expect(queued.map((q) => [q.resumed, q.job.fromS - START, q.job.toS - START])).toEqual([
      [false, 0, 2 * DAY_S - 1],
      [true, 2 * DAY_S, 3 * DAY_S],
      [false, 3 * DAY_S + 1, 5 * DAY_S - 1],
      [true, 5 * DAY_S, 6 * DAY_S],
      [false, 6 * DAY_S + 1, 10 * DAY_S],
    ]);
  });

  it("a request inside an unfinished job continues it and adds nothing", () => {
    const { jobs } = ctx.store;
    const [job] = jobs.queue(SPEC, countChunks, T0);
    const inside = jobs.queue(
      { ...SPEC, fromS: START + DAY_S, toS: START + 2 * DAY_S },
      countChunks,
      T1,
    );
    expect(inside.map((q) => [q.resumed, q.job.id])).toEqual([[true, job?.job.id]]);
  });

  it("a finished job is not continued: the same request runs again", () => {
    const { jobs } = ctx.store;
    const [first] = jobs.queue(SPEC, countChunks, T0);
    if (first === undefined) throw new Error("no job queued");
    jobs.finish(first.job.id, T0);
    const again = jobs.queue(LATER, countChunks, T1);
    expect(again.map((q) => [q.resumed, q.job.fromS, q.job.toS])).toEqual([
      [false, LATER.fromS, LATER.toS],
    ]);
  });

  it.each<[string, Partial<BackfillSpec>]>([
    ["another value set", { valueIds: ["e_a"] }],
    ["another device", { deviceId: "dev-2" }],
    ["another resource", { resourceId: "meter" }],
  ])("a job of %s is not continued", (_what, change) => {
    const { jobs } = ctx.store;
    jobs.queue(SPEC, countChunks, T0);
    const other = jobs.queue({ ...LATER, ...change }, countChunks, T1);
    expect(other.map((q) => [q.resumed, q.job.fromS, q.job.toS])).toEqual([
      [false, LATER.fromS, LATER.toS],
    ]);
  });

  it("a parked or waiting job asked for again gets a fresh set of attempts; a sync hand-over leaves it parked", () => {
    const { jobs } = ctx.store;
    const [queued] = jobs.queue(SPEC, countChunks, T0);
    if (queued === undefined) throw new Error("no job queued");
    const { id } = queued.job;
    expect(jobs.recordFailure(id, "boom", 0, 1, T0).status).toBe("parked");
    const handedOver = jobs.queue({ ...LATER, reason: "parked" }, countChunks, T1, "parked");
    expect(handedOver.map((q) => [q.job.id === id, q.job.status, q.job.reason])).toEqual([
      [true, "parked", "manual"],
      [false, "parked", "parked"],
    ]);
    const asked = jobs.queue(LATER, countChunks, T2);
    expect(asked.map((q) => [q.job.status, q.job.attempts])).toEqual([
      ["pending", 0],
      ["pending", 0],
    ]);
  });

  it("a job another process holds is returned as it is: its lease untouched, its range not queued again", () => {
    const { jobs } = ctx.store;
    const [queued] = jobs.queue(SPEC, countChunks, T0);
    if (queued === undefined) throw new Error("no job queued");
    const holder = processOwner("run");
    const nowMs = Date.now();
    expect(jobs.claim(queued.job.id, holder, 60_000, nowMs)).toBe(true);
    jobs.setStatus(queued.job.id, "running", T0);
    const held = jobs.get(queued.job.id);

    const again = jobs.queue(LATER, countChunks, T1);
    expect(again[0]).toEqual({ resumed: true, job: held });
    expect(again.slice(1).map((q) => q.job.fromS)).toEqual([SPEC.toS + 1]);
    expect(jobs.claim(queued.job.id, processOwner("backfill"), 60_000, nowMs + 1)).toBe(false);
  });

  it("rejects a spec a job cannot hold and writes nothing", () => {
    expect(() => ctx.store.jobs.queue({ ...SPEC, fromS: SPEC.toS + 1 }, countChunks, T0)).toThrow(
      /window is empty/,
    );
    expect(() =>
      ctx.store.jobs.queue({ ...SPEC, valueIds: ["values_id"] }, countChunks, T0),
    ).toThrow(/values_id is a tag/);
    expect(ctx.store.jobs.recent(10)).toEqual([]);
  });
});

describe("JobStore.match", () => {
  it("says what queue would do and writes nothing", () => {
    const { jobs } = ctx.store;
    const [first] = jobs.queue(SPEC, countChunks, T0);
    if (first === undefined) throw new Error("no job queued");
    expect(jobs.recordFailure(first.job.id, "boom", 0, 1, T0).status).toBe("parked");
    const before = jobs.recent(10);
    const { continued, created } = jobs.match(LATER);
    expect(continued.map((j) => j.id)).toEqual([first.job.id]);
    expect(created).toEqual([{ ...LATER, valueIds: ["e_a", "e_b"], fromS: SPEC.toS + 1 }]);
    expect(jobs.recent(10)).toEqual(before);
  });
});
