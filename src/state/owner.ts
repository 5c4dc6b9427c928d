import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { errnoOf } from "../util/errors.js";

/** Who holds something: its owner id, pid and host. */
export interface Holder {
  /** Unique per owner: `host:pid:process start (epoch ms):random` (a pid can be reused). */
  readonly id: string;
  readonly pid: number;
  readonly host: string;
}

/** The process that holds leases and locks and runs runs. */
export interface Owner extends Holder {
  /** What it is doing, for messages (`run`, `sync`, `backfill`…). */
  readonly command: string;
}

/** When this process started (epoch ms), the same for every owner it makes. */
const PROCESS_STARTED_MS = Math.round(Date.now() - process.uptime() * 1000);

export function processOwner(command: string): Owner {
  const host = hostname();
  const { pid } = process;
  const id = `${host}:${pid}:${PROCESS_STARTED_MS}:${randomBytes(4).toString("hex")}`;
  return { id, pid, host, command };
}

/** Whether the process `pid` of `host` is certainly gone ({@link isDeadHere}, or a stand-in). */
export type DeadProbe = (pid: number, host: string) => boolean;

/**
 * True when `holder` is certainly gone, as seen by `me`: a process of this host that no longer
 * exists, or an earlier life of my pid (a restarted container's service is pid 1 again on the
 * same hostname). Processes of other hosts cannot be asked: false.
 */
export function isGone(holder: Holder, me: Owner, isDead: DeadProbe = isDeadHere): boolean {
  if (holder.id === me.id || holder.host !== me.host) return false;
  if (holder.pid === me.pid) return startedOf(holder.id) !== startedOf(me.id);
  return isDead(holder.pid, holder.host);
}

/** The process start an owner id carries, or undefined for ids without one. */
function startedOf(ownerId: string): string | undefined {
  const parts = ownerId.split(":");
  return parts.length >= 4 ? parts.at(-2) : undefined;
}

/** The holder an owner id (`host:pid:started:random`) names, or undefined when it is not one. */
export function holderOf(ownerId: string): Holder | undefined {
  const parts = ownerId.split(":");
  if (parts.length < 4) return undefined;
  const pid = Number(parts.at(-3));
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  return { id: ownerId, pid, host: parts.slice(0, -3).join(":") };
}

/** True when a process of this host with this pid no longer exists (other hosts: false). */
export function isDeadHere(pid: number, host: string): boolean {
  if (host !== hostname()) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return errnoOf(error) === "ESRCH";
  }
}
