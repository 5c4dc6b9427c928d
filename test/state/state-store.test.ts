import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { StateStore } from "../../src/state/state-store.js";
import type { BackfillSpec } from "../../src/state/types.js";

let dir: string;
let dbPath: string;
let store: StateStore;

const T0 = new Date("2024-03-01T00:00:00.000Z");
const T1 = new Date("2024-03-01T01:00:00.000Z");
const T2 = new Date("2024-03-01T02:00:00.000Z");

const SPEC: BackfillSpec = {
  deviceId: "dev-1",
  resourceId: "inverter",
  valueIds: ["e_b", "e_a"],
  fromS: 1_700_000_000,
  toS: 1_700_086_400,
  reason: "manual",
};

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "energy-etl-state-"));
  dbPath = join(dir, "sub", "dir", "state.db");
  store = StateStore.open(dbPath);
});

afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

function reopen(): StateStore {
  store.close();
  store = StateStore.open(dbPath);
  return store;
}

describe("opening", () => {
  it("creates the file and its directory, applies migrations once, and records them", () => {
    expect(store.path).toBe(dbPath);
    expect(store.appliedOnOpen).toEqual([1]);
    expect(store.schemaVersion()).toBe(1);
    expect(reopen().appliedOnOpen).toEqual([]);
    expect(store.schemaVersion()).toBe(1);
  });

  it("puts the database in WAL mode", () => {
    store.close();
    const raw = new Database(dbPath);
    expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
    raw.close();
    store = StateStore.open(dbPath);
  });

  it("with migrate: false, a database with pending migrations is an error", () => {
    const fresh = join(dir, "fresh.db");
    expect(() => StateStore.open(fresh, { migrate: false })).toThrow(
      /needs migration\(s\) 001_initial; run `energy-etl migrate`/,
    );
    StateStore.open(fresh).close();
    const migrated = StateStore.open(fresh, { migrate: false });
    expect(migrated.appliedOnOpen).toEqual([]);
    migrated.close();
  });

  it("close is idempotent", () => {
    store.close();
    expect(() => store.close()).not.toThrow();
  });

  it("works in memory", () => {
    const memory = StateStore.open(":memory:");
    expect(memory.schemaVersion()).toBe(1);
    memory.close();
  });
});

describe("watermarks", () => {
  it("move forward only and report the stored value", () => {
    expect(store.getWatermark("dev-1", "inverter")).toBeUndefined();
    expect(store.advanceWatermark("dev-1", "inverter", 1000, T0)).toBe(1000);
    expect(store.advanceWatermark("dev-1", "inverter", 900, T1)).toBe(1000);
    expect(store.advanceWatermark("dev-1", "inverter", 1000, T1)).toBe(1000);
    expect(store.getWatermark("dev-1", "inverter")).toBe(1000);
    // updated_at changes only when the watermark moves
    expect(store.listWatermarks()).toEqual([
      {
        deviceId: "dev-1",
        resourceId: "inverter",
        syncedUntilS: 1000,
        updatedAt: T0.toISOString(),
      },
    ]);
    expect(store.advanceWatermark("dev-1", "inverter", 2000, T2)).toBe(2000);
    expect(store.listWatermarks()[0]).toMatchObject({
      syncedUntilS: 2000,
      updatedAt: T2.toISOString(),
    });
  });

  it("are kept per device and resource, listed in order", () => {
    store.advanceWatermark("dev-2", "meter", 5, T0);
    store.advanceWatermark("dev-1", "meter", 6, T0);
    store.advanceWatermark("dev-1", "inverter", 7, T0);
    expect(store.listWatermarks().map((w) => [w.deviceId, w.resourceId, w.syncedUntilS])).toEqual([
      ["dev-1", "inverter", 7],
      ["dev-1", "meter", 6],
      ["dev-2", "meter", 5],
    ]);
    expect(store.getWatermark("dev-2", "inverter")).toBeUndefined();
  });

  it("reject a watermark that is not a whole number of seconds", () => {
    expect(() => store.advanceWatermark("dev-1", "inverter", 1.5)).toThrow(RangeError);
    expect(() => store.advanceWatermark("dev-1", "inverter", -1)).toThrow(RangeError);
    expect(() => store.advanceWatermark("", "inverter", 1)).toThrow(RangeError);
  });
});

