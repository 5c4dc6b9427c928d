/**
 * The gap audit (README "Audit"): compares, per device resource and UTC day, what InfluxDB holds
 * with what the API says exists, reading one sample value per value group from the API (not
 * every value) and one InfluxQL count per sample, and lists the holes.
 */
import type { CallOptions } from "../api/client.js";
import { VALUES_ID } from "../api/limits.js";
import type { DataRecord } from "../api/schemas.js";
import { parseRecordTime } from "../api/time-format.js";
import { type InfluxQuery, quoteIdentifier, quoteLiteral } from "../influx/influx-query.js";
import type { BackfillSpec } from "../state/types.js";
import { storedMeasurement, storedName } from "../transform/line-protocol.js";
import { numericString } from "../transform/record-encoder.js";
import type { ValueIdDecoder } from "../transform/value-id.js";
import type { Pipeline } from "./pipeline.js";
import { countChunks, timeWindows, valueGroups } from "./plan-chunks.js";
import { AnswerScreen } from "./screen-records.js";
import { selectDevices } from "./select-devices.js";

export const DAY_S = 86_400;

/** What `energy-etl audit` asks for. */
export interface AuditRequest {
  /** Device ids, or every device of this shard. */
  readonly devices: readonly string[] | "all";
  /** First and last day to check (any second of them; whole UTC days are checked). */
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
  /** Records with that value in the API, and points of it in InfluxDB. */
  readonly apiRecords: number;
  readonly stored: number;
  /** Rows of that day kept as dead letters (`energy-etl dead-letters`): no backfill fills them. */
  readonly deadLettered: number;
}

/** What an audit found. */
export interface AuditResult {
  readonly fromS: number;
  readonly toS: number;
  /** Device resources audited, and samples taken per day. */
  readonly resources: number;
  readonly samples: number;
  readonly days: number;
  /** HTTP attempts to the API (catalog and data). */
  readonly requests: number;
  /** InfluxQL requests. */
  readonly queries: number;
  readonly holes: readonly AuditHole[];
  /** Value groups of a resource without a value that can be counted (not audited). */
  readonly unaudited: readonly { deviceId: string; resourceId: string; group: readonly string[] }[];
}

/** Told about each window read from the API (for a progress bar). */
export interface AuditProgress {
  start(total: number): void;
  step(): void;
}

/** One sampled value: the value id and how its points are found in InfluxDB. */
interface Sample {
  readonly valueId: string;
  readonly group: readonly string[];
  readonly measurement: string;
  readonly unit: string;
  readonly type: string;
}

/**
 * The value of each group of 20 (the requests the pipeline makes) that stands for its group: the
 * first whose points are counted in the `value` field (not text, alarms or values_id) and whose
 * measurement, unit and type no other value of the resource shares.
 */
export function sampleValues(
  decoder: ValueIdDecoder,
  values: readonly string[],
): { samples: Sample[]; unaudited: (readonly string[])[] } {
  const decoded = values
    .filter((v) => v !== VALUES_ID)
    .map((valueId) => ({ valueId, d: decoder.decode(valueId) }));
  const seriesKey = (d: (typeof decoded)[number]["d"]) =>
    `${d.measurement}\u0000${d.unit}\u0000${d.type}`;
  const shared = new Map<string, number>();
  for (const { d } of decoded) shared.set(seriesKey(d), (shared.get(seriesKey(d)) ?? 0) + 1);
  const byId = new Map(decoded.map((x) => [x.valueId, x.d]));
  const samples: Sample[] = [];
  const unaudited: (readonly string[])[] = [];
  const countable = (id: string): boolean => {
    const d = byId.get(id);
    return (
      d !== undefined &&
      d.kind !== "values_id" &&
      d.field === undefined &&
      d.type !== "text" &&
      shared.get(seriesKey(d)) === 1
    );
  };
  for (const group of valueGroups(values)) {
    // a coded value (a real measurement) rather than protocol_id, when the group has one
    const pick =
      group.find((id) => countable(id) && byId.get(id)?.codes !== undefined) ??
      group.find(countable);
    const d = pick === undefined ? undefined : byId.get(pick);
    if (pick === undefined || d === undefined) {
      unaudited.push(group);
      continue;
    }
    samples.push({ valueId: pick, group, measurement: d.measurement, unit: d.unit, type: d.type });
  }
  return { samples, unaudited };
}

