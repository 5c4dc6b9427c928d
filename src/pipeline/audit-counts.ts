/** What the gap audit (audit.ts) counts: API records, InfluxDB points and dead letters per day. */
import type { ApiClient } from "../api/api-client.js";
import type { DataAnswer } from "../api/data-stream.js";
import { ApiError } from "../api/errors.js";
import { VALUES_ID } from "../api/limits.js";
import type { InfluxQuery } from "../influx/influx-query.js";
import { quoteIdentifier, quoteLiteral } from "../influx/influxql.js";
import { type DataRecord, parseRecordTime } from "../records/data-record.js";
import type { DeadLetterStore } from "../state/dead-letter-store.js";
import type { DeadLetter } from "../state/types.js";
import { JsonArrayError } from "../transform/json-array-scanner.js";
import { storedMeasurement, storedName } from "../transform/line-protocol.js";
import { numericString } from "../transform/record-encoder.js";
import { recordPages } from "../transform/record-pages.js";
import { AnswerScreen } from "../transform/screen-answer.js";
import type { ValueIdDecoder } from "../transform/value-id.js";
import { DAY_S } from "../util/utc-time.js";
import type { ChunkRunner } from "./chunk-runner.js";
import { dataQuery, notRecords } from "./chunk-writer.js";
import type { Window } from "./cursor.js";
import { valueGroups } from "./plan-chunks.js";

/** The key of a (sample, day) count. */
export const perSample = (valueId: string, dayS: number) => `${valueId}\u0000${dayS}`;
/** 00:00 UTC of the day of `s` (epoch s). */
export const dayOf = (s: number) => Math.floor(s / DAY_S) * DAY_S;

/** One sampled value: the value id and how its points are found in InfluxDB. */
export interface Sample {
  readonly valueId: string;
  readonly group: readonly string[];
  readonly measurement: string;
  readonly unit: string;
  readonly type: string;
}

/**
 * The value that stands for each group of 20: the first counted in the `value` field (not text,
 * alarms or values_id) whose measurement, unit and type no other value of the resource shares.
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

/** A device resource to audit: its samples and how far it was synced. */
export interface AuditTarget {
  readonly deviceId: string;
  readonly resourceId: string;
  readonly samples: readonly Sample[];
  /** The cursor's newest record; undefined when never synced. */
  readonly syncedUntilS: number | undefined;
}

/** The API's records of a target's samples per (sample, day) up to `untilS`, and newer ones. */
export async function apiCounts(
  parts: {
    readonly client: Pick<ApiClient, "data">;
    readonly chunks: Pick<ChunkRunner, "forDevice">;
  },
  target: AuditTarget,
  windows: readonly Window[],
  untilS: number,
  requestsDone: (requests: number) => void,
): Promise<{ counts: Map<string, number>; newer: number }> {
  const { deviceId, resourceId, samples, syncedUntilS } = target;
  const counts = new Map<string, number>();
  const newer = new Set<string>();
  // a failed answer fails the whole audit: what it counted before is never read
  const countAnswer = async (answer: DataAnswer, window: Window, ids: readonly string[]) => {
    const screen = new AnswerScreen(window.fromS, window.toS);
    for await (const page of recordPages(answer, ids)) {
      for (const record of screen.keep(page.records)) {
        const atS = Math.floor(parseRecordTime(record.timestamp) / 1000);
        if (syncedUntilS === undefined || atS > syncedUntilS) {
          if (ids.some((id) => countsAsValue(record[id]))) newer.add(record.timestamp);
        }
        if (atS > untilS) continue;
        for (const id of ids) {
          if (!countsAsValue(record[id])) continue;
          const key = perSample(id, dayOf(atS));
          counts.set(key, (counts.get(key) ?? 0) + 1);
        }
      }
    }
  };
  await Promise.all(
    windows.flatMap((window) =>
      valueGroups(samples.map((s) => s.valueId)).map((ids) =>
        parts.chunks.forDevice(deviceId, async () => {
          const query = dataQuery({ deviceId, resourceId }, { values: ids, ...window });
          const answered = await parts.client.data(query).catch((error: unknown) => {
            requestsDone(error instanceof ApiError ? (error.attempts ?? 0) : 1);
            throw error;
          });
          requestsDone(answered.requests);
          await countAnswer(answered.value, window, ids).catch((error: unknown) => {
            throw error instanceof JsonArrayError ? notRecords(error, answered.value) : error;
          });
        }),
      ),
    ),
  );
  return { counts, newer: newer.size };
}

/** InfluxDB's points of a target's samples (in order) per day over [fromS, untilS], one request. */
export async function storedCounts(
  query: InfluxQuery,
  target: AuditTarget,
  fromS: number,
  untilS: number,
): Promise<Map<number, number>[]> {
  const { deviceId, resourceId } = target;
  const statements = target.samples.map(
    (s) =>
      `SELECT count("value") FROM ${quoteIdentifier(storedMeasurement(s.measurement))} ` +
      `WHERE "device_id" = ${quoteLiteral(storedName(deviceId))} ` +
      `AND "resource_id" = ${quoteLiteral(storedName(resourceId))} ` +
      `AND "unit" = ${quoteLiteral(storedName(s.unit))} AND "type" = ${quoteLiteral(storedName(s.type))} ` +
      `AND time >= ${fromS}s AND time <= ${untilS}s GROUP BY time(1d)`,
  );
  const answers = await query.query(statements);
  return target.samples.map((_, i) => {
    const perDay = new Map<number, number>();
    for (const series of answers[i] ?? []) {
      for (const [time, n] of series.values) {
        if (typeof time === "number" && typeof n === "number") perDay.set(time, n);
      }
    }
    return perDay;
  });
}

const TIMESTAMP_IN_ROW = /"timestamp"\s*:\s*"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)"/;
/** The timestamp ending a line of line protocol (second precision, as the pipeline writes). */
const TIMESTAMP_OF_LINE = /\s(-?\d{1,12})\s*$/;

/** The time (epoch s) of a dead letter's row or line; undefined when it cannot be read. */
export function deadLetterTimeS(letter: Pick<DeadLetter, "kind" | "payload">): number | undefined {
  if (letter.kind === "line") {
    const seconds = TIMESTAMP_OF_LINE.exec(letter.payload)?.[1];
    return seconds === undefined ? undefined : Number(seconds);
  }
  const timestamp = TIMESTAMP_IN_ROW.exec(letter.payload)?.[1];
  return timestamp === undefined ? undefined : Math.floor(parseRecordTime(timestamp) / 1000);
}

/**
 * Per (sample, day): dead-lettered rows in [fromS, untilS] (a backfill would refuse them again).
 */
export function deadLetteredPerDay(
  deadLetters: Pick<DeadLetterStore, "list">,
  target: AuditTarget,
  fromS: number,
  untilS: number,
): Map<string, number> {
  const counts = new Map<string, number>();
  for (const letter of deadLetters.list({ deviceId: target.deviceId })) {
    if (letter.kind !== "row" || letter.resourceId !== target.resourceId) continue;
    const atS = deadLetterTimeS(letter);
    if (atS === undefined || atS < fromS || atS > untilS) continue;
    for (const sample of target.samples) {
      if (!letter.valueIds.includes(sample.valueId)) continue;
      if (!letter.payload.includes(`${JSON.stringify(sample.valueId)}:`)) continue;
      const key = perSample(sample.valueId, dayOf(atS));
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  }
  return counts;
}