describe("value catalog", () => {
  it("reports ids seen for the first time and keeps first/last seen", () => {
    expect(store.refreshCatalog("dev-1", "inverter", ["b", "a", "a"], T0)).toEqual(["a", "b"]);
    expect(store.refreshCatalog("dev-1", "inverter", ["c", "a"], T1)).toEqual(["c"]);
    expect(store.refreshCatalog("dev-1", "inverter", ["a", "b", "c"], T2)).toEqual([]);
    expect(store.refreshCatalog("dev-1", "meter", ["a"], T2)).toEqual(["a"]);
    expect(store.catalog("dev-1", "inverter")).toEqual(["a", "b", "c"]);
    expect(store.catalog("dev-2", "inverter")).toEqual([]);

    store.close();
    const raw = new Database(dbPath, { readonly: true });
    const rows = raw
      .prepare(
        "SELECT value_id, first_seen, last_seen FROM value_catalog WHERE resource_id = 'inverter' ORDER BY value_id",
      )
      .all();
    raw.close();
    expect(rows).toEqual([
      { value_id: "a", first_seen: T0.toISOString(), last_seen: T2.toISOString() },
      { value_id: "b", first_seen: T0.toISOString(), last_seen: T2.toISOString() },
      { value_id: "c", first_seen: T1.toISOString(), last_seen: T2.toISOString() },
    ]);
  });

  it("writes nothing when an id is invalid", () => {
    expect(() => store.refreshCatalog("dev-1", "inverter", ["a", ""], T0)).toThrow(RangeError);
    expect(store.catalog("dev-1", "inverter")).toEqual([]);
  });
});

