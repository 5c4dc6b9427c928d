import { existsSync, writeFileSync } from "node:fs";
import { openDatabase, schemaVersion } from "../../src/state/database.js";
import { MigrationError } from "../../src/state/migrator.js";
import { StateStore } from "../../src/state/state-store.js";
import type { BackfillSpec } from "../../src/state/types.js";
import { queueJob } from "../support/backfill-jobs.js";
import { commitWindow } from "../support/cursors.js";
import { T0, T1, T2, useTempDir } from "./support.js";

const tmp = useTempDir("energy-etl-database-");

const SPEC: BackfillSpec = {
  deviceId: "dev-1",
  resourceId: "inverter",
  valueIds: ["e_a"],
  fromS: 1_700_000_000,
  toS: 1_700_086_400,
  reason: "manual",
};

describe("StateStore.open", () => {
  it("creates the file and its directory, applies the migrations once, and records them", () => {
    const path = tmp.file("sub", "dir", "state.db");
    const store = tmp.open(path);
    expect(existsSync(path)).toBe(true);
    expect(store.path).toBe(path);
    expect(store.appliedOnOpen).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(Object.isFrozen(store.appliedOnOpen)).toBe(true);
    expect(store.schemaVersion()).toBe(7);
    store.close();

    const again = tmp.open(path);
    expect(again.appliedOnOpen).toEqual([]);
    expect(again.schemaVersion()).toBe(7);
    const recorded = tmp
      .raw(path)
      .prepare("SELECT version, name FROM schema_migrations ORDER BY version")
      .all();
    expect(recorded).toEqual([
      { version: 1, name: "initial" },
      { version: 2, name: "cursors_dead_letters" },
      { version: 3, name: "leases_locks" },
      { version: 4, name: "catalog_cadence" },
      { version: 5, name: "member_dead_letters" },
      { version: 6, name: "lookback_cadence" },
      { version: 7, name: "rollup_marks" },
    ]);
  });

  it("puts the database in WAL mode", () => {
    const path = tmp.file("state.db");
    tmp.open(path).close();
    expect(tmp.raw(path).pragma("journal_mode", { simple: true })).toBe("wal");
  });

  it("sets busy_timeout 5000, foreign_keys ON and synchronous NORMAL (WAL) on its connection", () => {
    const { db, appliedOnOpen } = openDatabase(tmp.file("state.db"));
    try {
      expect(appliedOnOpen).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(db.pragma("busy_timeout", { simple: true })).toBe(5000);
      expect(db.pragma("foreign_keys", { simple: true })).toBe(1);
      // 1 = NORMAL: no flush per commit (a power cut re-fetches, see database.ts)
      expect(db.pragma("synchronous", { simple: true })).toBe(1);
      expect(schemaVersion(db)).toBe(7);
    } finally {
      db.close();
    }
  });

  it("with migrate: false, a database with pending migrations is an error naming them", () => {
    const fresh = tmp.file("fresh.db");
    expect(() => StateStore.open(fresh, { migrate: false })).toThrow(MigrationError);
    expect(() => StateStore.open(fresh, { migrate: false })).toThrow(
      /needs migration\(s\) 001_initial, 002_cursors_dead_letters, 003_leases_locks, 004_catalog_cadence, 005_member_dead_letters, 006_lookback_cadence, 007_rollup_marks; run `energy-etl migrate`/,
    );
    tmp.open(fresh).close();
    const migrated = tmp.open(fresh, { migrate: false });
    expect(migrated.appliedOnOpen).toEqual([]);
    expect(migrated.schemaVersion()).toBe(7);
  });

  it("a database written by a newer program is an error", () => {
    const path = tmp.file("state.db");
    tmp.open(path).close();
    const raw = tmp.raw(path);
    raw.prepare("INSERT INTO schema_migrations VALUES (99, 'future', 'x')").run();
    raw.close();
    expect(() => StateStore.open(path)).toThrow(/has migration\(s\) 099_future/);
    expect(() => StateStore.open(path, { migrate: false })).toThrow(/099_future/);
  });

  it("a path that cannot be created is an error naming it", () => {
    const file = tmp.file("not-a-dir");
    writeFileSync(file, "");
    const path = `${file}/state.db`;
    expect(() => StateStore.open(path)).toThrow(`cannot open state database ${path}`);
  });

  it("works in memory", () => {
    const memory = tmp.open(":memory:");
    expect(memory.appliedOnOpen).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(memory.schemaVersion()).toBe(7);
    memory.catalog.refresh("d", "r", ["a"], T0);
    expect(memory.catalog.list("d", "r")).toEqual(["a"]);
  });

  it("close is idempotent", () => {
    const store = tmp.open(tmp.file("state.db"));
    store.close();
    expect(() => store.close()).not.toThrow();
  });
});

