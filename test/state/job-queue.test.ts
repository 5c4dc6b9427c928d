/**
 * JobStore.queue and JobStore.match: a request continues the unfinished jobs of its device,
 * resource and values that it overlaps, and new jobs cover only the rest of its range (issue 18,
 * item 2: a relative --from moves both ends of the request on every start). Real SQLite files.
 */
import { jobKey } from "../../src/state/job-row.js";
import { processOwner } from "../../src/state/owner.js";
import type { BackfillSpec } from "../../src/state/types.js";
import { storedJobs } from "../support/backfill-jobs.js";
import { requestCount } from "../support/schema-oracle.js";
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

/** Every job as [device, from, to, status, chunks total, chunks done], oldest first. */
const stored = () =>
  storedJobs(ctx.store).map((j) => [
    j.deviceId,
    j.fromS,
    j.toS,
    j.status,
    j.chunksTotal,
    j.chunksDone,
  ]);

/** The jobs to run that queueing these specs (one command) gives. */
const queue = (
  specs: BackfillSpec | readonly BackfillSpec[],
  now = T1,
  status: "pending" | "parked" = "pending",
) => ctx.store.jobs.queue("deviceId" in specs ? [specs] : specs, requestCount, now, status).jobs;

/** The one job a request queued (fails the test otherwise). */
function queueOne(spec: BackfillSpec): number {
  const queued = queue(spec, T0);
  const [only] = queued;
  if (only === undefined || queued.length !== 1) throw new Error("expected one job queued");
  return only.job.id;
}

