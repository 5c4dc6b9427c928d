/** The real upgrade path: a database written by the 001 schema, then opened (applies 002). */
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import type Database from "better-sqlite3";
import { jobKey } from "../../src/state/job-row.js";
import { appliedMigrations, MIGRATIONS_DIR, migrate } from "../../src/state/migrator.js";
import { processOwner } from "../../src/state/owner.js";
import type { StateStore } from "../../src/state/state-store.js";
import type { BackfillJob, BackfillSpec } from "../../src/state/types.js";
import { queueJob, storedJobs } from "../support/backfill-jobs.js";
import { commitWindow } from "../support/cursors.js";
import { T0, T1, T2, useTempDir } from "./support.js";

const tmp = useTempDir("energy-etl-migration-002-");

const WATERMARKS = [
  {
    device: "dev-1",
    resource: "inverter",
    syncedUntil: 1_700_000_000,
    updatedAt: "2023-11-14T22:13:20.000Z",
  },
  {
    device: "dev-1",
    resource: "meter",
    syncedUntil: 1_700_000_500,
    updatedAt: "2023-11-14T22:21:40.000Z",
  },
  {
    device: "dev-2",
    resource: "inverter",
    syncedUntil: 1_699_990_000,
    updatedAt: "2023-11-14T19:26:40.000Z",
  },
] as const;

interface OldJob {
  readonly id: number;
  readonly spec: BackfillSpec;
  readonly status: "pending" | "running" | "done" | "failed";
  readonly chunksTotal: number;
  readonly chunks: readonly number[];
  readonly requests: number;
  readonly lastError: string | null;
}

const spec = (deviceId: string, reason: BackfillSpec["reason"]): BackfillSpec => ({
  deviceId,
  resourceId: "inverter",
  valueIds: ["e_a", "e_b"],
  fromS: 1_690_000_000,
  toS: 1_690_086_400,
  reason,
});

// ids with gaps, to see that they are kept, not renumbered
const OLD_JOBS: readonly OldJob[] = [
  {
    id: 3,
    spec: spec("dev-p", "manual"),
    status: "pending",
    chunksTotal: 4,
    chunks: [],
    requests: 0,
    lastError: null,
  },
  {
    id: 5,
    spec: spec("dev-r", "new_value"),
    status: "running",
    chunksTotal: 4,
    chunks: [0, 2],
    requests: 3,
    lastError: null,
  },
  {
    id: 8,
    spec: spec("dev-d", "manual"),
    status: "done",
    chunksTotal: 3,
    chunks: [0, 1, 2],
    requests: 6,
    lastError: null,
  },
  {
    id: 13,
    spec: spec("dev-f", "new_value"),
    status: "failed",
    chunksTotal: 5,
    chunks: [4],
    requests: 9,
    lastError: "API error 503",
  },
];

const CHUNK_POINTS = 10;
const OLD_AT = "2023-11-01T00:00:00.000Z";

/** Creates a database at `path` with only 001_initial applied, the way the previous release did. */
function database001(path: string): Database.Database {
  const only001 = tmp.file("migrations-001");
  mkdirSync(only001, { recursive: true });
  copyFileSync(join(MIGRATIONS_DIR, "001_initial.sql"), join(only001, "001_initial.sql"));
  const db = tmp.raw(path);
  db.pragma("journal_mode = WAL");
  expect(migrate(db, only001)).toEqual([1]);
  return db;
}

