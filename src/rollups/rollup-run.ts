/** Due rollups: marked ranges recomputed, then forgotten (a failure leaves them for the next run). */
import PQueue from "p-queue";
import type { Logger } from "pino";
import { scrubSecrets } from "../logger.js";
import type { CatalogStore } from "../state/catalog-store.js";
import type { DeadLetterStore } from "../state/dead-letter-store.js";
import type { LockHolder } from "../state/lock-store.js";
import type { RollupMark, RollupStore } from "../state/rollup-store.js";
import { storedMeasurement, storedName } from "../transform/line-protocol.js";
import type { ValueIdDecoder } from "../transform/value-id.js";
import { messageOf } from "../util/errors.js";
import { isCounter } from "./counters.js";
import { type RecomputeJob, type RecomputeParts, recomputeAll } from "./recompute.js";
import type { RollupLock } from "./rollup-lock.js";
import type { CounterSeries, RollupTarget } from "./series.js";

/** What writing rollups needs: what recomputing does, and where the marks and counters are. */
export interface RollupParts extends Omit<RecomputeParts, "extensions" | "setAside"> {
  readonly marks: Pick<RollupStore, "pending" | "done" | "mark" | "forget">;
  /** Where rollup points beyond the bound are set aside (bounds.ts). */
  readonly deadLetters: Pick<DeadLetterStore, "add">;
  readonly now: () => Date;
  readonly catalog: Pick<CatalogStore, "list">;
  readonly decoder: ValueIdDecoder;
  readonly lock: RollupLock;
  readonly logger: Logger;
}

export interface RollupResult {
  /** Device resources whose rollups were written. */
  readonly resources: number;
  readonly points: number;
  /** Device resources whose rollups failed (their marks stay). */
  readonly failed: number;
  readonly error?: string;
  /** Another process held the rollups lock: nothing was done here, the marks stay due. */
  readonly heldBy?: LockHolder;
}

/** Device resources recomputed together: their statements share requests, their points writes. */
const DEVICE_RESOURCES_PER_BATCH = 16;
/** Batches recomputed at once (their queries keep influxd's cores busy). */
const BATCHES_AT_ONCE = 2;

/** The `request` of a mark of hours a pass wrote ahead of their days (recompute.ts). */
const EXTENSION_MARK = "hours written ahead of their days";

/** A device resource's due ranges, merged, and the last mark they cover. */
interface Due {
  readonly deviceId: string;
  readonly resourceId: string;
  readonly ranges: Omit<RecomputeJob, "target">[];
  upTo: number;
}

/** Writes the rollups due for `deviceIds` (default: all), holding the rollups lock. */
export async function runRollups(
  parts: RollupParts,
  deviceIds?: readonly string[],
  wait?: () => boolean,
): Promise<RollupResult> {
  const held = await parts.lock.hold(() => rollupPass(parts, deviceIds), wait);
  return held.held ? held.value : { resources: 0, points: 0, failed: 0, heldBy: held.holder };
}

async function rollupPass(
  parts: RollupParts,
  deviceIds?: readonly string[],
): Promise<RollupResult> {
  const wanted = deviceIds === undefined ? undefined : new Set(deviceIds);
  const due = dueRanges(parts.marks.pending().filter((m) => wanted?.has(m.deviceId) ?? true));
  const total: Tally = { resources: 0, points: 0, failed: 0 };
  const queue = new PQueue({ concurrency: BATCHES_AT_ONCE });
  for (let i = 0; i < due.length; i += DEVICE_RESOURCES_PER_BATCH) {
    const batch = due.slice(i, i + DEVICE_RESOURCES_PER_BATCH);
    void queue.add(async () => addInto(total, await recomputeBatch(parts, batch)));
  }
  await queue.onIdle();
  return total;
}

type Tally = { resources: number; points: number; failed: number; error?: string };

/** A device resource due, with the recompute jobs of its ranges (its counters read once). */
interface DueJobs {
  readonly due: Due;
  readonly jobs: readonly RecomputeJob[];
}

