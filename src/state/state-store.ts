import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import Database from "better-sqlite3";
import type { Logger } from "pino";
import { z } from "zod";
import {
  MIGRATIONS_DIR,
  MigrationError,
  migrate,
  migrationLabel,
  pendingMigrations,
} from "./migrator.js";
import type {
  BackfillJob,
  BackfillSpec,
  BackfillStatus,
  RunKind,
  RunRecord,
  RunSummary,
  Watermark,
} from "./types.js";

/** Options of {@link StateStore.open}. */
export interface StateStoreOptions {
  readonly logger?: Logger;
  /**
   * Apply pending migrations (default true). When false, a database with pending migrations is an
   * error telling to run `energy-etl migrate`.
   */
  readonly migrate?: boolean;
}

const BUSY_TIMEOUT_MS = 5000;
const UNFINISHED = "('pending', 'running', 'failed')";

// ---- row shapes (better-sqlite3 returns unknown rows; these validate and map them) ----

const count = z.number().int();
const backfillStatus = z.enum(["pending", "running", "done", "failed"]);
const jsonStringArray = z
  .string()
  .transform((text, ctx): unknown => {
    try {
      return JSON.parse(text);
    } catch {
      ctx.addIssue({ code: "custom", message: "value_ids is not JSON" });
      return z.NEVER;
    }
  })
  .pipe(z.array(z.string()));

const watermarkRow = z
  .object({
    device_id: z.string(),
    resource_id: z.string(),
    synced_until: count,
    updated_at: z.string(),
  })
  .transform(
    (r): Watermark => ({
      deviceId: r.device_id,
      resourceId: r.resource_id,
      syncedUntilS: r.synced_until,
      updatedAt: r.updated_at,
    }),
  );

const backfillJobRow = z
  .object({
    id: count,
    key: z.string(),
    device_id: z.string(),
    resource_id: z.string(),
    value_ids: jsonStringArray,
    from_s: count,
    to_s: count,
    reason: z.enum(["manual", "new_value"]),
    status: backfillStatus,
    chunks_total: count,
    chunks_done: count,
    points: count,
    requests: count,
    last_error: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .transform(
    (r): BackfillJob => ({
      id: r.id,
      key: r.key,
      deviceId: r.device_id,
      resourceId: r.resource_id,
      valueIds: r.value_ids,
      fromS: r.from_s,
      toS: r.to_s,
      reason: r.reason,
      status: r.status,
      chunksTotal: r.chunks_total,
      chunksDone: r.chunks_done,
      points: r.points,
      requests: r.requests,
      lastError: r.last_error,
      createdAt: r.created_at,
      updatedAt: r.updated_at,
    }),
  );

const runRow = z
  .object({
    id: count,
    kind: z.enum(["sync", "backfill"]),
    started_at: z.string(),
    ended_at: z.string().nullable(),
    status: z.enum(["running", "ok", "partial", "failed", "interrupted"]),
    devices: count.nullable(),
    requests: count.nullable(),
    points: count.nullable(),
    errors: count.nullable(),
    detail: z.string().nullable(),
  })
  .transform(
    (r): RunRecord => ({
      id: r.id,
      kind: r.kind,
      startedAt: r.started_at,
      endedAt: r.ended_at,
      status: r.status,
      ...(r.devices === null ? {} : { devices: r.devices }),
      ...(r.requests === null ? {} : { requests: r.requests }),
      ...(r.points === null ? {} : { points: r.points }),
      ...(r.errors === null ? {} : { errors: r.errors }),
      ...(r.ended_at === null && r.detail === null ? {} : { detail: r.detail }),
    }),
  );

/** Validates a row (or a single plucked value) read from the database. */
function parseRow<T>(schema: z.ZodType<T>, row: unknown, what: string): T {
  const result = schema.safeParse(row);
  if (!result.success) {
    throw new Error(
      `state database: unexpected ${what}: ${z.prettifyError(result.error)} in ${JSON.stringify(row)}`,
    );
  }
  return result.data;
}

function parseRows<T>(schema: z.ZodType<T>, rows: readonly unknown[], what: string): T[] {
  return rows.map((row) => parseRow(schema, row, what));
}

// ---- argument checks ----

function requireInteger(name: string, value: number, min = 0): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new RangeError(`${name} must be an integer >= ${min}, got ${value}`);
  }
}