function fill001(db: Database.Database): void {
  const watermark = db.prepare(
    "INSERT INTO watermarks (device_id, resource_id, synced_until, updated_at) VALUES (?, ?, ?, ?)",
  );
  for (const w of WATERMARKS) watermark.run(w.device, w.resource, w.syncedUntil, w.updatedAt);

  const job = db.prepare(
    `INSERT INTO backfill_jobs (id, key, device_id, resource_id, value_ids, from_s, to_s, reason,
       status, chunks_total, chunks_done, points, requests, last_error, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const chunk = db.prepare(
    "INSERT INTO backfill_chunks (job_id, chunk_index, points, done_at) VALUES (?, ?, ?, ?)",
  );
  for (const j of OLD_JOBS) {
    job.run(
      j.id,
      jobKey(j.spec),
      j.spec.deviceId,
      j.spec.resourceId,
      JSON.stringify(j.spec.valueIds),
      j.spec.fromS,
      j.spec.toS,
      j.spec.reason,
      j.status,
      j.chunksTotal,
      j.chunks.length,
      j.chunks.length * CHUNK_POINTS,
      j.requests,
      j.lastError,
      OLD_AT,
      OLD_AT,
    );
    for (const index of j.chunks) chunk.run(j.id, index, CHUNK_POINTS, OLD_AT);
  }

  const value = db.prepare(
    `INSERT INTO value_catalog (device_id, resource_id, value_id, first_seen, last_seen)
     VALUES (?, ?, ?, ?, ?)`,
  );
  value.run("dev-1", "inverter", "e_a", OLD_AT, OLD_AT);
  value.run("dev-1", "inverter", "e_b", OLD_AT, OLD_AT);

  const run = db.prepare(
    `INSERT INTO runs (kind, started_at, ended_at, status, devices, requests, points, errors, detail)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  run.run("sync", OLD_AT, OLD_AT, "ok", 2, 10, 100, 0, null);
  run.run("backfill", OLD_AT, null, "running", null, null, null, null, null);
}

function expectedJob(j: OldJob): BackfillJob {
  return {
    id: j.id,
    key: jobKey(j.spec),
    deviceId: j.spec.deviceId,
    resourceId: j.spec.resourceId,
    valueIds: [...j.spec.valueIds],
    fromS: j.spec.fromS,
    toS: j.spec.toS,
    reason: j.spec.reason,
    status: j.status,
    chunksTotal: j.chunksTotal,
    chunksDone: j.chunks.length,
    points: j.chunks.length * CHUNK_POINTS,
    requests: j.requests,
    lastError: j.lastError,
    attempts: 0,
    createdAt: OLD_AT,
    updatedAt: OLD_AT,
  };
}

let path: string;
let raw: Database.Database;
let store: StateStore;

beforeEach(() => {
  path = tmp.file("state.db");
  const old = database001(path);
  fill001(old);
  old.close();
  store = tmp.open(path);
  raw = tmp.raw(path);
});

function names(type: "table" | "index", table?: string): string[] {
  const rows = raw
    .prepare(
      `SELECT name FROM sqlite_master WHERE type = ? AND (? IS NULL OR tbl_name = ?)
       AND name NOT LIKE 'sqlite_%' ORDER BY name`,
    )
    .pluck()
    .all(type, table ?? null, table ?? null);
  return rows.map(String);
}

it("opening applies 002 (and the later ones)", () => {
  expect(store.appliedOnOpen).toEqual([2, 3, 4, 5, 6, 7]);
  expect(store.schemaVersion()).toBe(7);
  expect([...appliedMigrations(raw)]).toEqual([
    [1, "initial"],
    [2, "cursors_dead_letters"],
    [3, "leases_locks"],
    [4, "catalog_cadence"],
    [5, "member_dead_letters"],
    [6, "lookback_cadence"],
    [7, "rollup_marks"],
  ]);
});

it("with migrate: false, a 001 database is an error naming the pending ones", () => {
  const other = tmp.file("other.db");
  database001(other).close();
  expect(() => tmp.open(other, { migrate: false })).toThrow(
    /needs migration\(s\) 002_cursors_dead_letters, 003_leases_locks, 004_catalog_cadence, 005_member_dead_letters, 006_lookback_cadence, 007_rollup_marks; run `energy-etl migrate`/,
  );
});

describe("watermarks become cursors", () => {
  it("each watermark is a cursor whose newest record, fetched_until and start are the watermark", () => {
    expect(store.cursors.list()).toEqual(
      WATERMARKS.map((w) => ({
        deviceId: w.device,
        resourceId: w.resource,
        newestRecordS: w.syncedUntil,
        fetchedUntilS: w.syncedUntil,
        startedS: w.syncedUntil,
        failures: 0,
        updatedAt: w.updatedAt,
      })),
    );
  });

  it("the watermarks table is gone; cursors and dead_letters exist", () => {
    expect(names("table")).toEqual([
      "backfill_chunks",
      "backfill_jobs",
      "catalog_reads",
      "cursors",
      "dead_letters",
      "device_resources",
      "devices",
      "locks",
      "rollup_marks",
      "runs",
      "schema_migrations",
      "value_catalog",
    ]);
    expect(store.deadLetters.count()).toBe(0);
  });

  it("the first sync continues after the watermark (its window starts at newestRecordS + 1 - lookback)", () => {
    const cursor = store.cursors.get("dev-1", "inverter");
    expect(cursor?.newestRecordS).toBe(1_700_000_000);
    expect(cursor).not.toHaveProperty("nextProbeS");
    expect(cursor).not.toHaveProperty("retryAtS");
    // a migrated cursor works like any other
    expect(store.cursors.begin("dev-1", "inverter", 1, T0)).toEqual(cursor);
    const committed = commitWindow(
      store.cursors,
      "dev-1",
      "inverter",
      { fetchedUntilS: 1_700_003_600, newestRecordS: 1_700_003_000 },
      T1,
    );
    expect(committed).toMatchObject({
      newestRecordS: 1_700_003_000,
      fetchedUntilS: 1_700_003_600,
      startedS: 1_700_000_000,
    });
  });
});

describe("backfill jobs survive", () => {
  it("every job keeps its id, spec, status and counters, with no attempts", () => {
    expect(storedJobs(store)).toEqual(OLD_JOBS.map(expectedJob));
    expect(store.jobs.unfinished().map((j) => j.id)).toEqual([3, 5, 13]);
  });

  it("every job keeps its chunks", () => {
    for (const j of OLD_JOBS) {
      expect(store.jobs.completedChunks(j.id)).toEqual(new Set(j.chunks));
    }
    const rows = raw
      .prepare(
        "SELECT job_id, chunk_index, points, done_at FROM backfill_chunks ORDER BY job_id, chunk_index",
      )
      .all();
    expect(rows).toEqual(
      OLD_JOBS.flatMap((j) =>
        j.chunks.map((index) => ({
          job_id: j.id,
          chunk_index: index,
          points: CHUNK_POINTS,
          done_at: OLD_AT,
        })),
      ),
    );
  });

  it("old jobs are due as before, and the same spec resumes its job", () => {
    expect(store.jobs.due(2_000_000_000).map((j) => j.id)).toEqual([3, 5, 13]);
    const running = OLD_JOBS[1];
    if (running === undefined) throw new Error("fixture");
    const resumed = queueJob(store.jobs, running.spec, running.chunksTotal, T1);
    expect(resumed).toMatchObject({ resumed: true, job: { id: 5, chunksDone: 2 } });
    store.jobs.recordChunkDone(5, 1, { points: 1, requests: 1, newestRecordS: 1_690_001_000 }, T1);
    expect(store.jobs.get(5)).toMatchObject({ chunksDone: 3, newestRecordS: 1_690_001_000 });
  });

  it("a new job gets an id after the migrated ones", () => {
    const { job } = queueJob(store.jobs, spec("dev-new", "audit"), 1, T2);
    expect(job.id).toBeGreaterThan(13);
  });

  it("ids are never reused: a job deleted before the upgrade keeps its id taken", () => {
    const other = tmp.file("deleted.db");
    const old = database001(other);
    fill001(old);
    old.prepare("DELETE FROM backfill_jobs WHERE id = 13").run();
    old.close();
    const upgraded = tmp.open(other);
    const { job } = queueJob(upgraded.jobs, spec("dev-new", "audit"), 1, T2);
    expect(job.id).toBe(14);
  });

  it("the chunk → job foreign key still holds: deleting a job cascades to its chunks", () => {
    expect(raw.pragma("foreign_key_check")).toEqual([]);
    expect(raw.pragma("foreign_key_list(backfill_chunks)")).toEqual([
      expect.objectContaining({
        table: "backfill_jobs",
        from: "job_id",
        to: "id",
        on_delete: "CASCADE",
      }),
    ]);
    raw.prepare("DELETE FROM backfill_jobs WHERE id = 5").run();
    expect(
      raw.prepare("SELECT DISTINCT job_id FROM backfill_chunks ORDER BY job_id").pluck().all(),
    ).toEqual([8, 13]);
  });

  it("the chunk → job foreign key still holds: a chunk of a missing job is refused", () => {
    expect(() =>
      raw
        .prepare(
          "INSERT INTO backfill_chunks (job_id, chunk_index, points, done_at) VALUES (?, 0, 0, ?)",
        )
        .run(999, OLD_AT),
    ).toThrow(/FOREIGN KEY constraint failed/);
  });

  it("the status CHECK allows parked (and still refuses an unknown status)", () => {
    const parked = store.jobs.recordFailure(13, "API error 503", 0, 1, T1);
    expect(parked).toMatchObject({ id: 13, status: "parked", attempts: 1 });
    expect(store.jobs.parked().map((j) => j.id)).toEqual([13]);
    expect(() =>
      raw.prepare("UPDATE backfill_jobs SET status = 'bogus' WHERE id = 3").run(),
    ).toThrow(/CHECK constraint failed/);
    const { job } = queueJob(store.jobs, spec("dev-parked", "parked"), 2, T2, "parked");
    expect(job.status).toBe("parked");
  });

  it("the job indexes exist again", () => {
    expect(names("index", "backfill_jobs")).toEqual([
      "backfill_jobs_key_status",
      "backfill_jobs_status",
    ]);
    const columns = (index: string) =>
      raw
        .prepare("SELECT name FROM pragma_index_info(?) ORDER BY seqno")
        .pluck()
        .all(index)
        .map(String);
    expect(columns("backfill_jobs_key_status")).toEqual(["key", "status"]);
    expect(columns("backfill_jobs_status")).toEqual(["status", "id"]);
  });
});

it("the value catalog and the runs are kept", () => {
  expect(store.catalog.list("dev-1", "inverter")).toEqual(["e_a", "e_b"]);
  expect(store.catalog.refresh("dev-1", "inverter", ["e_a", "e_c"], T0)).toEqual(["e_c"]);
  expect(store.runs.last()).toMatchObject({ id: 2, kind: "backfill", status: "running" });
  expect(store.runs.recentFinished("sync", 10).map((r) => [r.id, r.status])).toEqual([[1, "ok"]]);
  expect(store.runs.markStaleInterrupted(T1, processOwner("test"))).toBe(1);
});
