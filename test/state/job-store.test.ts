import { jobKey } from "../../src/state/job-row.js";
import type {
  BackfillJob,
  BackfillReason,
  BackfillSpec,
  BackfillStatus,
} from "../../src/state/types.js";
import { queueJob, storedJobs } from "../support/backfill-jobs.js";
import { SPEC, T0, T1, T2, T3, useStateStore } from "./support.js";

const ctx = useStateStore("energy-etl-jobs-");

/** A job of its own (a spec no other call uses) with the given status. */
function jobWith(status: BackfillStatus, name: string, nextAttemptS?: number): BackfillJob {
  const { jobs } = ctx.store;
  const { job } = queueJob(jobs, { ...SPEC, deviceId: name }, 2, T0);
  if (status === "failed" && nextAttemptS !== undefined) {
    return jobs.recordFailure(job.id, "boom", nextAttemptS, 5, T0);
  }
  if (status === "parked") return jobs.recordFailure(job.id, "boom", 0, 1, T0);
  if (status !== "pending") jobs.setStatus(job.id, status, T0);
  const stored = jobs.get(job.id);
  if (stored === undefined) throw new Error(`job ${job.id} vanished`);
  return stored;
}

describe("queue, one spec at a time", () => {
  it("a new spec inserts a pending job; the same spec resumes it", () => {
    const { jobs } = ctx.store;
    const created = queueJob(jobs, SPEC, 4, T0);
    expect(created.resumed).toBe(false);
    expect(created.job).toEqual({
      id: expect.any(Number),
      key: jobKey(SPEC),
      deviceId: "dev-1",
      resourceId: "inverter",
      valueIds: ["e_a", "e_b"],
      fromS: SPEC.fromS,
      toS: SPEC.toS,
      reason: "manual",
      status: "pending",
      chunksTotal: 4,
      chunksDone: 0,
      points: 0,
      requests: 0,
      lastError: null,
      attempts: 0,
      createdAt: T0.toISOString(),
      updatedAt: T0.toISOString(),
    });
    expect(jobs.get(created.job.id)).toEqual(created.job);

    jobs.setStatus(created.job.id, "running", T1);
    const again = queueJob(jobs, { ...SPEC, valueIds: ["e_a", "e_b"] }, 4, T1);
    expect(again.resumed).toBe(true);
    expect(again.job.id).toBe(created.job.id);
    expect(again.job.status).toBe("running");
  });

  it("resuming a failed job gives it a fresh set of attempts and keeps its last error", () => {
    const { jobs } = ctx.store;
    const { job } = queueJob(jobs, SPEC, 4, T0);
    jobs.recordFailure(job.id, "API error 503", 9_000_000_000, 5, T1);
    const resumed = queueJob(jobs, SPEC, 4, T2);
    expect(resumed).toMatchObject({
      resumed: true,
      job: { id: job.id, status: "pending", attempts: 0, lastError: "API error 503" },
    });
    expect(resumed.job).not.toHaveProperty("nextAttemptS");
  });

  it("a done job is not resumed: the same spec makes a new job", () => {
    const { jobs } = ctx.store;
    const first = queueJob(jobs, SPEC, 2, T0).job;
    jobs.finish(first.id, T1);
    const second = queueJob(jobs, SPEC, 2, T2);
    expect(second.resumed).toBe(false);
    expect(second.job.id).not.toBe(first.id);
    expect(second.job.key).toBe(first.key);
    expect(jobs.get(first.id)?.status).toBe("done");
  });

  it("the same chunk count keeps the done chunks", () => {
    const { jobs } = ctx.store;
    const { job } = queueJob(jobs, SPEC, 4, T0);
    jobs.recordChunkDone(job.id, 0, { points: 10, requests: 1 }, T0);
    jobs.recordChunkDone(job.id, 3, { points: 5, requests: 1 }, T0);
    const resumed = queueJob(jobs, SPEC, 4, T1);
    expect(resumed).toMatchObject({
      resumed: true,
      job: { id: job.id, chunksTotal: 4, chunksDone: 2, points: 15 },
    });
    expect(jobs.completedChunks(job.id)).toEqual(new Set([0, 3]));
  });

  it("a resumed job split into a different number of chunks restarts its chunks", () => {
    const { jobs } = ctx.store;
    const { job } = queueJob(jobs, SPEC, 4, T0);
    jobs.recordChunkDone(job.id, 0, { points: 10, requests: 1 }, T0);
    jobs.recordFailure(job.id, "boom", 9_000_000_000, 5, T0);
    const resumed = queueJob(jobs, SPEC, 8, T1);
    expect(resumed).toMatchObject({
      resumed: true,
      job: { id: job.id, chunksTotal: 8, chunksDone: 0, status: "pending", attempts: 0 },
    });
    expect(resumed.job).not.toHaveProperty("nextAttemptS");
    expect(jobs.completedChunks(job.id)).toEqual(new Set());
    jobs.recordChunkDone(job.id, 7, { points: 1, requests: 1 }, T2);
    expect(jobs.get(job.id)?.chunksDone).toBe(1);
  });

  it("an existing parked job is un-parked with fresh attempts (same spec, same chunk count)", () => {
    const { jobs } = ctx.store;
    const { job } = queueJob(jobs, SPEC, 3, T0);
    jobs.recordChunkDone(job.id, 1, { points: 2, requests: 1 }, T0);
    expect(jobs.recordFailure(job.id, "boom", 100, 1, T1).status).toBe("parked");
    const resumed = queueJob(jobs, SPEC, 3, T2);
    expect(resumed).toMatchObject({
      resumed: true,
      job: { id: job.id, status: "pending", attempts: 0, chunksDone: 1, lastError: "boom" },
    });
    expect(resumed.job).not.toHaveProperty("nextAttemptS");
    expect(jobs.parked()).toEqual([]);
  });

  it("with status parked, a new spec is inserted parked", () => {
    const { jobs } = ctx.store;
    const created = queueJob(jobs, { ...SPEC, reason: "parked" }, 2, T0, "parked");
    expect(created.resumed).toBe(false);
    expect(created.job).toMatchObject({ status: "parked", reason: "parked", attempts: 0 });
    expect(jobs.parked().map((j) => j.id)).toEqual([created.job.id]);
    expect(jobs.unfinished().map((j) => j.id)).toEqual([created.job.id]);
    expect(jobs.due(9_000_000_000)).toEqual([]);
  });

  it.each<[BackfillStatus]>([["pending"], ["running"], ["parked"]])(
    "with status parked, an existing %s job is resumed as it is",
    (status) => {
      const { jobs } = ctx.store;
      const existing = jobWith(status, "dev-1");
      const resumed = queueJob(jobs, { ...SPEC, reason: "parked" }, 2, T1, "parked");
      expect(resumed).toEqual({ resumed: true, job: existing });
    },
  );

  it.each<[BackfillReason]>([["manual"], ["new_value"], ["audit"], ["parked"]])(
    "the reason %s round-trips",
    (reason) => {
      const { jobs } = ctx.store;
      const { job } = queueJob(jobs, { ...SPEC, reason }, 1, T0);
      expect(job.reason).toBe(reason);
      expect(ctx.reopen().jobs.get(job.id)?.reason).toBe(reason);
    },
  );

  it.each<[string, BackfillSpec, number, RegExp | RangeErrorConstructor]>([
    ["an empty window", { ...SPEC, fromS: SPEC.toS + 1 }, 1, /window is empty/],
    ["values_id", { ...SPEC, valueIds: ["values_id"] }, 1, /values_id is a tag/],
    ["a negative chunk count", SPEC, -1, RangeError],
    ["a fractional chunk count", SPEC, 1.5, RangeError],
    ["a fractional fromS", { ...SPEC, fromS: 1.5 }, 1, RangeError],
    ["a negative fromS", { ...SPEC, fromS: -1 }, 1, RangeError],
    ["an empty device id", { ...SPEC, deviceId: "" }, 1, RangeError],
    ["an empty resource id", { ...SPEC, resourceId: "" }, 1, RangeError],
    ["an empty value id", { ...SPEC, valueIds: ["e_a", ""] }, 1, RangeError],
  ])("rejects %s and writes nothing", (_what, spec, chunks, error) => {
    expect(() => queueJob(ctx.store.jobs, spec, chunks, T0)).toThrow(error);
    expect(storedJobs(ctx.store)).toEqual([]);
  });
});