function requireText(name: string, value: string): void {
  if (typeof value !== "string" || value.length === 0) {
    throw new RangeError(`${name} must be a non-empty string`);
  }
}

/** Value ids without duplicates, in a stable (code unit) order. */
function sortedIds(ids: readonly string[]): string[] {
  return [...new Set(ids)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** An error's message (also for errors of another realm, e.g. better-sqlite3's under jest). */
function messageOf(error: unknown): string {
  if (typeof error === "object" && error !== null && "message" in error) {
    if (typeof error.message === "string") return error.message;
  }
  return String(error);
}

// ---- statements ----

function prepareStatements(db: Database.Database) {
  type Key = { deviceId: string; resourceId: string };
  return {
    schemaVersion: db
      .prepare<[]>("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
      .pluck(),

    getWatermark: db
      .prepare<Key>(
        "SELECT synced_until FROM watermarks WHERE device_id = @deviceId AND resource_id = @resourceId",
      )
      .pluck(),
    listWatermarks: db.prepare<[]>("SELECT * FROM watermarks ORDER BY device_id, resource_id"),
    advanceWatermark: db
      .prepare<Key & { untilS: number; now: string }>(
        `INSERT INTO watermarks (device_id, resource_id, synced_until, updated_at)
         VALUES (@deviceId, @resourceId, @untilS, @now)
         ON CONFLICT (device_id, resource_id) DO UPDATE SET
           synced_until = excluded.synced_until,
           updated_at = excluded.updated_at
         WHERE excluded.synced_until > watermarks.synced_until
         RETURNING synced_until`,
      )
      .pluck(),

    catalogInsert: db.prepare<Key & { valueId: string; now: string }>(
      `INSERT INTO value_catalog (device_id, resource_id, value_id, first_seen, last_seen)
       VALUES (@deviceId, @resourceId, @valueId, @now, @now)
       ON CONFLICT (device_id, resource_id, value_id) DO NOTHING`,
    ),
    catalogTouch: db.prepare<Key & { valueId: string; now: string }>(
      `UPDATE value_catalog SET last_seen = @now
       WHERE device_id = @deviceId AND resource_id = @resourceId AND value_id = @valueId`,
    ),
    catalogList: db
      .prepare<Key>(
        `SELECT value_id FROM value_catalog
         WHERE device_id = @deviceId AND resource_id = @resourceId ORDER BY value_id`,
      )
      .pluck(),

    jobByKey: db.prepare<[string]>(
      `SELECT * FROM backfill_jobs WHERE key = ? AND status IN ${UNFINISHED} ORDER BY id DESC LIMIT 1`,
    ),
    jobInsert: db.prepare<{
      key: string;
      deviceId: string;
      resourceId: string;
      valueIds: string;
      fromS: number;
      toS: number;
      reason: string;
      chunksTotal: number;
      now: string;
    }>(
      `INSERT INTO backfill_jobs (key, device_id, resource_id, value_ids, from_s, to_s, reason,
         status, chunks_total, created_at, updated_at)
       VALUES (@key, @deviceId, @resourceId, @valueIds, @fromS, @toS, @reason,
         'pending', @chunksTotal, @now, @now)
       RETURNING *`,
    ),
    jobRestart: db.prepare<{ id: number; chunksTotal: number; now: string }>(
      `UPDATE backfill_jobs SET chunks_total = @chunksTotal, chunks_done = 0, status = 'pending',
         updated_at = @now
       WHERE id = @id`,
    ),
    jobGet: db.prepare<[number]>("SELECT * FROM backfill_jobs WHERE id = ?"),
    jobsUnfinished: db.prepare<[]>(
      `SELECT * FROM backfill_jobs WHERE status IN ${UNFINISHED} ORDER BY id`,
    ),
    jobsRecent: db.prepare<[number]>("SELECT * FROM backfill_jobs ORDER BY id DESC LIMIT ?"),
    jobSetStatus: db.prepare<{ id: number; status: BackfillStatus; now: string }>(
      "UPDATE backfill_jobs SET status = @status, updated_at = @now WHERE id = @id",
    ),
    jobSetStatusAndError: db.prepare<{
      id: number;
      status: BackfillStatus;
      lastError: string | null;
      now: string;
    }>(
      `UPDATE backfill_jobs SET status = @status, last_error = @lastError, updated_at = @now
       WHERE id = @id`,
    ),
    jobAddChunk: db.prepare<{ id: number; points: number; requests: number; now: string }>(
      `UPDATE backfill_jobs SET
         chunks_done = (SELECT COUNT(*) FROM backfill_chunks WHERE job_id = @id),
         points = points + @points,
         requests = requests + @requests,
         updated_at = @now
       WHERE id = @id`,
    ),
    chunksDelete: db.prepare<[number]>("DELETE FROM backfill_chunks WHERE job_id = ?"),
    chunksOf: db
      .prepare<[number]>("SELECT chunk_index FROM backfill_chunks WHERE job_id = ?")
      .pluck(),
    chunkInsert: db.prepare<{ id: number; chunkIndex: number; points: number; now: string }>(
      `INSERT INTO backfill_chunks (job_id, chunk_index, points, done_at)
       VALUES (@id, @chunkIndex, @points, @now)
       ON CONFLICT (job_id, chunk_index) DO NOTHING`,
    ),

    runStart: db
      .prepare<[RunKind, string]>(
        "INSERT INTO runs (kind, started_at, status) VALUES (?, ?, 'running') RETURNING id",
      )
      .pluck(),
    runFinish: db.prepare<{
      id: number;
      status: RunSummary["status"];
      devices: number;
      requests: number;
      points: number;
      errors: number;
      detail: string | null;
      now: string;
    }>(
      `UPDATE runs SET status = @status, ended_at = @now, devices = @devices,
         requests = @requests, points = @points, errors = @errors, detail = @detail
       WHERE id = @id`,
    ),
    runsMarkStale: db.prepare<[string]>(
      "UPDATE runs SET status = 'interrupted', ended_at = ? WHERE status = 'running'",
    ),
    runLast: db.prepare<[]>("SELECT * FROM runs ORDER BY id DESC LIMIT 1"),
    runLastOfKind: db.prepare<[RunKind]>(
      "SELECT * FROM runs WHERE kind = ? ORDER BY id DESC LIMIT 1",
    ),
    runsRecent: db.prepare<[number]>("SELECT * FROM runs ORDER BY id DESC LIMIT ?"),
  };
}

/**
 * The ETL's state in SQLite (STATE_DB): watermarks, the value catalog, backfill jobs and their
 * chunks, and the run history. Synchronous (better-sqlite3); every multi-step change is one
 * transaction, so a crash leaves either the old or the new state.
 */
export class StateStore {
  /** The database file, as given to {@link StateStore.open}. */
  readonly path: string;
  /** Versions applied now by open() (empty when none were pending). */
  readonly appliedOnOpen: readonly number[];

  private readonly db: Database.Database;
  private readonly logger: Logger | undefined;
  private readonly sql: ReturnType<typeof prepareStatements>;
  private readonly refreshCatalogTx: Database.Transaction<
    (deviceId: string, resourceId: string, valueIds: readonly string[], now: string) => string[]
  >;
  private readonly createOrResumeTx: Database.Transaction<
    (spec: BackfillSpec, chunksTotal: number, now: string) => { job: BackfillJob; resumed: boolean }
  >;
  private readonly recordChunkTx: Database.Transaction<
    (jobId: number, chunkIndex: number, points: number, requests: number, now: string) => void
  >;

  private constructor(
    db: Database.Database,
    path: string,
    appliedOnOpen: readonly number[],
    logger: Logger | undefined,
  ) {
    this.db = db;
    this.path = path;
    this.appliedOnOpen = Object.freeze([...appliedOnOpen]);
    this.logger = logger;
    const sql = prepareStatements(db);
    this.sql = sql;

    this.refreshCatalogTx = db.transaction(
      (deviceId: string, resourceId: string, valueIds: readonly string[], now: string) => {
        const added: string[] = [];
        for (const valueId of sortedIds(valueIds)) {
          const row = { deviceId, resourceId, valueId, now };
          if (sql.catalogInsert.run(row).changes > 0) added.push(valueId);
          else sql.catalogTouch.run(row);
        }
        return added;
      },
    );

    this.createOrResumeTx = db.transaction(
      (spec: BackfillSpec, chunksTotal: number, now: string) => {
        const key = StateStore.jobKey(spec);
        const existing = sql.jobByKey.get(key);
        if (existing !== undefined) {
          const job = parseRow(backfillJobRow, existing, "backfill job");
          if (job.chunksTotal === chunksTotal) return { job, resumed: true };
          // The chunking changed (e.g. another chunk size): done chunk numbers mean other windows
          // now, so the job restarts from its first chunk (rewriting points is harmless).
          sql.chunksDelete.run(job.id);
          sql.jobRestart.run({ id: job.id, chunksTotal, now });
          this.logger?.warn(
            { jobId: job.id, was: job.chunksTotal, now: chunksTotal },
            "backfill job's chunk count changed; restarting it from its first chunk",
          );
          return { job: this.requireJob(job.id), resumed: true };
        }
        const inserted = sql.jobInsert.get({
          key,
          deviceId: spec.deviceId,
          resourceId: spec.resourceId,
          valueIds: JSON.stringify(sortedIds(spec.valueIds)),
          fromS: spec.fromS,
          toS: spec.toS,
          reason: spec.reason,
          chunksTotal,
          now,
        });
        return { job: parseRow(backfillJobRow, inserted, "backfill job"), resumed: false };
      },
    );

    this.recordChunkTx = db.transaction(
      (jobId: number, chunkIndex: number, points: number, requests: number, now: string) => {
        const job = this.requireJob(jobId);
        if (chunkIndex >= job.chunksTotal) {
          throw new RangeError(
            `chunk ${chunkIndex} of backfill job ${jobId} is out of range (it has ${job.chunksTotal})`,
          );
        }
        const inserted = sql.chunkInsert.run({ id: jobId, chunkIndex, points, now }).changes > 0;
        // A chunk recorded twice (a retry after a crash) counts once.
        sql.jobAddChunk.run({
          id: jobId,
          points: inserted ? points : 0,
          requests: inserted ? requests : 0,
          now,
        });
      },
    );
  }

  /**
   * Opens the state database (creating the file and its directory), sets WAL mode, busy_timeout
   * 5000 and foreign_keys ON, and applies pending migrations.
   */
  static open(path: string, options: StateStoreOptions = {}): StateStore {
    const { logger } = options;
    const inMemory = path === ":memory:";
    let db: Database.Database;
    try {
      if (!inMemory) mkdirSync(dirname(resolve(path)), { recursive: true });
      db = new Database(path, { timeout: BUSY_TIMEOUT_MS });
    } catch (error) {
      throw new Error(`cannot open state database ${path}: ${messageOf(error)}`, { cause: error });
    }
    try {
      db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      const mode = db.pragma("journal_mode = WAL", { simple: true });
      if (!inMemory && mode !== "wal") {
        logger?.warn({ path, journalMode: mode }, "state database is not in WAL mode");
      }
      db.pragma("foreign_keys = ON");
      let applied: number[] = [];
      if (options.migrate ?? true) {
        applied = migrate(db, MIGRATIONS_DIR, logger);
      } else {
        const pending = pendingMigrations(db, MIGRATIONS_DIR);
        if (pending.length > 0) {
          throw new MigrationError(
            `state database ${path} needs migration(s) ${pending.map(migrationLabel).join(", ")}; ` +
              "run `energy-etl migrate`",
          );
        }
      }
      return new StateStore(db, path, applied, logger);
    } catch (error) {
      db.close();
      throw error;
    }
  }

  /** Closes the database (idempotent). */
  close(): void {
    if (this.db.open) this.db.close();
  }

  /** The highest applied migration version (0 for none). */
  schemaVersion(): number {
    return parseRow(count, this.sql.schemaVersion.get(), "schema version");
  }

  // ---- watermarks ----

  /** The synced_until (epoch s) of a device resource, or undefined before its first sync. */
  getWatermark(deviceId: string, resourceId: string): number | undefined {
    const value = this.sql.getWatermark.get({ deviceId, resourceId });
    return value === undefined ? undefined : parseRow(count, value, "watermark");
  }

  /** Every watermark, ordered by device, then resource. */
  listWatermarks(): Watermark[] {
    return parseRows(watermarkRow, this.sql.listWatermarks.all(), "watermark");
  }

  /**
   * Moves the watermark forward only: max(existing, untilS); updated_at changes only when it
   * moves. Returns the watermark now stored.
   */
  advanceWatermark(deviceId: string, resourceId: string, untilS: number, now = new Date()): number {
    requireText("deviceId", deviceId);
    requireText("resourceId", resourceId);
    requireInteger("untilS", untilS);
    const moved = this.sql.advanceWatermark.get({
      deviceId,
      resourceId,
      untilS,
      now: now.toISOString(),
    });
    if (moved !== undefined) return parseRow(count, moved, "watermark");
    // Not moved (untilS was not ahead): the stored one stands.
    const stored = this.getWatermark(deviceId, resourceId);
    if (stored === undefined) throw new Error(`watermark ${deviceId}/${resourceId} vanished`);
    return stored;
  }

  // ---- value catalog ----

  /**
   * Runs `work` in one transaction (the store's own transactions nest inside it as savepoints):
   * everything it writes lands together, or nothing when it throws.
   */
  transaction<T>(work: () => T): T {
    return this.db.transaction(work)();
  }

  /**
   * Upserts the value ids seen now (last_seen = now; first_seen set on insert), in one transaction;
   * returns the ids that were new, sorted.
   */
  refreshCatalog(
    deviceId: string,
    resourceId: string,
    valueIds: readonly string[],
    now = new Date(),
  ): string[] {
    requireText("deviceId", deviceId);
    requireText("resourceId", resourceId);
    for (const id of valueIds) requireText("value id", id);
    return this.refreshCatalogTx(deviceId, resourceId, valueIds, now.toISOString());
  }

  /** The value ids seen so far for a device resource, sorted. */
  catalog(deviceId: string, resourceId: string): string[] {
    return parseRows(z.string(), this.sql.catalogList.all({ deviceId, resourceId }), "value id");
  }

  // ---- backfill jobs ----

  /**
   * Key of a spec: sha256 hex of JSON `[deviceId, resourceId, sorted valueIds, fromS, toS]`
   * (duplicate value ids count once; the reason is not part of it).
   */
  static jobKey(spec: BackfillSpec): string {
    const identity = [
      spec.deviceId,
      spec.resourceId,
      sortedIds(spec.valueIds),
      spec.fromS,
      spec.toS,
    ];
    return createHash("sha256").update(JSON.stringify(identity)).digest("hex");
  }

  /**
   * Returns the unfinished (pending/running/failed) job with the same key if there is one (to
   * continue it), else inserts a new pending job. If the unfinished job was split into a different
   * number of chunks, its chunk progress is reset. One immediate transaction.
   */
  createOrResumeBackfillJob(
    spec: BackfillSpec,
    chunksTotal: number,
    now = new Date(),
  ): { job: BackfillJob; resumed: boolean } {
    requireText("deviceId", spec.deviceId);
    requireText("resourceId", spec.resourceId);
    for (const id of spec.valueIds) {
      requireText("value id", id);
      if (id === "values_id") throw new RangeError("values_id is a tag, not a value to backfill");
    }
    requireInteger("fromS", spec.fromS);
    requireInteger("toS", spec.toS);
    if (spec.fromS > spec.toS) {
      throw new RangeError(`backfill window is empty: fromS ${spec.fromS} > toS ${spec.toS}`);
    }
    requireInteger("chunksTotal", chunksTotal);
    return this.createOrResumeTx.immediate(spec, chunksTotal, now.toISOString());
  }

  /** The job with this id, or undefined. */
  getBackfillJob(id: number): BackfillJob | undefined {
    const row = this.sql.jobGet.get(id);
    return row === undefined ? undefined : parseRow(backfillJobRow, row, "backfill job");
  }

  /** Jobs not done (pending, running, failed), oldest first. */
  unfinishedBackfillJobs(): BackfillJob[] {
    return parseRows(backfillJobRow, this.sql.jobsUnfinished.all(), "backfill job");
  }

  /** Recent jobs of any status (newest first), for status output. */
  recentBackfillJobs(limit: number): BackfillJob[] {
    requireInteger("limit", limit);
    return parseRows(backfillJobRow, this.sql.jobsRecent.all(limit), "backfill job");
  }

  /**
   * Sets a job's status. `lastError`: a message to record, null to clear it, or omitted to keep
   * the one recorded. Throws for an unknown job.
   */
  setBackfillStatus(
    id: number,
    status: BackfillStatus,
    lastError?: string | null,
    now = new Date(),
  ): void {
    const parsed = parseRow(backfillStatus, status, "backfill status");
    const at = now.toISOString();
    const result =
      lastError === undefined
        ? this.sql.jobSetStatus.run({ id, status: parsed, now: at })
        : this.sql.jobSetStatusAndError.run({ id, status: parsed, lastError, now: at });
    if (result.changes === 0) throw new RangeError(`no backfill job ${id}`);
  }

  /** Indexes of the chunks of a job that are done. */
  completedChunks(jobId: number): Set<number> {
    return new Set(parseRows(count, this.sql.chunksOf.all(jobId), "chunk index"));
  }

  /**
   * In one transaction: inserts the chunk (ignored if already there), chunks_done = count of chunk
   * rows, points += points and requests += requests (only when the chunk is new, so recording a
   * chunk twice is harmless), updated_at. Throws for an unknown job or an index out of range.
   */
  recordChunkDone(
    jobId: number,
    chunkIndex: number,
    points: number,
    requests: number,
    now = new Date(),
  ): void {
    requireInteger("chunkIndex", chunkIndex);
    requireInteger("points", points);
    requireInteger("requests", requests);
    this.recordChunkTx.immediate(jobId, chunkIndex, points, requests, now.toISOString());
  }

  private requireJob(id: number): BackfillJob {
    const job = this.getBackfillJob(id);
    if (job === undefined) throw new RangeError(`no backfill job ${id}`);
    return job;
  }

  // ---- runs ----

  /** Records a run as started ('running'); returns its id. */
  startRun(kind: RunKind, now = new Date()): number {
    const parsed = parseRow(z.enum(["sync", "backfill"]), kind, "run kind");
    return parseRow(count, this.sql.runStart.get(parsed, now.toISOString()), "run id");
  }

  /** Records the end of a run with its counters. Throws for an unknown run. */
  finishRun(id: number, summary: RunSummary, now = new Date()): void {
    const status = parseRow(
      z.enum(["ok", "partial", "failed", "interrupted"]),
      summary.status,
      "run status",
    );
    requireInteger("devices", summary.devices);
    requireInteger("requests", summary.requests);
    requireInteger("points", summary.points);
    requireInteger("errors", summary.errors);
    const result = this.sql.runFinish.run({
      id,
      status,
      devices: summary.devices,
      requests: summary.requests,
      points: summary.points,
      errors: summary.errors,
      detail: summary.detail,
      now: now.toISOString(),
    });
    if (result.changes === 0) throw new RangeError(`no run ${id}`);
  }

  /**
   * Marks runs still 'running' as 'interrupted' (their process died); returns how many. Call it at
   * startup, before starting runs: it cannot tell a dead process's run from a live one's.
   */
  markStaleRunsInterrupted(now = new Date()): number {
    return this.sql.runsMarkStale.run(now.toISOString()).changes;
  }

  /** The latest run (of a kind, if given), or undefined. */
  lastRun(kind?: RunKind): RunRecord | undefined {
    const row = kind === undefined ? this.sql.runLast.get() : this.sql.runLastOfKind.get(kind);
    return row === undefined ? undefined : parseRow(runRow, row, "run");
  }

  /** The latest runs, newest first. */
  recentRuns(limit: number): RunRecord[] {
    requireInteger("limit", limit);
    return parseRows(runRow, this.sql.runsRecent.all(limit), "run");
  }
}
