import type Database from "better-sqlite3";
import { z } from "zod";
import { type Lease, Leases, type LeaseTable } from "./lease.js";
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

export interface LockHolder {
  readonly pid: number;
  readonly host: string;
  readonly command: string;
  readonly since: string;
}

/** A row of table `locks`: the lock's lease, and who holds it. */
export function readLock(row: unknown): { readonly lease: Lease; readonly holder: LockHolder } {
  const held = parseRow(lockRow, row, "lock");
  const { pid, host, command } = held;
  return {
    lease: { ownerId: held.owner, holder: { id: held.owner, pid, host }, untilMs: held.expires_at },
    holder: { pid, host, command, since: held.acquired_at },
  };
}

/** Table `locks`: a row is a lock's lease, with its holder's process and command. */
const LOCKS: LeaseTable<LockHolder> = {
  table: "locks",
  key: "name",
  owner: "owner",
  until: "expires_at",
  kind: "row",
  written: {
    pid: (owner) => owner.pid,
    host: (owner) => owner.host,
    command: (owner) => owner.command,
    acquired_at: (_owner, nowMs) => new Date(nowMs).toISOString(),
  },
  read: readLock,
};

/** Named locks with a lease (table `locks`); `acquire` says who holds a lock it cannot take. */
export class LockStore extends Leases<string, LockHolder> {
  constructor(db: Database.Database) {
    super(db, LOCKS);
  }
}
