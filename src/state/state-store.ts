import type Database from "better-sqlite3";
import { CatalogStore } from "./catalog-store.js";
import { CursorStore } from "./cursor-store.js";
import { type OpenDatabaseOptions, openDatabase, schemaVersion } from "./database.js";
import { DeadLetterStore } from "./dead-letter-store.js";
import { JobStore } from "./job-store.js";
import { RunStore } from "./run-store.js";

/** Options of {@link StateStore.open}. */
export type StateStoreOptions = OpenDatabaseOptions;

/**
 * The ETL's state in one SQLite database (STATE_DB), as small stores by aggregate: cursors, the
 * value catalog, backfill jobs, runs and dead letters. Synchronous (better-sqlite3); every
 * multi-step change is one transaction, so a crash leaves either the old or the new state.
 */
export class StateStore {
  readonly cursors: CursorStore;
  readonly catalog: CatalogStore;
  readonly jobs: JobStore;
  readonly runs: RunStore;
  readonly deadLetters: DeadLetterStore;

  private constructor(
    private readonly db: Database.Database,
    /** The database file, as given to {@link StateStore.open}. */
    readonly path: string,
    /** Versions applied now by open() (empty when none were pending). */
    readonly appliedOnOpen: readonly number[],
  ) {
    this.cursors = new CursorStore(db);
    this.catalog = new CatalogStore(db);
    this.jobs = new JobStore(db);
    this.runs = new RunStore(db);
    this.deadLetters = new DeadLetterStore(db);
  }

  /**
   * Opens the state database (creating the file and its directory), sets WAL mode, busy_timeout
   * 5000 and foreign_keys ON, and applies pending migrations.
   */
  static open(path: string, options: StateStoreOptions = {}): StateStore {
    const { db, appliedOnOpen } = openDatabase(path, options);
    return new StateStore(db, path, Object.freeze([...appliedOnOpen]));
  }

  /**
   * Runs `work` in one immediate transaction (the write lock is taken at its start, so a read
   * inside it cannot go stale before a write; the stores' own transactions nest inside it as
   * savepoints): everything it writes lands together, or nothing when it throws.
   */
  transaction<T>(work: () => T): T {
    return this.db.transaction(work).immediate();
  }

  /** The highest applied migration version (0 for none). */
  schemaVersion(): number {
    return schemaVersion(this.db);
  }

  /** Closes the database (idempotent). */
  close(): void {
    if (this.db.open) this.db.close();
  }
}