describe("JobStore.queue", () => {
  it("a new request is one new job over its range", () => {
    const queued = queue(SPEC, T0);
    expect(queued.map((q) => [q.resumed, q.job.status, q.job.valueIds])).toEqual([
      [false, "pending", ["e_a", "e_b"]],
    ]);
    expect(stored()).toEqual([["dev-1", SPEC.fromS, SPEC.toS, "pending", 2, 0]]);
  });

  it("the same request moved on by a relative start continues the job, whose last window (not started) takes in the seconds after it", () => {
    const { jobs } = ctx.store;
    const id = queueOne(SPEC);
    jobs.recordChunkDone(id, 0, { points: 10, requests: 1 }, T0);

    const again = queue({ ...LATER, valueIds: ["e_a", "e_b", "e_a"] }, T1);
    expect(again.map((q) => [q.resumed, q.job.id, q.job.fromS, q.job.toS])).toEqual([
      [true, id, SPEC.fromS, LATER.toS],
    ]);
    expect(again[0]?.job.key).toBe(jobKey({ ...SPEC, toS: LATER.toS }));
    expect(jobs.completedChunks(id)).toEqual(new Set([0]));
    expect(stored()).toEqual([["dev-1", SPEC.fromS, LATER.toS, "pending", 2, 1]]);
    // and once more, a few seconds later: the same job
    const third = queue({ ...LATER, toS: LATER.toS + 5 }, T2);
    expect(third.map((q) => [q.resumed, q.job.id, q.job.toS])).toEqual([[true, id, LATER.toS + 5]]);
  });

  it("when a chunk of the last window is done, the seconds after the job are a new job", () => {
    const { jobs } = ctx.store;
    const id = queueOne(SPEC);
    jobs.recordChunkDone(id, 1, { points: 10, requests: 1 }, T0);
    const again = queue(LATER, T1);
    expect(again.map((q) => [q.resumed, q.job.fromS, q.job.toS])).toEqual([
      [true, SPEC.fromS, SPEC.toS],
      [false, SPEC.toS + 1, LATER.toS],
    ]);
    expect(stored()).toEqual([
      ["dev-1", SPEC.fromS, SPEC.toS, "pending", 2, 1],
      ["dev-1", SPEC.toS + 1, LATER.toS, "pending", 1, 0],
    ]);
  });

  it("when the last window is full (7 days), the seconds after the job are a new job", () => {
    const full = { ...SPEC, toS: SPEC.fromS + 7 * DAY_S };
    queueOne(full);
    const again = queue({ ...full, fromS: full.fromS + 7, toS: full.toS + 7 });
    expect(again.map((q) => [q.resumed, q.job.fromS, q.job.toS, q.job.chunksTotal])).toEqual([
      [true, full.fromS, full.toS, 1],
      [false, full.toS + 1, full.toS + 7, 1],
    ]);
  });

  it("a wider range: new jobs before the unfinished ones, and after them where their last window would not hold it", () => {
    queueOne({ ...SPEC, fromS: START + 2 * DAY_S, toS: START + 3 * DAY_S });
    queueOne({ ...SPEC, fromS: START + 12 * DAY_S, toS: START + 13 * DAY_S });
    const queued = queue({ ...SPEC, toS: START + 15 * DAY_S }, T1);
    expect(
      queued.map((q) => [q.resumed, q.job.fromS - START, q.job.toS - START, q.job.chunksTotal]),
    ).toEqual([
      [false, 0, 2 * DAY_S - 1, 1],
      [true, 2 * DAY_S, 3 * DAY_S, 1],
      // 1 day and 9 more would not fit in one window
      [false, 3 * DAY_S + 1, 12 * DAY_S - 1, 2],
      // 1 day and 2 more do
      [true, 12 * DAY_S, 15 * DAY_S, 1],
    ]);
  });

  it("a request inside an unfinished job continues it and adds nothing", () => {
    const id = queueOne(SPEC);
    const inside = queue({ ...SPEC, fromS: START + DAY_S, toS: START + 2 * DAY_S });
    expect(inside.map((q) => [q.resumed, q.job.id, q.job.toS])).toEqual([[true, id, SPEC.toS]]);
  });

  it("a finished job is not continued: the same request runs again", () => {
    const { jobs } = ctx.store;
    jobs.finish(queueOne(SPEC), T0);
    const again = queue(LATER, T1);
    expect(again.map((q) => [q.resumed, q.job.fromS, q.job.toS])).toEqual([
      [false, LATER.fromS, LATER.toS],
    ]);
  });

  it.each<[string, Partial<BackfillSpec>]>([
    ["another value set", { valueIds: ["e_a"] }],
    ["another device", { deviceId: "dev-2" }],
    ["another resource", { resourceId: "meter" }],
  ])("a job of %s is not continued", (_what, change) => {
    queueOne(SPEC);
    const other = queue({ ...LATER, ...change }, T1);
    expect(other.map((q) => [q.resumed, q.job.fromS, q.job.toS])).toEqual([
      [false, LATER.fromS, LATER.toS],
    ]);
  });

  it("a parked job asked for again gets a fresh set of attempts; a sync hand-over leaves it parked", () => {
    const { jobs } = ctx.store;
    const id = queueOne(SPEC);
    expect(jobs.recordFailure(id, "boom", 0, 1, T0).status).toBe("parked");
    const handedOver = queue({ ...LATER, reason: "parked" }, T1, "parked");
    expect(handedOver.map((q) => [q.job.id, q.job.status, q.job.reason, q.job.attempts])).toEqual([
      [id, "parked", "manual", 1],
    ]);
    const asked = queue(LATER, T2);
    expect(asked.map((q) => [q.job.id, q.job.status, q.job.attempts])).toEqual([
      [id, "pending", 0],
    ]);
    expect(jobs.parked()).toEqual([]);
  });

  it("a job another process holds is returned as it is: lease, range and status untouched; the seconds after it are a new job", () => {
    const { jobs } = ctx.store;
    const id = queueOne(SPEC);
    const nowMs = Date.now();
    expect(jobs.claim(id, processOwner("run"), 60_000, nowMs)).toBe(true);
    jobs.setStatus(id, "running", T0);
    const held = jobs.get(id);

    // not extended: the holder works on the range it read
    const again = queue(LATER, T1);
    expect(again).toEqual([
      { resumed: true, job: held },
      { resumed: false, job: expect.objectContaining({ fromS: SPEC.toS + 1, toS: LATER.toS }) },
    ]);
    expect(jobs.claim(id, processOwner("backfill"), 60_000, nowMs + 1)).toBe(false);
  });

  it("rejects a spec a job cannot hold and writes nothing", () => {
    expect(() => queue({ ...SPEC, fromS: SPEC.toS + 1 }, T0)).toThrow(/window is empty/);
    expect(() => queue({ ...SPEC, valueIds: ["values_id"] }, T0)).toThrow(/values_id is a tag/);
    expect(storedJobs(ctx.store)).toEqual([]);
  });
});

