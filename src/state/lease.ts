/**
 * Leases: which process may work on something now (a backfill job, a named lock). A lease names
 * its owner and runs until a time (epoch ms); the owner renews it while it lives.
 */
import type Database from "better-sqlite3";
import { type DeadProbe, type Holder, isGone, type Owner } from "./owner.js";

export interface Lease {
  readonly ownerId: string;
  /** The holder's process, when known: a holder of unknown process is never taken for gone. */
  readonly holder: Holder | undefined;
  /** When it runs out (epoch ms) unless renewed. */
  readonly untilMs: number;
}

/** How an owner finds a lease: `gone`: its holder's process certainly is (see isGone). */
export type LeaseState = "free" | "mine" | "gone" | "expired" | "held";

/** How `me` finds `lease` at `nowMs` (epoch ms); pure but for `isDead` (a stand-in: pure). */
export function leaseState(
  lease: Lease | undefined,
  me: Owner,
  nowMs: number,
  isDead?: DeadProbe,
): LeaseState {
  if (lease === undefined) return "free";
  if (lease.ownerId === me.id) return "mine";
  if (lease.holder !== undefined && isGone(lease.holder, me, isDead)) return "gone";
  return lease.untilMs < nowMs ? "expired" : "held";
}

/** Whether an owner may take a lease it finds so. */
export function mayTake(state: LeaseState): boolean {
  return state !== "held";
}

/** What {@link Leases.acquire} did: took the lease, or not (with its holder). */
export type Acquired<H> =
  | { readonly acquired: true }
  | { readonly acquired: false; readonly holder: H };

/** A table that keeps leases: its name and columns (code, never input). */
export interface LeaseTable<H> {
  readonly table: string;
  readonly key: string;
  readonly owner: string;
  readonly until: string;
  /**
   * `row`: a row is a lease (a lock: written with `written`, deleted on release); `columns`: two
   * columns of a row that outlives it (a job's; whether it may be leased is its store's rule).
   */
  readonly kind: "row" | "columns";
  /** Further columns a `row` lease writes when taken, from its owner and the time. */
  readonly written?: Readonly<Record<string, (owner: Owner, nowMs: number) => string | number>>;
  /** The lease a stored row holds (undefined: none), and what to tell of its holder. */
  read(row: unknown): { readonly lease: Lease; readonly holder: H } | undefined;
}

/** {@link leaseState} in SQL as far as the columns tell (a gone holder is found by acquire). */
export function notHeldSql(table: Pick<LeaseTable<unknown>, "owner" | "until">): string {
  return `(${table.owner} IS NULL OR ${table.owner} = @owner OR ${table.until} < @nowMs)`;
}

/** A table's leases: taken by the rule of {@link leaseState}, renewed and released by owners. */
export class Leases<K extends string | number, H> {
  private readonly sql;
  private readonly acquireTx;

  constructor(
    db: Database.Database,
    private readonly table: LeaseTable<H>,
  ) {
    const { table: name, key, owner, until } = table;
    const where = `WHERE ${key} = @key AND ${owner} = @owner`;
    const extra = Object.keys(table.written ?? {});
    const values = ["@key", "@owner", "@untilMs", ...extra.map((c) => `@${c}`)];
    const updates = [owner, until, ...extra].map((c) => `${c} = excluded.${c}`);
    const sql = {
      get: db.prepare<{ key: K }>(`SELECT * FROM ${name} WHERE ${key} = @key`),
      take: db.prepare<Record<string, string | number>>(
        table.kind === "row"
          ? `INSERT INTO ${name} (${[key, owner, until, ...extra].join(", ")})
             VALUES (${values.join(", ")})
             ON CONFLICT (${key}) DO UPDATE SET ${updates.join(", ")}`
          : `UPDATE ${name} SET ${owner} = @owner, ${until} = @untilMs WHERE ${key} = @key`,
      ),
      renew: db.prepare<{ key: K; owner: string; untilMs: number }>(
        `UPDATE ${name} SET ${until} = @untilMs ${where}`,
      ),
      release: db.prepare<{ key: K; owner: string }>(
        table.kind === "row"
          ? `DELETE FROM ${name} ${where}`
          : `UPDATE ${name} SET ${owner} = NULL, ${until} = NULL ${where}`,
      ),
    };
    this.sql = sql;
    this.acquireTx = db.transaction(
      (key: K, me: Owner, ttlMs: number, nowMs: number): Acquired<H> => {
        const found = this.peek(key);
        if (found !== undefined && !mayTake(leaseState(found.lease, me, nowMs))) {
          return { acquired: false, holder: found.holder };
        }
        const written = Object.entries(table.written ?? {}).map(([c, of]) => [c, of(me, nowMs)]);
        sql.take.run({ key, owner: me.id, untilMs: nowMs + ttlMs, ...Object.fromEntries(written) });
        return { acquired: true };
      },
    );
  }

  /** Takes `key` for `ttlMs` unless another owner may still hold it; one immediate transaction. */
  acquire(key: K, owner: Owner, ttlMs: number, nowMs: number): Acquired<H> {
    return this.acquireTx.immediate(key, owner, ttlMs, nowMs);
  }

  /** Extends `owner`'s lease; false when it is no longer its (it expired and was taken). */
  renew(key: K, owner: Owner, ttlMs: number, nowMs: number): boolean {
    return this.sql.renew.run({ key, owner: owner.id, untilMs: nowMs + ttlMs }).changes === 1;
  }

  /** The lease on `key` and its holder as stored (it may have expired); undefined for none. */
  peek(key: K): { readonly lease: Lease; readonly holder: H } | undefined {
    const row = this.sql.get.get({ key });
    return row === undefined ? undefined : this.table.read(row);
  }

  /** Gives the lease up (a no-op when it is not `owner`'s). */
  release(key: K, owner: Owner): void {
    this.sql.release.run({ key, owner: owner.id });
  }
}
