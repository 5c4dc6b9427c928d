/** The gap audit (README "Audit"): what InfluxDB holds against what the API has, per UTC day. */
import type { ApiClient } from "../api/api-client.js";
import { MAX_VALUES_PER_REQUEST } from "../api/limits.js";
import type { InfluxQuery } from "../influx/influx-query.js";
import type { StateStore } from "../state/state-store.js";
import type { BackfillSpec } from "../state/types.js";
import type { ValueIdDecoder } from "../transform/value-id.js";
import { DAY_S, epochSeconds } from "../util/utc-time.js";
import {
  type AuditTarget,
  apiCounts,
  dayOf,
  deadLetteredPerDay,
  perSample,
  sampleValues,
  storedCounts,
} from "./audit-counts.js";
import { type CatalogReadParts, readCatalog } from "./catalog.js";
import { countChunks, timeWindows } from "./plan-chunks.js";
import { type SelectParts, selectDevices } from "./select-devices.js";

/** What `energy-etl audit` asks for. */
export interface AuditRequest {
  /** Device ids, or every device of this shard. */
  readonly devices: readonly string[] | "all";
  /** The first instant to check (its day is checked from then on) and the last day (any second). */
  readonly fromS: number;
  readonly toS: number;
}

/** A day of one sampled value where InfluxDB holds fewer points than the API has records. */
export interface AuditHole {
  readonly deviceId: string;
  readonly resourceId: string;
  /** 00:00 UTC of the day. */
  readonly dayS: number;
  /** The sampled value id, and the group of value ids it stands for. */
  readonly valueId: string;
  readonly group: readonly string[];
  readonly apiRecords: number;
  readonly stored: number;
  /** Rows of that day kept as dead letters: no backfill fills them. */
  readonly deadLettered: number;
}

/** A device resource with records in the API newer than its last sync: not holes, not compared. */
export interface NotSynced {
  readonly deviceId: string;
  readonly resourceId: string;
  /** The cursor's newest record (epoch s); undefined when the resource was never synced. */
  readonly syncedUntilS?: number;
  /** Records (timestamps) of its samples in the API after that, up to the audit's end. */
  readonly apiRecords: number;
}

export interface AuditResult {
  /** The first instant checked: the first day is partial unless it is 00:00 UTC. */
  readonly fromS: number;
  readonly toS: number;
  /** Device resources audited, and samples taken per day. */
  readonly resources: number;
  readonly samples: number;
  /** UTC days from the day of `fromS` to the day of `toS`, both counted (the first maybe partial). */
  readonly days: number;
  /** HTTP attempts to the API: all, those of GET /data, the catalog's. */
  readonly requests: number;
  readonly dataRequests: number;
  readonly catalogRequests: number;
  readonly queries: number;
  readonly holes: readonly AuditHole[];
  readonly notSynced: readonly NotSynced[];
  /** Value groups of a resource without a value that can be counted (not audited). */
  readonly unaudited: readonly { deviceId: string; resourceId: string; group: readonly string[] }[];
}

/** What the gap audit works with: the catalog and the data requests, cursors and dead letters. */
export type AuditParts = SelectParts &
  CatalogReadParts & {
    readonly client: Pick<ApiClient, "data">;
    readonly decoder: ValueIdDecoder;
    readonly store: Pick<StateStore, "cursors" | "deadLetters">;
    readonly apiNow: () => Date;
  };

/** Told about each data request (HTTP attempt of GET /data) the audit makes, for a progress bar. */
export interface AuditProgress {
  /** The data requests planned (a retry adds one). */
  start(total: number): void;
  step(): void;
}

/**
 * Audits device resources per UTC day from `request.fromS` (the instant: the first day is counted
 * from then on) up to each one's last sync: the samples' records per day in the API against one
 * InfluxQL count per sample and day.
 */
