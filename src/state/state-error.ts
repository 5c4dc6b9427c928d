import { readFileSync } from "node:fs";
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
    "reading or writing it failed: check the disk (free space, dmesg) and that nothing deletes or moves STATE_DB while energy-etl runs",
  ],
];

/** This process's file-size limit in bytes (`ulimit -f`, RLIMIT_FSIZE), when it has one (Linux). */
export function fileSizeLimit(limits = "/proc/self/limits"): number | undefined {
  let text: string;
  try {
    text = readFileSync(limits, "latin1");
  } catch {
    return undefined;
  }
  const soft = /^Max file size\s+(\S+)/m.exec(text)?.[1];
  return soft === undefined || !/^\d+$/.test(soft) ? undefined : Number(soft);
}

/** SQLite's advice for `code`; a write cut by a file-size limit says which limit and what to do. */
function adviceFor(code: string): string | undefined {
  const advice = ADVICE.find(([prefix]) => code.startsWith(prefix))?.[1];
  if (!/^SQLITE_(FULL|IOERR)/.test(code)) return advice;
  const limit = fileSizeLimit();
  if (limit === undefined) return advice;
  return (
    `this process may write files of at most ${limit} bytes (ulimit -f, RLIMIT_FSIZE), too ` +
    "little for STATE_DB and its -wal and -shm files: raise the limit (ulimit -f unlimited; " +
    "LimitFSIZE= in a systemd unit) and start again"
  );
}

/** The error as a {@link StateError} naming the database and what to do (kept when it is one). */
export function stateError(path: string, error: unknown): StateError {
  if (error instanceof StateError) return error;
  const code = errnoOf(error);
  const advice = code ? adviceFor(code) : undefined;
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
