import type Database from "better-sqlite3";
import { z } from "zod";
import { isGone, type Owner } from "./owner.js";
import { integer, parseRow } from "./rows.js";

const lockRow = z.object({
  name: z.string(),
  owner: z.string(),
  pid: integer,
  host: z.string(),
  command: z.string(),
  acquired_at: z.string(),
  expires_at: integer,
});

/** Who holds a lock. */
export interface LockHolder {
  readonly pid: number;
  readonly host: string;
  readonly command: string;
  readonly since: string;
}

/** The outcome of {@link LockStore.acquire}. */
export type Acquired =
  | { readonly acquired: true }
  | { readonly acquired: false; readonly holder: LockHolder };

/**
 * Named locks with a lease (table `locks`): a holder renews its lease while it lives; a lock whose
 * lease expired, or whose holder is certainly gone (see isGone), is free.
 */
export class LockStore {
  private readonly sql;
  private readonly acquireTx;

  constructor(db: Database.Database) {
    const sql = {
      get: db.prepare<[string]>("SELECT * FROM locks WHERE name = ?"),
      upsert: db.prepare<{
        name: string;
        owner: string;
        pid: number;
        host: string;
        command: string;
        now: string;
        expiresMs: number;
      }>(
        `INSERT INTO locks (name, owner, pid, host, command, acquired_at, expires_at)
         VALUES (@name, @owner, @pid, @host, @command, @now, @expiresMs)
         ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, pid = excluded.pid,
           host = excluded.host, command = excluded.command, acquired_at = excluded.acquired_at,
           expires_at = excluded.expires_at`,
      ),
      renew: db.prepare<{ name: string; owner: string; expiresMs: number }>(
        "UPDATE locks SET expires_at = @expiresMs WHERE name = @name AND owner = @owner",
      ),
      release: db.prepare<{ name: string; owner: string }>(
        "DELETE FROM locks WHERE name = @name AND owner = @owner",
      ),
    };
    this.sql = sql;
    this.acquireTx = db.transaction(
      (name: string, owner: Owner, ttlMs: number, nowMs: number): Acquired => {
        const row = sql.get.get(name);
        if (row !== undefined) {
          const held = parseRow(lockRow, row, "lock");
          const free =
            held.owner === owner.id ||
            held.expires_at < nowMs ||
            isGone({ id: held.owner, pid: held.pid, host: held.host }, owner);
          if (!free) {
            return {
              acquired: false,
              holder: {
                pid: held.pid,
                host: held.host,
                command: held.command,
                since: held.acquired_at,
              },
            };
          }
        }
        sql.upsert.run({
          name,
          owner: owner.id,
          pid: owner.pid,
          host: owner.host,
          command: owner.command,
          now: new Date(nowMs).toISOString(),
          expiresMs: nowMs + ttlMs,
        });
        return { acquired: true };
      },
    );
  }

  /** Takes the lock for `ttlMs` unless another live holder has it. One immediate transaction. */
  acquire(name: string, owner: Owner, ttlMs: number, nowMs: number): Acquired {
    return this.acquireTx.immediate(name, owner, ttlMs, nowMs);
  }

  /** Extends the lease; false when the lock is no longer ours (it expired and was taken). */
  renew(name: string, owner: Owner, ttlMs: number, nowMs: number): boolean {
    return this.sql.renew.run({ name, owner: owner.id, expiresMs: nowMs + ttlMs }).changes === 1;
  }

  /** Gives the lock up (a no-op when it is not ours). */
  release(name: string, owner: Owner): void {
    this.sql.release.run({ name, owner: owner.id });
  }
}