describe("backfill jobs", () => {
  it("jobKey is stable: value id order and duplicates and the reason do not matter", () => {
    const key = StateStore.jobKey(SPEC);
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(StateStore.jobKey({ ...SPEC, valueIds: ["e_a", "e_b", "e_a"] })).toBe(key);
    expect(StateStore.jobKey({ ...SPEC, reason: "new_value" })).toBe(key);
    expect(StateStore.jobKey({ ...SPEC, toS: SPEC.toS + 1 })).not.toBe(key);
    expect(StateStore.jobKey({ ...SPEC, deviceId: "dev-2" })).not.toBe(key);
    expect(StateStore.jobKey({ ...SPEC, valueIds: ["e_a"] })).not.toBe(key);
    // the documented formula
    const identity = JSON.stringify(["dev-1", "inverter", ["e_a", "e_b"], SPEC.fromS, SPEC.toS]);
    expect(key).toBe(createHash("sha256").update(identity).digest("hex"));
  });

  it("a new spec inserts a pending job; the same spec resumes it", () => {
    const created = store.createOrResumeBackfillJob(SPEC, 4, T0);
    expect(created.resumed).toBe(false);
    expect(created.job).toEqual({
      id: expect.any(Number),
      key: StateStore.jobKey(SPEC),
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
      createdAt: T0.toISOString(),
      updatedAt: T0.toISOString(),
    });

    store.setBackfillStatus(created.job.id, "running", undefined, T1);
    const again = store.createOrResumeBackfillJob({ ...SPEC, valueIds: ["e_a", "e_b"] }, 4, T1);
    expect(again.resumed).toBe(true);
    expect(again.job.id).toBe(created.job.id);
    expect(again.job.status).toBe("running");

    store.setBackfillStatus(created.job.id, "failed", "API error 503", T1);
    const afterFailure = store.createOrResumeBackfillJob(SPEC, 4, T2);
    expect(afterFailure).toMatchObject({ resumed: true, job: { id: created.job.id } });
    expect(afterFailure.job.lastError).toBe("API error 503");
  });

  it("a done job is not resumed: the same spec makes a new job", () => {
    const first = store.createOrResumeBackfillJob(SPEC, 2, T0).job;
    store.setBackfillStatus(first.id, "done", null, T1);
    const second = store.createOrResumeBackfillJob(SPEC, 2, T2);
    expect(second.resumed).toBe(false);
    expect(second.job.id).not.toBe(first.id);
    expect(second.job.key).toBe(first.key);
    expect(store.getBackfillJob(first.id)?.status).toBe("done");
  });

  it("a resumed job split into a different number of chunks restarts its chunks", () => {
    const { job } = store.createOrResumeBackfillJob(SPEC, 4, T0);
    store.recordChunkDone(job.id, 0, 10, 1, T0);
    const resumed = store.createOrResumeBackfillJob(SPEC, 8, T1);
    expect(resumed).toMatchObject({
      resumed: true,
      job: { id: job.id, chunksTotal: 8, chunksDone: 0 },
    });
    expect(store.completedChunks(job.id)).toEqual(new Set());
  });

  it("rejects invalid specs", () => {
    expect(() => store.createOrResumeBackfillJob({ ...SPEC, fromS: SPEC.toS + 1 }, 1)).toThrow(
      /window is empty/,
    );
    expect(() => store.createOrResumeBackfillJob({ ...SPEC, valueIds: ["values_id"] }, 1)).toThrow(
      /values_id is a tag/,
    );
    expect(() => store.createOrResumeBackfillJob(SPEC, -1)).toThrow(RangeError);
    expect(() => store.createOrResumeBackfillJob({ ...SPEC, fromS: 1.5 }, 1)).toThrow(RangeError);
    expect(store.unfinishedBackfillJobs()).toEqual([]);
  });

  it("records chunks idempotently and keeps the counters", () => {
    const { job } = store.createOrResumeBackfillJob(SPEC, 3, T0);
    store.recordChunkDone(job.id, 1, 100, 2, T1);
    store.recordChunkDone(job.id, 0, 50, 1, T1);
    store.recordChunkDone(job.id, 1, 100, 2, T2); // a retry of a recorded chunk
    expect(store.completedChunks(job.id)).toEqual(new Set([0, 1]));
    expect(store.getBackfillJob(job.id)).toMatchObject({
      chunksDone: 2,
      points: 150,
      requests: 3,
      updatedAt: T2.toISOString(),
    });
    expect(() => store.recordChunkDone(job.id, 3, 1, 1)).toThrow(/out of range/);
    expect(() => store.recordChunkDone(job.id, -1, 1, 1)).toThrow(RangeError);
    expect(store.getBackfillJob(job.id)?.chunksDone).toBe(2);
  });

  it("setBackfillStatus keeps, sets or clears the last error", () => {
    const { job } = store.createOrResumeBackfillJob(SPEC, 1, T0);
    store.setBackfillStatus(job.id, "failed", "boom", T1);
    expect(store.getBackfillJob(job.id)).toMatchObject({
      status: "failed",
      lastError: "boom",
      updatedAt: T1.toISOString(),
    });
    store.setBackfillStatus(job.id, "running");
    expect(store.getBackfillJob(job.id)?.lastError).toBe("boom");
    store.setBackfillStatus(job.id, "done", null);
    expect(store.getBackfillJob(job.id)).toMatchObject({ status: "done", lastError: null });
    expect(() => store.setBackfillStatus(12345, "done")).toThrow(/no backfill job 12345/);
  });

  it("lists unfinished jobs oldest first and recent jobs newest first", () => {
    const a = store.createOrResumeBackfillJob({ ...SPEC, deviceId: "a" }, 1, T0).job;
    const b = store.createOrResumeBackfillJob({ ...SPEC, deviceId: "b" }, 1, T0).job;
    const c = store.createOrResumeBackfillJob({ ...SPEC, deviceId: "c" }, 1, T0).job;
    store.setBackfillStatus(b.id, "done");
    store.setBackfillStatus(c.id, "failed", "x");
    expect(store.unfinishedBackfillJobs().map((j) => j.id)).toEqual([a.id, c.id]);
    expect(store.recentBackfillJobs(2).map((j) => j.id)).toEqual([c.id, b.id]);
    expect(store.getBackfillJob(999)).toBeUndefined();
  });

  it("deleting a job deletes its chunks", () => {
    const { job } = store.createOrResumeBackfillJob(SPEC, 2, T0);
    store.recordChunkDone(job.id, 0, 1, 1);
    store.close();
    const raw = new Database(dbPath);
    raw.pragma("foreign_keys = ON");
    raw.prepare("DELETE FROM backfill_jobs WHERE id = ?").run(job.id);
    expect(raw.prepare("SELECT COUNT(*) FROM backfill_chunks").pluck().get()).toBe(0);
    raw.close();
    store = StateStore.open(dbPath);
  });
});