describe("recordChunkDone", () => {
  it("records chunks idempotently and keeps the counters", () => {
    const { jobs } = ctx.store;
    const { job } = queueJob(jobs, SPEC, 3, T0);
    jobs.recordChunkDone(job.id, 1, { points: 100, requests: 2 }, T1);
    jobs.recordChunkDone(job.id, 0, { points: 50, requests: 1 }, T1);
    jobs.recordChunkDone(job.id, 1, { points: 100, requests: 2 }, T2); // a retry of a recorded chunk
    expect(jobs.completedChunks(job.id)).toEqual(new Set([0, 1]));
    expect(jobs.get(job.id)).toMatchObject({
      chunksDone: 2,
      points: 150,
      requests: 3,
      updatedAt: T2.toISOString(),
    });
  });

  it("raises the job's newest record (the max of its chunks')", () => {
    const { jobs } = ctx.store;
    const { job } = queueJob(jobs, SPEC, 4, T0);
    jobs.recordChunkDone(job.id, 0, { points: 1, requests: 1 }, T0);
    expect(jobs.get(job.id)).not.toHaveProperty("newestRecordS");
    jobs.recordChunkDone(job.id, 1, { points: 1, requests: 1, newestRecordS: 2000 }, T0);
    expect(jobs.get(job.id)?.newestRecordS).toBe(2000);
    jobs.recordChunkDone(job.id, 2, { points: 1, requests: 1, newestRecordS: 1500 }, T0);
    expect(jobs.get(job.id)?.newestRecordS).toBe(2000);
    jobs.recordChunkDone(job.id, 3, { points: 1, requests: 1 }, T0);
    expect(jobs.get(job.id)?.newestRecordS).toBe(2000);
    const other = queueJob(jobs, { ...SPEC, deviceId: "dev-2" }, 2, T0).job;
    jobs.recordChunkDone(other.id, 1, { points: 1, requests: 1, newestRecordS: 3000 }, T0);
    jobs.recordChunkDone(other.id, 0, { points: 1, requests: 1, newestRecordS: 2500 }, T0);
    expect(jobs.get(other.id)?.newestRecordS).toBe(3000);
  });

  it.each<[string, number, RegExp | RangeErrorConstructor]>([
    ["out of range", 3, /chunk 3 of backfill job \d+ is out of range \(it has 3\)/],
    ["far out of range", 99, /out of range/],
    ["negative", -1, RangeError],
    ["fractional", 0.5, RangeError],
  ])("rejects a chunk index %s and changes nothing", (_what, index, error) => {
    const { jobs } = ctx.store;
    const { job } = queueJob(jobs, SPEC, 3, T0);
    jobs.recordChunkDone(job.id, 0, { points: 1, requests: 1 }, T0);
    const before = jobs.get(job.id);
    expect(() => jobs.recordChunkDone(job.id, index, { points: 1, requests: 1 }, T1)).toThrow(
      error,
    );
    expect(jobs.get(job.id)).toEqual(before);
    expect(jobs.completedChunks(job.id)).toEqual(new Set([0]));
  });

  it("rejects negative counters", () => {
    const { jobs } = ctx.store;
    const { job } = queueJob(jobs, SPEC, 3, T0);
    expect(() => jobs.recordChunkDone(job.id, 0, { points: -1, requests: 1 }, T0)).toThrow(
      RangeError,
    );
    expect(() => jobs.recordChunkDone(job.id, 0, { points: 1, requests: -1 }, T0)).toThrow(
      RangeError,
    );
    expect(jobs.completedChunks(job.id)).toEqual(new Set());
  });

  it("an unknown job is a RangeError", () => {
    expect(() => ctx.store.jobs.recordChunkDone(999, 0, { points: 1, requests: 1 }, T0)).toThrow(
      /no backfill job 999/,
    );
  });
});