export async function auditGaps(
  parts: AuditParts,
  query: InfluxQuery,
  request: AuditRequest,
  progress?: AuditProgress,
): Promise<AuditResult> {
  let dataRequests = 0;
  const { targets, unaudited, catalogRequests } = await auditTargets(parts, request.devices);
  // after the catalog reads: the API's clock is known, a local clock ahead of it cuts nothing
  const nowS = epochSeconds(parts.apiNow());
  // from the instant asked for, as backfill: `audit --from -30d` after `backfill --from -30d`
  // compares the first day from that instant on, not from its 00:00 (which was never fetched)
  const fromS = request.fromS;
  const toS = Math.min(dayOf(request.toS) + DAY_S - 1, nowS);
  const windows = fromS > toS ? [] : timeWindows(fromS, toS);
  const requestsDone = (requests: number): void => {
    dataRequests += requests;
    for (let i = 0; i < requests; i++) progress?.step();
  };
  progress?.start(
    targets.reduce(
      (n, t) => n + Math.ceil(t.samples.length / MAX_VALUES_PER_REQUEST) * windows.length,
      0,
    ),
  );

  const holes: AuditHole[] = [];
  const notSynced: NotSynced[] = [];
  let queries = 0;
  for (const target of targets) {
    const { deviceId, resourceId, syncedUntilS } = target;
    // compared: up to the last sync; what the API has after it is not synced yet
    const untilS = Math.min(toS, syncedUntilS ?? fromS - 1);
    const api = await apiCounts(parts, target, windows, untilS, requestsDone);
    if (api.newer > 0) {
      const since = syncedUntilS === undefined ? {} : { syncedUntilS };
      notSynced.push({ deviceId, resourceId, ...since, apiRecords: api.newer });
    }
    if (untilS < fromS) continue;
    const stored = await storedCounts(query, target, fromS, untilS);
    queries++;
    const known = deadLetteredPerDay(parts.store.deadLetters, target, fromS, untilS);
    holes.push(...holesOf(target, fromS, untilS, { api: api.counts, stored, known }));
  }
  holes.sort(
    (a, b) =>
      a.deviceId.localeCompare(b.deviceId) ||
      a.resourceId.localeCompare(b.resourceId) ||
      a.dayS - b.dayS ||
      a.valueId.localeCompare(b.valueId),
  );
  notSynced.sort(
    (a, b) => a.deviceId.localeCompare(b.deviceId) || a.resourceId.localeCompare(b.resourceId),
  );
  return {
    fromS,
    toS,
    resources: targets.length,
    samples: targets.reduce((n, t) => n + t.samples.length, 0),
    days: fromS > toS ? 0 : (dayOf(toS) - dayOf(fromS)) / DAY_S + 1,
    requests: catalogRequests + dataRequests,
    dataRequests,
    catalogRequests,
    queries,
    holes,
    notSynced,
    unaudited,
  };
}

/** The (sample, day) counts of a target over [fromS, untilS] where InfluxDB holds too few. */
function holesOf(
  target: AuditTarget,
  fromS: number,
  untilS: number,
  counts: { api: Map<string, number>; stored: Map<number, number>[]; known: Map<string, number> },
): AuditHole[] {
  const { deviceId, resourceId } = target;
  const holes: AuditHole[] = [];
  target.samples.forEach(({ valueId, group }, i) => {
    for (let dayS = dayOf(fromS); dayS <= untilS; dayS += DAY_S) {
      const key = perSample(valueId, dayS);
      const apiRecords = counts.api.get(key) ?? 0;
      const stored = counts.stored[i]?.get(dayS) ?? 0;
      const deadLettered = counts.known.get(key) ?? 0;
      const hole = { deviceId, resourceId, dayS, valueId, group, apiRecords, stored, deadLettered };
      if (stored < apiRecords - deadLettered) holes.push(hole);
    }
  });
  return holes;
}

/** The device resources to audit (from the API's catalog), their samples and their cursors. */
async function auditTargets(
  parts: AuditParts,
  devices: AuditRequest["devices"],
): Promise<Pick<AuditResult, "unaudited" | "catalogRequests"> & { targets: AuditTarget[] }> {
  const selected = await selectDevices(parts, devices);
  let catalogRequests = selected.requests;
  const targets: AuditTarget[] = [];
  const unaudited: AuditResult["unaudited"][number][] = [];
  for (const deviceId of selected.deviceIds) {
    const read = await readCatalog(parts, deviceId, parts.logger.child({ device: deviceId }));
    if ("unknown" in read) throw read.unknown;
    catalogRequests += read.requests;
    for (const { resourceId, values } of read.resources) {
      const picked = sampleValues(parts.decoder, values);
      for (const group of picked.unaudited) unaudited.push({ deviceId, resourceId, group });
      if (picked.samples.length === 0) continue;
      const cursor = parts.store.cursors.get(deviceId, resourceId);
      const syncedUntilS =
        cursor === undefined ? undefined : (cursor.newestRecordS ?? cursor.startedS - 1);
      targets.push({ deviceId, resourceId, samples: picked.samples, syncedUntilS });
    }
  }
  return { targets, unaudited, catalogRequests };
}

/** The backfill jobs that fill the holes: per device resource, runs of consecutive hole days. */
export function holeJobs(
  holes: readonly AuditHole[],
  nowS: number,
): { spec: BackfillSpec; chunks: number }[] {
  const byResource = new Map<string, AuditHole[]>();
  for (const hole of holes) {
    const key = `${hole.deviceId}\u0000${hole.resourceId}`;
    byResource.set(key, [...(byResource.get(key) ?? []), hole]);
  }
  const jobs: { spec: BackfillSpec; chunks: number }[] = [];
  for (const list of byResource.values()) {
    const days = [...new Set(list.map((h) => h.dayS))].sort((a, b) => a - b);
    let start = 0;
    days.forEach((day, i) => {
      if (days[i + 1] === day + DAY_S) return;
      const fromS = days[start] ?? day;
      start = i + 1;
      const inRun = list.filter((h) => h.dayS >= fromS && h.dayS <= day);
      const [sample] = inRun;
      if (sample === undefined) return;
      const { deviceId, resourceId } = sample;
      const valueIds = [...new Set(inRun.flatMap((h) => h.group))].sort();
      const toS = Math.min(day + DAY_S - 1, nowS);
      const spec: BackfillSpec = { deviceId, resourceId, valueIds, fromS, toS, reason: "audit" };
      jobs.push({ spec, chunks: countChunks(valueIds.length, fromS, toS) });
    });
  }
  return jobs;
}
