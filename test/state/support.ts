/** Shared fixtures of the state tests: real SQLite files in temp dirs, removed after each test. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { OpenDatabaseOptions } from "../../src/state/database.js";
import { StateStore } from "../../src/state/state-store.js";
import type { BackfillSpec } from "../../src/state/types.js";

export const T0 = new Date("2024-03-01T00:00:00.000Z");
export const T1 = new Date("2024-03-01T01:00:00.000Z");
export const T2 = new Date("2024-03-01T02:00:00.000Z");
export const T3 = new Date("2024-03-01T03:00:00.000Z");

/** A backfill request: one day of two value ids (out of order) of a device resource. */
export const SPEC: BackfillSpec = {
  deviceId: "dev-1",
  resourceId: "inverter",
  valueIds: ["e_b", "e_a"],
  fromS: 1_700_000_000,
  toS: 1_700_086_400,
  reason: "manual",
};

/** A temp dir per test; what is opened through it is closed, and the dir removed, after the test. */
export interface TempDir {
  /** The dir of the running test. */
  readonly path: string;
  /** A path inside the dir. */
  file(...parts: string[]): string;
  /** Opens a state store (closed after the test). */
  open(path: string, options?: OpenDatabaseOptions): StateStore;
  /** Opens a plain better-sqlite3 connection with foreign_keys ON (closed after the test). */
  raw(path: string): Database.Database;
}

export function useTempDir(prefix: string): TempDir {
  let current: string | undefined;
  let closers: (() => void)[] = [];

  beforeEach(() => {
    current = mkdtempSync(join(tmpdir(), prefix));
  });

  afterEach(() => {
    for (const close of closers.reverse()) close();
    closers = [];
    if (current !== undefined) rmSync(current, { recursive: true, force: true });
    current = undefined;
  });

  const dir = (): string => {
    if (current === undefined) throw new Error("the temp dir exists only while a test runs");
    return current;
  };

  return {
    get path() {
      return dir();
    },
    file: (...parts) => join(dir(), ...parts),
    open(path, options) {
      const store = StateStore.open(path, options);
      closers.push(() => store.close());
      return store;
    },
    raw(path) {
      const db = new Database(path);
      closers.push(() => {
        if (db.open) db.close();
      });
      db.pragma("foreign_keys = ON");
      return db;
    },
  };
}

/** A migrated state store in a temp dir, opened before each test. */
export interface TempStore {
  readonly tmp: TempDir;
  /** The database file. */
  readonly path: string;
  readonly store: StateStore;
  /** Closes the store and opens the same file again. */
  reopen(): StateStore;
}

export function useStateStore(prefix = "energy-etl-state-"): TempStore {
  const tmp = useTempDir(prefix);
  let current: StateStore | undefined;

  beforeEach(() => {
    current = tmp.open(tmp.file("state.db"));
  });

  afterEach(() => {
    current = undefined;
  });

  const store = (): StateStore => {
    if (current === undefined) throw new Error("the store exists only while a test runs");
    return current;
  };

  return {
    tmp,
    get path() {
      return tmp.file("state.db");
    },
    get store() {
      return store();
    },
    reopen() {
      store().close();
      current = tmp.open(tmp.file("state.db"));
      return current;
    },
  };
}