describe("setStatus", () => {
  it("keeps, sets or clears the last error", () => {
    const { jobs } = ctx.store;
    const { job } = queueJob(jobs, SPEC, 1, T0);
    jobs.setStatus(job.id, "failed", T1, "boom");
    expect(jobs.get(job.id)).toMatchObject({
      status: "failed",
      lastError: "boom",
      updatedAt: T1.toISOString(),
    });
    jobs.setStatus(job.id, "running", T2);
    expect(jobs.get(job.id)).toMatchObject({ status: "running", lastError: "boom" });
    jobs.setStatus(job.id, "done", T2, null);
    expect(jobs.get(job.id)).toMatchObject({ status: "done", lastError: null });
  });

  it("an unknown job is a RangeError", () => {
    expect(() => ctx.store.jobs.setStatus(12345, "done", T0)).toThrow(/no backfill job 12345/);
  });

  it("an unknown status is an error", () => {
    const { job } = queueJob(ctx.store.jobs, SPEC, 1, T0);
    expect(() => ctx.store.jobs.setStatus(job.id, "bogus" as BackfillStatus, T1)).toThrow(
      /unexpected backfill status/,
    );
    expect(ctx.store.jobs.get(job.id)?.status).toBe("pending");
  });
});

describe("finish", () => {
  it("marks the job done and clears its error, attempts and next attempt", () => {
    const { jobs } = ctx.store;
    const { job } = queueJob(jobs, SPEC, 1, T0);
    jobs.recordFailure(job.id, "boom", 5000, 5, T1);
    jobs.recordFailure(job.id, "boom again", 6000, 5, T1);
    jobs.recordChunkDone(job.id, 0, { points: 3, requests: 1, newestRecordS: 1234 }, T2);
    jobs.finish(job.id, T3);
    const done = jobs.get(job.id);
    expect(done).toMatchObject({
      status: "done",
      lastError: null,
      attempts: 0,
      chunksDone: 1,
      points: 3,
      newestRecordS: 1234,
      updatedAt: T3.toISOString(),
    });
    expect(done).not.toHaveProperty("nextAttemptS");
    expect(jobs.unfinished()).toEqual([]);
  });

  it("an unknown job is a RangeError", () => {
    expect(() => ctx.store.jobs.finish(404, T0)).toThrow(/no backfill job 404/);
  });
});