/** Recomputes a batch and forgets its marks; when it fails, each device resource alone. */
async function recomputeBatch(parts: RollupParts, batch: readonly Due[]): Promise<RollupResult> {
  const items = batch.map((due): DueJobs => {
    const counters = countersOf(parts, due.deviceId, due.resourceId);
    const target = { deviceId: due.deviceId, resourceId: due.resourceId, counters };
    return { due, jobs: due.ranges.map((range) => ({ target, ...range })) };
  });
  if (items.length > 1) {
    try {
      return await recomputeItems(parts, items);
    } catch (error) {
      // one of them (or InfluxDB) failed: each is tried alone below
      parts.logger.debug({ error: messageOf(error) }, "rollups of a batch failed: one at a time");
    }
  }
  const total: Tally = { resources: 0, points: 0, failed: 0 };
  for (const item of items) {
    try {
      addInto(total, await recomputeItems(parts, [item]));
    } catch (error) {
      parts.logger.warn(
        { device: item.due.deviceId, resource: item.due.resourceId, error: messageOf(error) },
        "rollups not written; tried again next run",
      );
      total.failed++;
      total.error ??= `${item.due.deviceId}/${item.due.resourceId}: ${messageOf(error)}`;
    }
  }
  return total;
}

async function recomputeItems(
  parts: RollupParts,
  items: readonly DueJobs[],
): Promise<RollupResult> {
  const points = await recomputeAll(
    withExtensions(parts),
    items.flatMap((item) => item.jobs),
  );
  for (const { due } of items) parts.marks.done(due.deviceId, due.resourceId, due.upTo);
  return { resources: items.length, points, failed: 0 };
}

/**
 * The parts of a recompute whose hours written ahead of their days are marked meanwhile, and whose
 * points beyond the bound become dead letters (kind `line`, with the reason), one warning each.
 */
function withExtensions(parts: RollupParts): RecomputeParts {
  const extensions = {
    mark: (t: RollupTarget, fromS: number, toS: number) =>
      parts.marks.mark(t.deviceId, t.resourceId, fromS, toS, EXTENSION_MARK),
    forget: (ids: readonly number[]) => parts.marks.forget(ids),
  };
  const setAside: RecomputeParts["setAside"] = (t, line, reason, span) => {
    const error = `rollup point set aside: ${reason} (see the counter's raw readings)`;
    const { deviceId, resourceId } = t;
    const letter = { kind: "line" as const, deviceId, resourceId, valueIds: [], payload: line };
    const where = { windowFromS: span.fromS, windowToS: span.toS };
    parts.deadLetters.add({ ...letter, ...where, error: scrubSecrets(error) }, parts.now());
    parts.logger.warn(
      { device: deviceId, resource: resourceId, from: span.fromS, error },
      "rollup point beyond the bound: kept as a dead letter, the series' other rollups written",
    );
  };
  return { ...parts, extensions, setAside };
}

/** Recomputes [fromS, toS] of one target now, as a pass does (`audit --rollups --fix`). */
export async function recomputeNow(
  parts: RollupParts,
  target: RollupTarget,
  fromS: number,
  toS: number,
): Promise<number> {
  const held = await parts.lock.hold(
    () => recomputeAll(withExtensions(parts), [{ target, fromS, toS }]),
    () => true,
  );
  return held.held ? held.value : 0;
}

function addInto(total: Tally, r: RollupResult): void {
  total.resources += r.resources;
  total.points += r.points;
  total.failed += r.failed;
  total.error ??= r.error;
}

/** Marks grouped by device resource (recompute.ts merges their hours). */
function dueRanges(marks: readonly RollupMark[]): Due[] {
  const byResource = new Map<string, Due>();
  for (const mark of marks) {
    const { deviceId, resourceId } = mark;
    const key = JSON.stringify([deviceId, resourceId]);
    const due = byResource.get(key) ?? { deviceId, resourceId, ranges: [], upTo: mark.id };
    byResource.set(key, due);
    due.ranges.push({ fromS: mark.fromS, toS: mark.toS, written: mark.written });
    due.upTo = Math.max(due.upTo, mark.id);
  }
  return [...byResource.values()];
}

