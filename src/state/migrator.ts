import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Database } from "better-sqlite3";
import type { Logger } from "pino";
import { z } from "zod";
import { messageOf } from "../util/errors.js";

/** The package's migrations directory (`src/state/` and `dist/state/` are both two levels down). */
export const MIGRATIONS_DIR: string = fileURLToPath(new URL("../../migrations/", import.meta.url));

/** One numbered SQL file of the migrations directory, e.g. `001_initial.sql`. */
export interface Migration {
  /** The number (1 for `001_…`); migrations are applied in this order. */
  readonly version: number;
  /** The name after the number, without `.sql` (`initial`). */
  readonly name: string;
  readonly file: string;
  readonly path: string;
}

/** A migrations directory that cannot be used, or a migration that failed (and was rolled back). */
export class MigrationError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "MigrationError";
  }
}

/** A database written by a newer energy-etl (a usage error: STATE_DB names another file). */
export class NewerSchemaError extends MigrationError {
  constructor(
    message: string,
    /** The migrations it has beyond the directory's (`099_future`), and the directory's last. */
    readonly unknown: string,
    readonly latest: string,
  ) {
    super(message);
    this.name = "NewerSchemaError";
  }
}

const FILE_NAME = /^(\d{3})_([A-Za-z0-9][A-Za-z0-9_-]*)\.sql$/;

/** Files of a migrations directory that are not migrations: hidden files and READMEs. */
function isIgnored(file: string): boolean {
  return file.startsWith(".") || /^readme(\..*)?$/i.test(file);
}

/** `work`'s result; its failure rethrown as a MigrationError: `what: its message`. */
function failingAs<T>(what: string, work: () => T): T {
  try {
    return work();
  } catch (error) {
    throw new MigrationError(`${what}: ${messageOf(error)}`, { cause: error });
  }
}

/** `001_initial`: how a migration is named in messages. */
export function migrationLabel(migration: Pick<Migration, "version" | "name">): string {
  return `${String(migration.version).padStart(3, "0")}_${migration.name}`;
}

/**
 * Migrations of `path` in order; a MigrationError for a bad name, a duplicate or a missing number.
 */
export function listMigrations(path: string): Migration[] {
  const files = failingAs(`cannot read migrations directory ${path}`, () => readdirSync(path));
  const migrations: Migration[] = [];
  for (const file of files) {
    if (isIgnored(file)) continue;
    const match = FILE_NAME.exec(file);
    const digits = match?.[1];
    const name = match?.[2];
    if (digits === undefined || name === undefined) {
      throw new MigrationError(
        `migrations directory ${path}: "${file}" is not a migration file name ` +
          "(expected NNN_name.sql, e.g. 001_initial.sql)",
      );
    }
    migrations.push({ version: Number(digits), name, file, path: join(path, file) });
  }
  migrations.sort((a, b) => a.version - b.version || (a.file < b.file ? -1 : 1));
  migrations.forEach((migration, index) => {
    const previous = migrations[index - 1];
    if (previous && previous.version === migration.version) {
      throw new MigrationError(
        `migrations directory ${path}: ${previous.file} and ${migration.file} have the same number`,
      );
    }
    const expected = index + 1;
    if (migration.version !== expected) {
      const where = previous
        ? `between ${previous.file} and ${migration.file}`
        : `before ${migration.file}; numbers start at 001`;
      throw new MigrationError(
        `migrations directory ${path}: migration ${String(expected).padStart(3, "0")} is missing (${where})`,
      );
    }
  });
  return migrations;
}

const appliedRow = z.object({ version: z.number(), name: z.string() });

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,
  applied_at TEXT NOT NULL
)`;

/** The migrations recorded in `schema_migrations` (empty when the table does not exist yet). */
export function appliedMigrations(db: Database): Map<number, string> {
  const exists = db
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
    .get();
  const applied = new Map<number, string>();
  if (exists === undefined) return applied;
  for (const row of db.prepare("SELECT version, name FROM schema_migrations").all()) {
    const read = appliedRow.safeParse(row);
    if (!read.success) {
      throw new MigrationError(`unexpected row in schema_migrations: ${JSON.stringify(row)}`);
    }
    applied.set(read.data.version, read.data.name);
  }
  return applied;
}

/** The migrations of `dir` not yet applied to `db`, in order (NewerSchemaError: `db` is newer). */
export function pendingMigrations(db: Database, dir = MIGRATIONS_DIR): Migration[] {
  const migrations = listMigrations(dir);
  const applied = appliedMigrations(db);
  const known = new Set(migrations.map((m) => m.version));
  const unknown = [...applied].filter(([version]) => !known.has(version));
  if (unknown.length > 0) {
    const names = unknown.map(([version, name]) => migrationLabel({ version, name })).join(", ");
    const latest = migrations.at(-1);
    const last = latest ? latest.file : "none";
    throw new NewerSchemaError(
      `the database has migration(s) ${names} that ${dir} does not have ` +
        `(latest there: ${last}); was it written by a newer energy-etl?`,
      names,
      last,
    );
  }
  return migrations.filter((m) => !applied.has(m.version));
}

/** Applies the pending migrations in order, each in its own transaction; returns those applied. */
export function migrate(db: Database, dir = MIGRATIONS_DIR, logger?: Logger): number[] {
  db.exec(CREATE_TABLE);
  const pending = pendingMigrations(db, dir);
  const isApplied = db.prepare<[number]>("SELECT 1 FROM schema_migrations WHERE version = ?");
  const record = db.prepare<[number, string, string]>(
    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
  );
  const applyOne = db.transaction((migration: Migration, sql: string): boolean => {
    // Another process may have applied it since pendingMigrations() looked.
    if (isApplied.get(migration.version) !== undefined) return false;
    db.exec(sql);
    record.run(migration.version, migration.name, new Date().toISOString());
    return true;
  });

  const appliedNow: number[] = [];
  for (const migration of pending) {
    const read = () => readFileSync(migration.path, "utf8");
    const sql = failingAs(`cannot read migration ${migration.path}`, read);
    const failed = `migration ${migration.file} failed and was rolled back`;
    if (!failingAs(failed, () => applyOne.immediate(migration, sql))) continue;
    appliedNow.push(migration.version);
    logger?.debug({ version: migration.version, file: migration.file }, "applied migration");
  }
  return appliedNow;
}