describe("recordFailure", () => {
  it("fails with a next attempt until the last attempt, then parks", () => {
    const { jobs } = ctx.store;
    const { job } = queueJob(jobs, SPEC, 2, T0);
    const steps: [string, number, Partial<BackfillJob>][] = [
      ["e1", 1000, { status: "failed", attempts: 1, nextAttemptS: 1000, lastError: "e1" }],
      ["e2", 2000, { status: "failed", attempts: 2, nextAttemptS: 2000, lastError: "e2" }],
      ["e3", 3000, { status: "parked", attempts: 3, lastError: "e3" }],
    ];
    for (const [error, next, expected] of steps) {
      const stored = jobs.recordFailure(job.id, error, next, 3, T1);
      expect(stored).toMatchObject({ ...expected, updatedAt: T1.toISOString() });
      expect(jobs.get(job.id)).toEqual(stored);
    }
    const parked = jobs.get(job.id);
    expect(parked).not.toHaveProperty("nextAttemptS");
    expect(jobs.parked().map((j) => j.id)).toEqual([job.id]);
  });

  it("with maxAttempts 1 the first failure parks", () => {
    const { job } = queueJob(ctx.store.jobs, SPEC, 2, T0);
    expect(ctx.store.jobs.recordFailure(job.id, "boom", 1000, 1, T1)).toMatchObject({
      status: "parked",
      attempts: 1,
    });
  });

  it("rejects maxAttempts 0 and an unknown job", () => {
    const { job } = queueJob(ctx.store.jobs, SPEC, 2, T0);
    expect(() => ctx.store.jobs.recordFailure(job.id, "boom", 1000, 0, T1)).toThrow(RangeError);
    expect(ctx.store.jobs.get(job.id)).toMatchObject({ status: "pending", attempts: 0 });
    expect(() => ctx.store.jobs.recordFailure(777, "boom", 1000, 3, T1)).toThrow(
      /no backfill job 777/,
    );
  });
});