describe("JobStore.queue: the jobs of one command", () => {
  const BATTERY = { ...SPEC, resourceId: "battery" };

  it("when the command continues an unfinished job, its jobs done since are not run again (only the seconds after them)", () => {
    const { jobs } = ctx.store;
    const [inverter, battery] = queue([SPEC, BATTERY], T0);
    if (inverter === undefined || battery === undefined) throw new Error("no jobs queued");
    jobs.finish(inverter.job.id, T1);
    jobs.recordChunkDone(battery.job.id, 0, { points: 1, requests: 1 }, T1);

    const again = ctx.store.jobs.queue(
      [LATER, { ...LATER, resourceId: "battery" }],
      requestCount,
      T2,
    );
    expect(again.finished.map((j) => j.id)).toEqual([inverter.job.id]);
    expect(again.jobs.map((q) => [q.resumed, q.job.resourceId, q.job.fromS, q.job.toS])).toEqual([
      // a done job takes nothing in: the seconds after it are a job of their own
      [false, "inverter", SPEC.toS + 1, LATER.toS],
      [true, "battery", SPEC.fromS, LATER.toS],
    ]);
  });

  it("a job done before the oldest continued job was created is run again", () => {
    const { jobs } = ctx.store;
    jobs.finish(queueOne(SPEC), T0);
    // created after the first was done
    expect(queue({ ...BATTERY, fromS: SPEC.fromS + 1 }, T1)).toHaveLength(1);
    const again = ctx.store.jobs.queue(
      [LATER, { ...LATER, resourceId: "battery" }],
      requestCount,
      T2,
    );
    expect(again.finished).toEqual([]);
    expect(again.jobs.map((q) => [q.resumed, q.job.resourceId, q.job.fromS])).toEqual([
      [false, "inverter", LATER.fromS],
      [true, "battery", SPEC.fromS + 1],
    ]);
  });

  it("a sync hand-over (parked) never counts done jobs: the window is read again", () => {
    const { jobs } = ctx.store;
    const [inverter] = queue([SPEC, BATTERY], T0);
    if (inverter === undefined) throw new Error("no jobs queued");
    jobs.finish(inverter.job.id, T1);
    const handedOver = ctx.store.jobs.queue(
      [
        { ...LATER, reason: "parked" },
        { ...LATER, resourceId: "battery", reason: "parked" },
      ],
      requestCount,
      T2,
      "parked",
    );
    expect(handedOver.finished).toEqual([]);
    expect(handedOver.jobs.map((q) => [q.resumed, q.job.resourceId, q.job.status])).toEqual([
      [false, "inverter", "parked"],
      [true, "battery", "pending"],
    ]);
  });

  it("a job two requests of the command overlap is queued once", () => {
    const id = queueOne(SPEC);
    const halves = [
      { ...SPEC, toS: START + DAY_S },
      { ...SPEC, fromS: START + 2 * DAY_S },
    ];
    expect(queue(halves).map((q) => [q.resumed, q.job.id])).toEqual([[true, id]]);
  });
});

describe("JobStore.match", () => {
  it("says what queue would do and writes nothing", () => {
    const { jobs } = ctx.store;
    const parked = queueOne(SPEC);
    const started = queueOne({ ...SPEC, valueIds: ["e_c"] });
    expect(jobs.recordFailure(parked, "boom", 0, 1, T0).status).toBe("parked");
    jobs.recordChunkDone(started, 1, { points: 1, requests: 1 }, T0);
    const before = storedJobs(ctx.store);

    const [extended, added] = jobs.match([LATER, { ...LATER, valueIds: ["e_c"] }], requestCount);
    expect(extended?.continued.map((j) => [j.id, j.fromS, j.toS])).toEqual([
      [parked, SPEC.fromS, LATER.toS],
    ]);
    expect(extended?.created).toEqual([]);
    expect(added?.continued.map((j) => [j.id, j.toS])).toEqual([[started, SPEC.toS]]);
    expect(added?.created).toEqual([{ ...LATER, valueIds: ["e_c"], fromS: SPEC.toS + 1 }]);
    expect(storedJobs(ctx.store)).toEqual(before);
  });
});