/** The counters a device resource lists, as InfluxDB stores their raw points. */
export function countersOf(
  parts: Pick<RollupParts, "catalog" | "decoder">,
  deviceId: string,
  resourceId: string,
): CounterSeries[] {
  const counters = new Map<string, CounterSeries>();
  for (const id of parts.catalog.list(deviceId, resourceId)) {
    if (!isCounter(parts.decoder, id)) continue;
    const decoded = parts.decoder.decode(id);
    const series = {
      measurement: storedMeasurement(decoded.measurement),
      unit: storedName(decoded.unit),
      type: storedName(decoded.type),
    };
    counters.set(JSON.stringify(series), series);
  }
  return [...counters.values()];
}

/** Rollup passes along a backfill, for devices kicked as chunks are written; finish runs the last. */
export class RollupsAlong {
  private readonly kicked = new Set<string>();
  private running: Promise<void> | undefined;
  private readonly total: Tally = { resources: 0, points: 0, failed: 0 };

  /** @param rateBound whether the rate limit holds the fetching: only then does a pass run along */
  constructor(
    private readonly parts: RollupParts | undefined,
    private readonly run: { readonly logger: Logger },
    private readonly stopping: () => boolean,
    private readonly rateBound: () => boolean = () => true,
  ) {}

  /** `deviceId` has rollups due: a pass for it soon (not waited for), when the rate holds. */
  kick(deviceId: string): void {
    if (this.parts === undefined) return;
    this.kicked.add(deviceId);
    if (this.rateBound()) this.running ??= this.drain(this.parts);
  }

  private async drain(parts: RollupParts): Promise<void> {
    try {
      while (this.kicked.size > 0 && !this.stopping()) {
        const devices = [...this.kicked];
        this.kicked.clear();
        // another process's pass (heldBy) leaves them for the last pass
        addInto(this.total, await runRollups({ ...parts, logger: this.run.logger }, devices));
      }
    } catch (error) {
      // a pass along the run never ends the run: its marks stay for the last pass
      this.run.logger.warn({ error: messageOf(error) }, "rollups along the run stopped");
    } finally {
      this.running = undefined;
    }
  }

  /** Resolves once the pass in progress (if any) is over, whatever the run did meanwhile. */
  async settled(): Promise<void> {
    await this.running;
  }

  /** The last pass, for `deviceIds`: what all passes did, logged (undefined: none ran). */
  async finish(deviceIds: readonly string[]): Promise<RollupResult | undefined> {
    const parts = this.parts;
    await this.running;
    if (parts === undefined || this.stopping()) return undefined;
    const last = await runRollups({ ...parts, logger: this.run.logger }, deviceIds);
    addInto(this.total, last);
    const result: RollupResult = {
      ...this.total,
      ...(last.heldBy === undefined ? {} : { heldBy: last.heldBy }),
    };
    if (result.heldBy !== undefined) {
      const { pid, host, command } = result.heldBy;
      this.run.logger.info(
        { holder: { pid, host, command } },
        "rollups lock held by another process: these rollups stay due for the next pass",
      );
    }
    if (result.resources + result.failed > 0) {
      const { error: _error, heldBy: _held, ...counts } = result;
      this.run.logger.info(counts, "rollups written");
    }
    return result;
  }
}

/** The rollups due for `deviceIds` at the end of a run: {@link RollupsAlong}'s last pass. */
export function rollupsAfterRun(
  parts: RollupParts | undefined,
  run: { readonly logger: Logger },
  deviceIds: readonly string[],
  stopping: () => boolean,
): Promise<RollupResult | undefined> {
  return new RollupsAlong(parts, run, stopping).finish(deviceIds);
}

/** A pass's failure as a failed part of its run (its run is then partial), if it failed. */
export function rollupFailures(
  result: RollupResult | undefined,
): { readonly part: Record<string, unknown>; readonly error: string }[] {
  if (result === undefined || result.failed === 0) return [];
  return [
    {
      part: { rollups: `${result.failed} device resources` },
      error: `rollups not written (tried again next run): ${result.error ?? "see the log"}`,
    },
  ];
}