describe("due", () => {
  const NOW = 5000;

  it.each<[string, BackfillStatus, number | undefined, boolean]>([
    ["pending", "pending", undefined, true],
    ["running", "running", undefined, true],
    ["failed and due before now", "failed", NOW - 1, true],
    ["failed and due now", "failed", NOW, true],
    ["failed and due later", "failed", NOW + 1, false],
    ["parked", "parked", undefined, false],
    ["done", "done", undefined, false],
  ])("a %s job", (_what, status, nextAttemptS, due) => {
    const job = jobWith(status, "dev-x", nextAttemptS);
    expect(job.status).toBe(status);
    expect(ctx.store.jobs.due(NOW).map((j) => j.id)).toEqual(due ? [job.id] : []);
  });

  it("lists the due jobs oldest first", () => {
    const a = jobWith("pending", "a");
    jobWith("parked", "b");
    const c = jobWith("failed", "c", NOW - 10);
    jobWith("failed", "d", NOW + 10);
    jobWith("done", "e");
    const f = jobWith("running", "f");
    expect(ctx.store.jobs.due(NOW).map((j) => j.id)).toEqual([a.id, c.id, f.id]);
  });
});

describe("unpark", () => {
  it("puts parked and failed jobs back to pending with fresh attempts; returns how many", () => {
    const { jobs } = ctx.store;
    const parked = jobWith("parked", "a");
    const failed = jobWith("failed", "b", 9000);
    const pending = jobWith("pending", "c");
    const running = jobWith("running", "d");
    const done = jobWith("done", "e");
    expect(jobs.unpark([parked.id, failed.id, pending.id, running.id, done.id, 999], T2)).toBe(2);
    for (const id of [parked.id, failed.id]) {
      const job = jobs.get(id);
      expect(job).toMatchObject({ status: "pending", attempts: 0, updatedAt: T2.toISOString() });
      expect(job).not.toHaveProperty("nextAttemptS");
    }
    expect(jobs.get(pending.id)).toEqual(pending);
    expect(jobs.get(running.id)).toEqual(running);
    expect(jobs.get(done.id)).toEqual(done);
    expect(jobs.parked()).toEqual([]);
    expect(jobs.unpark([], T2)).toBe(0);
  });
});

describe("listing", () => {
  it("unfinished jobs oldest first (parked included), parked jobs, no job of an unknown id", () => {
    const { jobs } = ctx.store;
    const a = jobWith("pending", "a");
    const b = jobWith("done", "b");
    const c = jobWith("failed", "c", 9000);
    const d = jobWith("parked", "d");
    expect(jobs.unfinished().map((j) => j.id)).toEqual([a.id, c.id, d.id]);
    expect(jobs.get(b.id)?.status).toBe("done");
    expect(jobs.parked().map((j) => j.id)).toEqual([d.id]);
    expect(jobs.get(999)).toBeUndefined();
  });
});

describe("the database", () => {
  it("deleting a job deletes its chunks", () => {
    const { jobs } = ctx.store;
    const { job } = queueJob(jobs, SPEC, 2, T0);
    const other = queueJob(jobs, { ...SPEC, deviceId: "dev-2" }, 2, T0).job;
    jobs.recordChunkDone(job.id, 0, { points: 1, requests: 1 }, T0);
    jobs.recordChunkDone(other.id, 1, { points: 1, requests: 1 }, T0);
    const raw = ctx.tmp.raw(ctx.path);
    raw.prepare("DELETE FROM backfill_jobs WHERE id = ?").run(job.id);
    expect(raw.prepare("SELECT job_id FROM backfill_chunks").pluck().all()).toEqual([other.id]);
  });

  it.each<[string, string]>([
    ["value ids that are not strings", "UPDATE backfill_jobs SET value_ids = '[1, 2]'"],
    ["an unknown reason", "UPDATE backfill_jobs SET reason = 'bogus'"],
  ])("a row with %s is an error naming the row", (_what, sql) => {
    const { job } = queueJob(ctx.store.jobs, SPEC, 2, T0);
    ctx.tmp.raw(ctx.path).prepare(sql).run();
    expect(() => ctx.store.jobs.get(job.id)).toThrow(/state database: unexpected backfill job/);
    expect(() => ctx.store.jobs.unfinished()).toThrow(/unexpected backfill job/);
  });
});