/** True when a member is written as a number in the `value` field (what count("value") sees). */
function countsAsValue(member: DataRecord[string] | undefined): boolean {
  if (member === null || member === undefined) return false;
  if (typeof member === "number" || typeof member === "boolean") return true;
  return numericString(member) !== undefined;
}

/**
 * Audits device resources over whole UTC days: per 7-day window one GET /data with the samples
 * (one value per group of 20), counted per day, against one InfluxQL count per sample grouped by
 * day. A day where InfluxDB holds fewer points than the API has records is a hole.
 */
export async function auditGaps(
  pipeline: Pipeline,
  query: InfluxQuery,
  request: AuditRequest,
  progress?: AuditProgress,
): Promise<AuditResult> {
  const { client, decoder } = pipeline;
  const nowS = Math.floor(pipeline.apiNow().getTime() / 1000);
  const fromS = Math.floor(request.fromS / DAY_S) * DAY_S;
  const toS = Math.min(Math.floor(request.toS / DAY_S) * DAY_S + DAY_S - 1, nowS);
  let requests = 0;
  const calls: CallOptions = { onAttempt: () => requests++ };
  const deviceIds = await selectDevices(pipeline, request.devices, calls);
  const targets: { deviceId: string; resourceId: string; samples: Sample[] }[] = [];
  const unaudited: AuditResult["unaudited"][number][] = [];
  for (const deviceId of deviceIds) {
    const { resource_ids } = await pipeline.forDevice(deviceId, () =>
      client.listResources(deviceId, calls),
    );
    for (const resourceId of resource_ids) {
      const { values } = await pipeline.forDevice(deviceId, () =>
        client.listValues(deviceId, resourceId, calls),
      );
      const picked = sampleValues(decoder, values);
      for (const group of picked.unaudited) unaudited.push({ deviceId, resourceId, group });
      if (picked.samples.length > 0)
        targets.push({ deviceId, resourceId, samples: picked.samples });
    }
  }
  const windows = fromS > toS ? [] : timeWindows(fromS, toS);
  const sampleRequests = (t: (typeof targets)[number]) => Math.ceil(t.samples.length / 20);
  progress?.start(targets.reduce((n, t) => n + sampleRequests(t) * windows.length, 0));

  const holes: AuditHole[] = [];
  let queries = 0;
  for (const target of targets) {
    const { deviceId, resourceId, samples } = target;
    // the API: records per (sample, day)
    const apiCounts = new Map<string, number>();
    const perSample = (valueId: string, dayS: number) => `${valueId}\u0000${dayS}`;
    await Promise.all(
      windows.flatMap((window) =>
        valueGroups(samples.map((s) => s.valueId)).map((ids) =>
          pipeline.forDevice(deviceId, async () => {
            const screen = new AnswerScreen(window.fromS, window.toS);
            let attempt = 0;
            let counts = new Map<string, number>();
            const query = {
              deviceId,
              resourceId,
              values: ids,
              from: new Date(window.fromS * 1000),
              to: new Date(window.toS * 1000),
            };
            for await (const page of client.data(query, calls)) {
              if (page.attempt !== attempt) {
                attempt = page.attempt;
                screen.restart();
                counts = new Map();
              }
              for (const record of screen.keep(page.records)) {
                const dayS = Math.floor(parseRecordTime(record.timestamp) / 1000 / DAY_S) * DAY_S;
                for (const id of ids) {
                  if (!countsAsValue(record[id])) continue;
                  const key = perSample(id, dayS);
                  counts.set(key, (counts.get(key) ?? 0) + 1);
                }
              }
            }
            for (const [key, n] of counts) apiCounts.set(key, (apiCounts.get(key) ?? 0) + n);
            progress?.step();
          }),
        ),
      ),
    );
    // InfluxDB: points per (sample, day), one statement per sample, one request per resource
    const statements = samples.map(
      (s) =>
        `SELECT count("value") FROM ${quoteIdentifier(storedMeasurement(s.measurement))} ` +
        `WHERE "device_id" = ${quoteLiteral(storedName(deviceId))} ` +
        `AND "resource_id" = ${quoteLiteral(storedName(resourceId))} ` +
        `AND "unit" = ${quoteLiteral(storedName(s.unit))} AND "type" = ${quoteLiteral(storedName(s.type))} ` +
        `AND time >= ${fromS}s AND time <= ${toS}s GROUP BY time(1d)`,
    );
    const answers = await query.query(statements);
    queries++;
    const known = deadLetteredPerDay(pipeline, deviceId, resourceId, samples);
    samples.forEach((sample, i) => {
      const stored = new Map<number, number>();
      for (const series of answers[i] ?? []) {
        for (const row of series.values) {
          const [time, n] = row;
          if (typeof time === "number" && typeof n === "number") stored.set(time, n);
        }
      }
      for (let dayS = fromS; dayS <= toS; dayS += DAY_S) {
        const api = apiCounts.get(perSample(sample.valueId, dayS)) ?? 0;
        const have = stored.get(dayS) ?? 0;
        const deadLettered = known.get(perSample(sample.valueId, dayS)) ?? 0;
        if (have < api - deadLettered) {
          holes.push({
            deviceId,
            resourceId,
            dayS,
            valueId: sample.valueId,
            group: sample.group,
            apiRecords: api,
            stored: have,
            deadLettered,
          });
        }
      }
    });
  }
  holes.sort(
    (a, b) =>
      a.deviceId.localeCompare(b.deviceId) ||
      a.resourceId.localeCompare(b.resourceId) ||
      a.dayS - b.dayS ||
      a.valueId.localeCompare(b.valueId),
  );
  return {
    fromS,
    toS,
    resources: targets.length,
    samples: targets.reduce((n, t) => n + t.samples.length, 0),
    days: fromS > toS ? 0 : Math.round((toS + 1 - fromS) / DAY_S),
    requests,
    queries,
    holes,
    unaudited,
  };
}

