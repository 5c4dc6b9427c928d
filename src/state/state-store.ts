import { statSync } from "node:fs";
import type Database from "better-sqlite3";
import { CatalogStore } from "./catalog-store.js";
import { CursorStore } from "./cursor-store.js";
import { type OpenDatabaseOptions, openDatabase, schemaVersion } from "./database.js";
import { DeadLetterStore } from "./dead-letter-store.js";
import { JobStore } from "./job-store.js";
import { LockStore } from "./lock-store.js";
import { RollupStore } from "./rollup-store.js";
import { RunStore } from "./run-store.js";
import { isSqliteError, StateError, stateError } from "./state-error.js";

/** How often a command checks that STATE_DB is still its file ({@link StateStore.watchFile}). */
const FILE_CHECK_MS = 1000;

/**
 * The ETL's state in one SQLite database (STATE_DB), as small synchronous stores by aggregate;
 * every multi-step change is one transaction, so a crash leaves either the old or the new state.
 */
export class StateStore {
  readonly cursors: CursorStore;
  readonly catalog: CatalogStore;
  readonly jobs: JobStore;
  readonly runs: RunStore;
  readonly deadLetters: DeadLetterStore;
  readonly locks: LockStore;
  readonly rollups: RollupStore;
  /** The file's identity when opened, and the largest size seen (SQLite never shrinks it here). */
  private readonly identity: { dev: number; ino: number } | undefined;
  private sizeSeen = 0;

  private constructor(
    private readonly db: Database.Database,
    /** The database file, as given to {@link StateStore.open}. */
    readonly path: string,
    /** Versions applied now by open() (empty when none were pending). */
    readonly appliedOnOpen: readonly number[],
  ) {
    const named = <T extends object>(store: T): T => everyNamingErrors(store, path);
    this.cursors = named(new CursorStore(db));
    this.catalog = named(new CatalogStore(db));
    this.jobs = named(new JobStore(db));
    this.runs = named(new RunStore(db));
    this.deadLetters = named(new DeadLetterStore(db));
    this.locks = named(new LockStore(db));
    this.rollups = named(new RollupStore(db));
    if (path !== ":memory:") {
      const stat = statSync(path);
      this.identity = { dev: stat.dev, ino: stat.ino };
      this.sizeSeen = stat.size;
    }
  }

  /**
   * Throws a StateError when the file at STATE_DB is no longer the one this store writes: deleted,
   * replaced by another file, or truncated. Writing on would go into nothing (a deleted inode)
   * and every cursor and job would be gone after a restart.
   */
  checkFile(): void {
    const problem = this.fileProblem();
    if (problem !== undefined) throw problem;
  }

  /** What {@link checkFile} throws, or undefined while the file is the one in use. */
  fileProblem(): StateError | undefined {
    if (this.identity === undefined) return undefined;
    let stat: ReturnType<typeof statSync>;
    try {
      stat = statSync(this.path);
    } catch {
      return new StateError(
        `state database ${this.path} (STATE_DB) was deleted while in use; stopping rather than ` +
          "writing into nothing. Restore it from a backup, or start over (the next start creates it anew)",
        "DELETED",
      );
    }
    if (stat.dev !== this.identity.dev || stat.ino !== this.identity.ino) {
      return new StateError(
        `state database ${this.path} (STATE_DB) was replaced by another file while in use; stopping. ` +
          "Start energy-etl again to use the new file",
        "REPLACED",
      );
    }
    if (stat.size < this.sizeSeen) {
      return new StateError(
        `state database ${this.path} (STATE_DB) was truncated while in use (${stat.size} bytes, ` +
          `was ${this.sizeSeen}); stopping. Restore it from a backup, or move it away and start over`,
        "TRUNCATED",
      );
    }
    this.sizeSeen = stat.size;
    return undefined;
  }

  /**
   * Checks the file every `everyMs` until the returned function is called; the first problem goes
   * to `gone` (once): a command stops instead of writing on into a file that is gone.
   */
  watchFile(gone: (error: StateError) => void, everyMs = FILE_CHECK_MS): () => void {
    const timer = setInterval(() => {
      const problem = this.fileProblem();
      if (problem === undefined) return;
      clearInterval(timer);
      gone(problem);
    }, everyMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  static open(path: string, options: OpenDatabaseOptions = {}): StateStore {
    const { db, appliedOnOpen } = openDatabase(path, options);
    return new StateStore(db, path, Object.freeze([...appliedOnOpen]));
  }

  get isOpen(): boolean {
    return this.db.open;
  }

  /**
   * Runs `work` in one immediate transaction (the write lock is taken at its start, so a read
   * inside it cannot go stale before a write; the stores' own transactions nest inside it as
   * savepoints): everything it writes lands together, or nothing when it throws.
   */
  transaction<T>(work: () => T): T {
    return namingErrors(this.path, () => this.db.transaction(work).immediate());
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

/** `work`'s SQLite errors as StateErrors naming the database and what to do (others unchanged). */
function namingErrors<T>(path: string, work: () => T): T {
  try {
    return work();
  } catch (error) {
    throw isSqliteError(error) ? stateError(path, error) : error;
  }
}

/** The store with every method {@link namingErrors}. */
function everyNamingErrors<T extends object>(store: T, path: string): T {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => namingErrors(path, () => value.apply(target, args));
    },
  });
}
