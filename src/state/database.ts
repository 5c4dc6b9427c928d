import { closeSync, constants, openSync, statSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import type { Logger } from "pino";
import { ensureDirectory } from "../util/ensure-dir.js";
import { errnoOf } from "../util/errors.js";
import {
  MIGRATIONS_DIR,
  MigrationError,
  migrate,
  migrationLabel,
  NewerSchemaError,
  pendingMigrations,
} from "./migrator.js";
import { integer, parseRow } from "./rows.js";
import { isSqliteError, StateError, stateError } from "./state-error.js";

export interface OpenDatabaseOptions {
  readonly logger?: Logger;
  /** Apply pending migrations (default true; false: pending ones are an error). */
  readonly migrate?: boolean;
}

const BUSY_TIMEOUT_MS = 5000;

/**
 * Opens the SQLite state database (creating the file and its directory), sets WAL mode with
 * synchronous NORMAL, busy_timeout 5000 and foreign_keys ON, and applies pending migrations.
 * NORMAL: a power cut (not a crash) may take back the last commits, never part of one: state goes
 * back before writes InfluxDB holds (made again; points are idempotent), or an operator's change
 * of the last seconds is undone. The flush it saves blocked the event loop at every cursor commit.
 */
export function openDatabase(
  path: string,
  options: OpenDatabaseOptions = {},
): { db: Database.Database; appliedOnOpen: readonly number[] } {
  const { logger } = options;
  const inMemory = path === ":memory:";
  let db: Database.Database;
  try {
    if (!inMemory) {
      ensureDirectory(dirname(path));
      createPrivate(path, logger);
    }
    db = new Database(path, { timeout: BUSY_TIMEOUT_MS });
  } catch (error) {
    const why = stateError(path, error).message.replace(`state database ${path} (STATE_DB): `, "");
    throw new StateError(
      `cannot open state database ${path} (STATE_DB): ${why}; check the path and that its directory can be created and written`,
      undefined,
      { cause: error },
    );
  }
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    const mode = db.pragma("journal_mode = WAL", { simple: true });
    if (!inMemory && mode !== "wal") {
      logger?.warn({ path, journalMode: mode }, "state database is not in WAL mode");
    }
    // only with WAL: in a rollback journal, NORMAL may corrupt the file on a power cut
    if (mode === "wal") db.pragma("synchronous = NORMAL");
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
    return { db, appliedOnOpen: applied };
  } catch (error) {
    db.close();
    if (error instanceof NewerSchemaError) {
      throw new NewerSchemaError(
        `state database ${path} (STATE_DB) has a newer schema than this energy-etl: it has ` +
          `migration(s) ${error.unknown}, this one knows up to ${error.latest}; use the ` +
          "energy-etl that wrote it (or a newer one), or point STATE_DB at another file",
        error.unknown,
        error.latest,
      );
    }
    throw isSqliteError(error) ? stateError(path, error) : error;
  }
}

/**
 * Creates the state file 0600 when it does not exist (SQLite gives its -wal and -shm the file's
 * mode): it holds the API's rows and lines. An existing file keeps its mode (an operator may
 * have opened it to a backup group on purpose), with a warning when others may read it.
 */
function createPrivate(path: string, logger: Logger | undefined): void {
  try {
    closeSync(openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600));
    return;
  } catch (error) {
    if (errnoOf(error) !== "EEXIST") throw error;
  }
  const mode = statSync(path).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    logger?.warn(
      { path, mode: `0${mode.toString(8)}` },
      "the state database may be read by other users than its owner: chmod 600 it (and its -wal and -shm)",
    );
  }
}

/** The highest applied migration version (0 for none). */
export function schemaVersion(db: Database.Database): number {
  const value = db.prepare("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").pluck().get();
  return parseRow(integer, value, "schema version");
}