const TIMESTAMP_IN_ROW = /"timestamp"\s*:\s*"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)"/;

/**
 * Per (sample, day): rows of the device resource kept as dead letters that hold the sample, so
 * a row the pipeline refused (and a backfill would refuse again) is not reported as a hole.
 */
function deadLetteredPerDay(
  pipeline: Pipeline,
  deviceId: string,
  resourceId: string,
  samples: readonly Sample[],
): Map<string, number> {
  const counts = new Map<string, number>();
  for (const letter of pipeline.store.deadLetters.list({ deviceId })) {
    if (letter.kind !== "row" || letter.resourceId !== resourceId) continue;
    const timestamp = TIMESTAMP_IN_ROW.exec(letter.payload)?.[1];
    if (timestamp === undefined) continue;
    const dayS = Math.floor(parseRecordTime(timestamp) / 1000 / DAY_S) * DAY_S;
    for (const sample of samples) {
      if (!letter.valueIds.includes(sample.valueId)) continue;
      if (!letter.payload.includes(`${JSON.stringify(sample.valueId)}:`)) continue;
      const key = `${sample.valueId}\u0000${dayS}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  }
  return counts;
}

/**
 * The backfill jobs that fill the holes exactly: per device resource, runs of consecutive hole
 * days, with the value groups that had holes on them (reason `audit`).
 */
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
    for (let i = 0; i < days.length; i++) {
      const day = days[i] ?? 0;
      const next = days[i + 1];
      if (next === day + DAY_S) continue;
      const first = days[start] ?? day;
      const inRun = list.filter((h) => h.dayS >= first && h.dayS <= day);
      const valueIds = [...new Set(inRun.flatMap((h) => h.group))].sort();
      const sample = inRun[0];
      if (sample !== undefined) {
        const spec: BackfillSpec = {
          deviceId: sample.deviceId,
          resourceId: sample.resourceId,
          valueIds,
          fromS: first,
          toS: Math.min(day + DAY_S - 1, nowS),
          reason: "audit",
        };
        jobs.push({ spec, chunks: countChunks(valueIds.length, spec.fromS, spec.toS) });
      }
      start = i + 1;
    }
  }
  return jobs;
}