describe("runs", () => {
  it("start, finish and are listed newest first", () => {
    const sync = store.startRun("sync", T0);
    expect(store.lastRun()).toEqual({
      id: sync,
      kind: "sync",
      startedAt: T0.toISOString(),
      endedAt: null,
      status: "running",
    });
    store.finishRun(
      sync,
      { status: "partial", devices: 3, requests: 12, points: 400, errors: 1, detail: '{"d":1}' },
      T1,
    );
    const backfill = store.startRun("backfill", T1);
    store.finishRun(
      backfill,
      { status: "ok", devices: 1, requests: 2, points: 3, errors: 0, detail: null },
      T2,
    );
    expect(store.lastRun("sync")).toEqual({
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
    expect(store.lastRun()).toMatchObject({ id: backfill, status: "ok", detail: null });
    expect(store.recentRuns(10).map((r) => r.id)).toEqual([backfill, sync]);
    expect(store.recentRuns(1).map((r) => r.id)).toEqual([backfill]);
    expect(() =>
      store.finishRun(999, {
        status: "ok",
        devices: 0,
        requests: 0,
        points: 0,
        errors: 0,
        detail: null,
      }),
    ).toThrow(/no run 999/);
  });

  it("runs left running by a dead process are marked interrupted", () => {
    const done = store.startRun("sync", T0);
    store.finishRun(
      done,
      { status: "ok", devices: 1, requests: 1, points: 1, errors: 0, detail: null },
      T0,
    );
    const stale1 = store.startRun("sync", T1);
    const stale2 = store.startRun("backfill", T1);
    reopen();
    expect(store.markStaleRunsInterrupted(T2)).toBe(2);
    expect(store.markStaleRunsInterrupted(T2)).toBe(0);
    for (const id of [stale1, stale2]) {
      expect(store.recentRuns(5).find((r) => r.id === id)).toMatchObject({
        status: "interrupted",
        endedAt: T2.toISOString(),
      });
    }
    expect(store.lastRun("sync")).toMatchObject({ id: stale1, status: "interrupted" });
    expect(store.recentRuns(5).find((r) => r.id === done)?.status).toBe("ok");
  });

  it("lastRun is undefined without runs", () => {
    expect(store.lastRun()).toBeUndefined();
    expect(store.lastRun("backfill")).toBeUndefined();
  });
});

it("everything survives close and reopen", () => {
  store.advanceWatermark("dev-1", "inverter", 1234, T0);
  store.refreshCatalog("dev-1", "inverter", ["a", "b"], T0);
  const { job } = store.createOrResumeBackfillJob(SPEC, 3, T0);
  store.recordChunkDone(job.id, 2, 7, 1, T1);
  const run = store.startRun("backfill", T0);

  reopen();
  expect(store.getWatermark("dev-1", "inverter")).toBe(1234);
  expect(store.catalog("dev-1", "inverter")).toEqual(["a", "b"]);
  expect(store.refreshCatalog("dev-1", "inverter", ["a", "b"], T2)).toEqual([]);
  const resumed = store.createOrResumeBackfillJob(SPEC, 3, T2);
  expect(resumed).toMatchObject({ resumed: true, job: { id: job.id, chunksDone: 1, points: 7 } });
  expect(store.completedChunks(job.id)).toEqual(new Set([2]));
  expect(store.lastRun()).toMatchObject({ id: run, status: "running" });
});

describe("StateStore.transaction", () => {
  it("lands everything together, or nothing when the work throws", () => {
    const path = join(mkdtempSync(join(tmpdir(), "energy-etl-tx-")), "state.db");
    const store = StateStore.open(path);
    try {
      expect(() =>
        store.transaction(() => {
          store.refreshCatalog("d", "r", ["a", "b"]);
          store.advanceWatermark("d", "r", 100);
          throw new Error("job creation failed");
        }),
      ).toThrow("job creation failed");
      expect(store.catalog("d", "r")).toEqual([]);
      expect(store.getWatermark("d", "r")).toBeUndefined();
      expect(store.transaction(() => store.refreshCatalog("d", "r", ["a"]))).toEqual(["a"]);
      expect(store.catalog("d", "r")).toEqual(["a"]);
    } finally {
      store.close();
    }
  });
});
