import { accessSync, constants, existsSync, statfsSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import Database from "better-sqlite3";
import type { Config } from "../../config.js";
import { leaseState } from "../../state/lease.js";
import { readLock } from "../../state/lock-store.js";
import {
  appliedMigrations,
  listMigrations,
  MIGRATIONS_DIR,
  migrationLabel,
  pendingMigrations,
} from "../../state/migrator.js";
import { processOwner } from "../../state/owner.js";
import { SERVICE_LOCK } from "../../state/service-lock.js";
import { stateError } from "../../state/state-error.js";
import { existingAncestor } from "../../util/ensure-dir.js";
import { messageOf } from "../../util/errors.js";
import { blocking, type CheckResult, failure, formatBytes, ok, warning } from "./check.js";

const WRITABLE = "state DB writable";
const SCHEMA = "state DB schema";
const LOCK = "state DB lock";
const DISK = "free disk";

const DISK_WARN_BYTES = 1024 ** 3;
const DISK_FAIL_BYTES = 100 * 1024 ** 2;

/** How long doctor waits for SQLite's locks (a running service holds them only briefly). */
const BUSY_TIMEOUT_MS = 2000;

const MOVE_FIX = "set STATE_DB to a path in a directory this user can write";

/** STATE_DB can be written, has this energy-etl's schema, and who holds the service lock. */
export function stateChecks(config: Config): CheckResult[] {
  const path = config.state.db;
  if (path === ":memory:") {
    return [
      warning(
        WRITABLE,
        "STATE_DB is :memory:: cursors and jobs are lost when the process ends",
        "set STATE_DB to a file, e.g. ./data/state.db",
      ),
      ok(SCHEMA, "in memory: migrated on every start"),
      ok(LOCK, "in memory: no other process shares it"),
    ];
  }
  if (!existsSync(path)) return missingState(path);
  if (statSync(path).isDirectory()) {
    const why = `${path} is a directory`;
    const fix = "set STATE_DB to a file path, e.g. ./data/state.db";
    return notWritable(why, fix, why);
  }
  let db: Database.Database;
  try {
    db = new Database(path, { fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
  } catch (error) {
    return notWritable(stateError(path, error).message, MOVE_FIX, "it does not open");
  }
  try {
    db.prepare("SELECT count(*) FROM sqlite_master").get();
  } catch (error) {
    db.close();
    const fix = "point STATE_DB at the state file, or move this file away (a new one is created)";
    return notWritable(stateError(path, error).message, fix, "it cannot be read");
  }
  try {
    return [writableCheck(path), schemaCheck(db), lockCheck(db)];
  } finally {
    db.close();
  }
}

/** STATE_DB cannot be written (`detail`): its schema and lock are not checked (`why`). */
const notWritable = (detail: string, fix: string, why: string): CheckResult[] =>
  blocking(failure(WRITABLE, detail, fix), why, SCHEMA, LOCK);

/** No state file yet: fine when it can be created. */
function missingState(path: string): CheckResult[] {
  const dir = dirname(resolve(path));
  const existing = existingAncestor(dir);
  const why = "no state yet";
  if (!statSync(existing).isDirectory()) {
    return notWritable(`${path} cannot be created: ${existing} is not a directory`, MOVE_FIX, why);
  }
  if (!canWrite(existing)) {
    const fix = `make ${existing} writable for this user, or ${MOVE_FIX}`;
    return notWritable(`${path} cannot be created: ${existing} is not writable`, fix, why);
  }
  const where = existing === dir ? dir : `${existing} (${dir} is created too)`;
  return [
    ok(WRITABLE, `no state yet: ${path} is created on first sync, in writable ${where}`),
    ok(SCHEMA, "no state yet (created on first sync, or with energy-etl migrate)"),
    ok(LOCK, "no state yet: free"),
  ];
}

function writableCheck(path: string): CheckResult {
  const dir = dirname(resolve(path));
  if (!canWrite(path)) {
    const fix = `make it writable for this user (chmod/chown), or ${MOVE_FIX}`;
    return failure(WRITABLE, `${path} is not writable`, fix);
  }
  if (!canWrite(dir)) {
    const why = `${dir} is not writable (SQLite writes a -wal and a -shm file beside ${path})`;
    return failure(WRITABLE, why, `make ${dir} writable for this user, or ${MOVE_FIX}`);
  }
  return ok(WRITABLE, `${path} opens and can be written`);
}

function schemaCheck(db: Database.Database): CheckResult {
  const latest = listMigrations(MIGRATIONS_DIR).at(-1)?.version ?? 0;
  let pending: ReturnType<typeof pendingMigrations>;
  try {
    pending = pendingMigrations(db, MIGRATIONS_DIR);
  } catch (error) {
    return failure(
      SCHEMA,
      messageOf(error),
      "use the energy-etl that wrote it (or a newer one), or point STATE_DB at another file",
    );
  }
  const version = Math.max(0, ...appliedMigrations(db).keys());
  if (pending.length > 0) {
    return warning(
      SCHEMA,
      `schema version ${version}, this energy-etl is at ${latest} (pending: ${pending.map(migrationLabel).join(", ")})`,
      "run energy-etl migrate (sync and run also migrate when they start)",
    );
  }
  return ok(SCHEMA, `schema version ${version} (current)`);
}

/** Who holds the service lock (`energy-etl run`, briefly `sync`): a live holder is fine. */
function lockCheck(db: Database.Database): CheckResult {
  const table = db
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'locks'")
    .get();
  if (table === undefined) return ok(LOCK, "free (no locks table yet)");
  const row: unknown = db.prepare("SELECT * FROM locks WHERE name = ?").get(SERVICE_LOCK);
  if (row === undefined) return ok(LOCK, "free");
  const { lease, holder } = readLock(row);
  const who = `\`${holder.command}\` (pid ${holder.pid} on ${holder.host}, since ${holder.since})`;
  const state = leaseState(lease, processOwner("doctor"), Date.now());
  if (state === "gone" || state === "expired") {
    return warning(
      LOCK,
      `stale: held by ${who}, which ${state === "gone" ? "is gone" : "stopped renewing it"}`,
      "nothing to do if no energy-etl works on this state: the next run or sync takes it over; " +
        `otherwise stop pid ${holder.pid} on ${holder.host}`,
    );
  }
  return ok(LOCK, `held by ${who}: a service works on this state`);
}

export function diskCheck(config: Config): CheckResult {
  const path = config.state.db;
  if (path === ":memory:") return ok(DISK, "not measured: STATE_DB is :memory:");
  const dir = existingAncestor(dirname(resolve(path)));
  const stats = statfsSync(dir);
  const free = stats.bavail * stats.bsize;
  const detail = `${formatBytes(free)} free on the file system of ${dir}`;
  const fix = `free space on the file system of ${dir}, or ${MOVE_FIX} on a larger disk`;
  if (free < DISK_FAIL_BYTES) return failure(DISK, `${detail} (less than 100 MiB)`, fix);
  if (free < DISK_WARN_BYTES) return warning(DISK, `${detail} (less than 1 GiB)`, fix);
  return ok(DISK, detail);
}

function canWrite(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}
