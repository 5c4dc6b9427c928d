import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import {
  appliedMigrations,
  listMigrations,
  MIGRATIONS_DIR,
  MigrationError,
  migrate,
  pendingMigrations,
} from "../../src/state/migrator.js";
import { captureLogger } from "../support/log-capture.js";

let dir: string;
let db: Database.Database;

function migrationsDir(files: Record<string, string>): string {
  const path = mkdtempSync(join(dir, "migrations-"));
  for (const [name, sql] of Object.entries(files)) writeFileSync(join(path, name), sql);
  return path;
}

function tables(): string[] {
  return db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    .pluck()
    .all()
    .map(String);
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "energy-etl-migrator-"));
  db = new Database(join(dir, "state.db"));
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("listMigrations", () => {
  it("the package's migrations are 001 to 007", () => {
    expect(listMigrations(MIGRATIONS_DIR).map((m) => [m.version, m.name, m.file])).toEqual([
      [1, "initial", "001_initial.sql"],
      [2, "cursors_dead_letters", "002_cursors_dead_letters.sql"],
      [3, "leases_locks", "003_leases_locks.sql"],
      [4, "catalog_cadence", "004_catalog_cadence.sql"],
      [5, "member_dead_letters", "005_member_dead_letters.sql"],
      [6, "lookback_cadence", "006_lookback_cadence.sql"],
      [7, "rollup_marks", "007_rollup_marks.sql"],
    ]);
  });

  it("orders by number and ignores hidden files and READMEs", () => {
    const path = migrationsDir({
      "002_second.sql": "",
      "001_first.sql": "",
      "010_tenth.sql": "",
      ".gitkeep": "",
      "README.md": "notes",
      ...Object.fromEntries([3, 4, 5, 6, 7, 8, 9].map((n) => [`00${n}_m${n}.sql`, ""] as const)),
    });
    expect(listMigrations(path).map((m) => m.file)).toEqual([
      "001_first.sql",
      "002_second.sql",
      "003_m3.sql",
      "004_m4.sql",
      "005_m5.sql",
      "006_m6.sql",
      "007_m7.sql",
      "008_m8.sql",
      "009_m9.sql",
      "010_tenth.sql",
    ]);
  });

  it.each(["1_initial.sql", "001-initial.sql", "001_initial.txt", "001_.sql", "initial.sql"])(
    "a file named %s is an error naming it",
    (bad) => {
      const path = migrationsDir({ "001_ok.sql": "", [bad]: "" });
      expect(() => listMigrations(path)).toThrow(MigrationError);
      expect(() => listMigrations(path)).toThrow(`"${bad}" is not a migration file name`);
    },
  );

  it("a gap in the numbers is an error naming the missing number", () => {
    const path = migrationsDir({ "001_a.sql": "", "003_c.sql": "" });
    expect(() => listMigrations(path)).toThrow(
      /migration 002 is missing \(between 001_a.sql and 003_c.sql\)/,
    );
  });

  it("numbers start at 001", () => {
    const path = migrationsDir({ "002_b.sql": "" });
    expect(() => listMigrations(path)).toThrow(/migration 001 is missing \(before 002_b.sql/);
    const zero = migrationsDir({ "000_zero.sql": "", "001_a.sql": "" });
    expect(() => listMigrations(zero)).toThrow(/migration 001 is missing/);
  });

  it("two files with the same number are an error naming both", () => {
    const path = migrationsDir({ "001_a.sql": "", "002_b.sql": "", "002_c.sql": "" });
    expect(() => listMigrations(path)).toThrow(/002_b.sql and 002_c.sql have the same number/);
  });

  it("a missing directory is an error naming it", () => {
    expect(() => listMigrations(join(dir, "nope"))).toThrow(/cannot read migrations directory/);
  });
});

describe("migrate", () => {
  it("applies the package's migrations once and records them", () => {
    expect(migrate(db)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(tables()).toEqual([
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
      "sqlite_sequence",
      "value_catalog",
    ]);
    const rows = db
      .prepare("SELECT version, name, applied_at FROM schema_migrations ORDER BY version")
      .all();
    const appliedAt = expect.stringMatching(/^\d{4}-\d\d-\d\dT/);
    expect(rows).toEqual([
      { version: 1, name: "initial", applied_at: appliedAt },
      { version: 2, name: "cursors_dead_letters", applied_at: appliedAt },
      { version: 3, name: "leases_locks", applied_at: appliedAt },
      { version: 4, name: "catalog_cadence", applied_at: appliedAt },
      { version: 5, name: "member_dead_letters", applied_at: appliedAt },
      { version: 6, name: "lookback_cadence", applied_at: appliedAt },
      { version: 7, name: "rollup_marks", applied_at: appliedAt },
    ]);
    expect(migrate(db)).toEqual([]);
    expect(pendingMigrations(db)).toEqual([]);
  });

  it("applies in order, only the pending ones, and logs each at debug (none at info)", () => {
    const path = migrationsDir({
      "001_a.sql": "CREATE TABLE a (x INTEGER);",
      "002_b.sql": "CREATE TABLE b (y INTEGER REFERENCES a (x));\nINSERT INTO a VALUES (1);",
    });
    expect(pendingMigrations(db, path).map((m) => m.version)).toEqual([1, 2]);
    // a new state database at the default level: not a line per migration (#42)
    const info = captureLogger("info");
    const fresh = new Database(":memory:");
    try {
      expect(migrate(fresh, path, info.logger)).toEqual([1, 2]);
    } finally {
      fresh.close();
    }
    expect(info.lines).toEqual([]);
    const debug = captureLogger("debug");
    expect(migrate(db, path, debug.logger)).toEqual([1, 2]);
    expect(debug.lines.map((line) => JSON.parse(line) as unknown)).toEqual([
      expect.objectContaining({
        level: "debug",
        msg: "applied migration",
        version: 1,
        file: "001_a.sql",
      }),
      expect.objectContaining({
        level: "debug",
        msg: "applied migration",
        version: 2,
        file: "002_b.sql",
      }),
    ]);
    writeFileSync(join(path, "003_c.sql"), "ALTER TABLE a ADD COLUMN z TEXT;");
    expect(pendingMigrations(db, path).map((m) => m.file)).toEqual(["003_c.sql"]);
    expect(migrate(db, path)).toEqual([3]);
    expect([...appliedMigrations(db)]).toEqual([
      [1, "a"],
      [2, "b"],
      [3, "c"],
    ]);
  });

  it("a failing migration is rolled back whole, throws naming its file, and keeps earlier ones", () => {
    const path = migrationsDir({
      "001_a.sql": "CREATE TABLE a (x INTEGER);",
      "002_broken.sql":
        "CREATE TABLE b (y INTEGER);\nINSERT INTO a VALUES (1);\nSELECT * FROM nope;",
    });
    expect(() => migrate(db, path)).toThrow(
      /migration 002_broken.sql failed and was rolled back: no such table: nope/,
    );
    expect(tables()).toEqual(["a", "schema_migrations"]);
    expect(db.prepare("SELECT COUNT(*) FROM a").pluck().get()).toBe(0);
    expect([...appliedMigrations(db).keys()]).toEqual([1]);

    writeFileSync(join(path, "002_broken.sql"), "CREATE TABLE b (y INTEGER);");
    expect(migrate(db, path)).toEqual([2]);
  });

  it("a database with a migration the directory lacks (a newer program's) is an error", () => {
    const path = migrationsDir({ "001_a.sql": "CREATE TABLE a (x INTEGER);" });
    migrate(db, path);
    db.prepare("INSERT INTO schema_migrations VALUES (2, 'future', 'x')").run();
    expect(() => migrate(db, path)).toThrow(/has migration\(s\) 002_future that .* does not have/);
  });

  it("a bad migrations directory applies nothing", () => {
    const path = migrationsDir({ "001_a.sql": "CREATE TABLE a (x INTEGER);", "3_c.sql": "" });
    expect(() => migrate(db, path)).toThrow(/"3_c.sql" is not a migration file name/);
    expect(tables()).toEqual(["schema_migrations"]);
  });

  it("001_initial.sql creates the documented tables", () => {
    const sql = readFileSync(join(MIGRATIONS_DIR, "001_initial.sql"), "utf8");
    for (const table of [
      "watermarks",
      "value_catalog",
      "backfill_jobs",
      "backfill_chunks",
      "runs",
    ]) {
      expect(sql).toContain(`CREATE TABLE ${table}`);
    }
  });
});