it("everything survives close and reopen", () => {
  const path = tmp.file("state.db");
  let store = tmp.open(path);
  store.cursors.begin("dev-1", "inverter", 1000, T0);
  commitWindow(
    store.cursors,
    "dev-1",
    "inverter",
    { fetchedUntilS: 1234, newestRecordS: 1200 },
    T0,
  );
  store.catalog.refresh("dev-1", "inverter", ["a", "b"], T0);
  const { job } = queueJob(store.jobs, { ...SPEC, valueIds: ["a"] }, 3, T0);
  store.jobs.recordChunkDone(job.id, 2, { points: 7, requests: 1 }, T1);
  const run = store.runs.start("backfill", T0);
  store.deadLetters.add(
    {
      kind: "row",
      deviceId: "dev-1",
      resourceId: "inverter",
      windowFromS: 1000,
      windowToS: 2000,
      valueIds: ["a"],
      payload: '{"bad":true}',
      error: "bad row",
    },
    T0,
  );
  store.close();

  store = tmp.open(path);
  expect(store.cursors.get("dev-1", "inverter")).toMatchObject({
    fetchedUntilS: 1234,
    newestRecordS: 1200,
    startedS: 1000,
  });
  expect(store.catalog.list("dev-1", "inverter")).toEqual(["a", "b"]);
  expect(store.catalog.refresh("dev-1", "inverter", ["a", "b"], T2)).toEqual([]);
  const resumed = queueJob(store.jobs, { ...SPEC, valueIds: ["a"] }, 3, T2);
  expect(resumed).toMatchObject({ resumed: true, job: { id: job.id, chunksDone: 1, points: 7 } });
  expect(store.jobs.completedChunks(job.id)).toEqual(new Set([2]));
  expect(store.runs.last()).toMatchObject({ id: run, status: "running" });
  expect(store.deadLetters.count()).toBe(1);
});

describe("StateStore.transaction", () => {
  it("returns what the work returns, and its writes land", () => {
    const store = tmp.open(tmp.file("state.db"));
    expect(store.transaction(() => store.catalog.refresh("d", "r", ["a"], T0))).toEqual(["a"]);
    expect(store.catalog.list("d", "r")).toEqual(["a"]);
  });

  it("writes nothing, in any store, when the work throws (nested store transactions too)", () => {
    const store = tmp.open(tmp.file("state.db"));
    const before = queueJob(store.jobs, { ...SPEC, deviceId: "before" }, 2, T0).job;
    expect(() =>
      store.transaction(() => {
        // each of these runs its own (nested: savepoint) transaction
        store.catalog.refresh("d", "r", ["a", "b"], T1);
        store.cursors.begin("d", "r", 100, T1);
        commitWindow(store.cursors, "d", "r", { fetchedUntilS: 200, newestRecordS: 150 }, T1);
        const { job } = queueJob(store.jobs, SPEC, 2, T1);
        store.jobs.recordChunkDone(job.id, 0, { points: 5, requests: 1 }, T1);
        store.jobs.recordChunkDone(before.id, 1, { points: 3, requests: 1 }, T1);
        store.runs.start("sync", T1);
        store.deadLetters.add(
          {
            kind: "line",
            deviceId: "d",
            resourceId: "r",
            windowFromS: 100,
            windowToS: 200,
            valueIds: [],
            payload: "m f=1 1",
            error: "refused",
          },
          T1,
        );
        throw new Error("job creation failed");
      }),
    ).toThrow("job creation failed");

    expect(store.catalog.list("d", "r")).toEqual([]);
    expect(store.cursors.list()).toEqual([]);
    expect(store.jobs.unfinished().map((j) => j.id)).toEqual([before.id]);
    expect(store.jobs.get(before.id)).toMatchObject({ chunksDone: 0, points: 0 });
    expect(store.jobs.completedChunks(before.id)).toEqual(new Set());
    expect(store.runs.last()).toBeUndefined();
    expect(store.deadLetters.count()).toBe(0);
  });

  it("a store call that throws inside it can be caught; the rest lands", () => {
    const store = tmp.open(tmp.file("state.db"));
    const { job } = queueJob(store.jobs, SPEC, 1, T0);
    store.transaction(() => {
      store.catalog.refresh("d", "r", ["a"], T1);
      expect(() => store.jobs.recordChunkDone(job.id, 1, { points: 1, requests: 1 }, T1)).toThrow(
        /out of range/,
      );
      store.jobs.recordChunkDone(job.id, 0, { points: 4, requests: 2 }, T1);
    });
    expect(store.catalog.list("d", "r")).toEqual(["a"]);
    expect(store.jobs.get(job.id)).toMatchObject({ chunksDone: 1, points: 4, requests: 2 });
  });

  it("holds the write lock from its start, so a read before the first write cannot go stale", () => {
    // Another process (a connection that does not wait) commits between the transaction's first
    // read and its first write. With a deferred transaction that write fails with SQLITE_BUSY
    // (a stale snapshot, which busy_timeout does not retry); holding the lock from the start
    // keeps the other process out until the transaction ends instead.
    const path = tmp.file("state.db");
    const store = tmp.open(path);
    const other = tmp.raw(path);
    other.pragma("busy_timeout = 0");
    let otherWrote = false;
    expect(() =>
      store.transaction(() => {
        // read first, as JobStore.queue does (its own transaction is immediate)
        store.jobs.unfinished();
        try {
          other
            .prepare("INSERT INTO runs (kind, started_at, status) VALUES ('sync', 'x', 'ok')")
            .run();
          otherWrote = true;
        } catch {
          otherWrote = false;
        }
        queueJob(store.jobs, SPEC, 1, T0);
        store.cursors.begin("d", "r", 100, T0);
      }),
    ).not.toThrow();
    expect(store.cursors.get("d", "r")?.startedS).toBe(100);
    expect(otherWrote).toBe(false);
  });

  it("is visible to another connection only once it commits", () => {
    const path = tmp.file("state.db");
    const store = tmp.open(path);
    const other = tmp.open(path);
    store.transaction(() => {
      store.catalog.refresh("d", "r", ["a"], T0);
      expect(other.catalog.list("d", "r")).toEqual([]);
    });
    expect(other.catalog.list("d", "r")).toEqual(["a"]);
  });
});
