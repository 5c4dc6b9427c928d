import { errnoOf, messageOf } from "../util/errors.js";

/** A failure of the state database, naming STATE_DB and what to do (fatal to a run). */
export class StateError extends Error {
  constructor(
    message: string,
    /** SQLite's error code, e.g. SQLITE_READONLY, when it came from SQLite. */
    readonly code?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "StateError";
  }
}

/** What to do about an SQLite error code (by its family: SQLITE_READONLY_DBMOVED → READONLY). */
const ADVICE: readonly [string, string][] = [
  ["SQLITE_NOTADB", "it is not an SQLite database: does STATE_DB point at another file?"],
  [
    "SQLITE_READONLY",
    "it cannot be written: check the permissions of the file and of its directory (SQLite writes a -wal and a -shm file next to it)",
  ],
  [
    "SQLITE_CORRUPT",
    "it is damaged: restore it from a backup, or move it away and start over (energy-etl backfill refetches history)",
  ],
  ["SQLITE_FULL", "the disk is full: free space next to STATE_DB"],
  ["SQLITE_CANTOPEN", "it cannot be opened: check that its directory exists and is writable"],
  [
    "SQLITE_BUSY",
    "another process holds its write lock too long: is a second energy-etl working on it?",
  ],
  ["SQLITE_LOCKED", "another connection holds a lock on it"],
  [
    "SQLITE_IOERR",
    "reading or writing it failed: was the file deleted or moved while in use, or did the disk fail?",
  ],
];

/** The error as a {@link StateError} naming the database and what to do (kept when it is one). */
export function stateError(path: string, error: unknown): StateError {
  if (error instanceof StateError) return error;
  const code = errnoOf(error);
  const advice = code ? ADVICE.find(([prefix]) => code.startsWith(prefix))?.[1] : undefined;
  return new StateError(
    `state database ${path} (STATE_DB): ${messageOf(error)}${advice ? `; ${advice}` : ""}`,
    code,
    { cause: error },
  );
}

/** True for errors raised by SQLite (better-sqlite3's SqliteError, of any realm). */
export function isSqliteError(error: unknown): boolean {
  return errnoOf(error)?.startsWith("SQLITE_") ?? false;
}
