import { randomBytes } from "node:crypto";
import type { DataRecord } from "../../src/records/data-record.js";
import { META_VALUE_IDS } from "../../src/simulator/model/catalog.js";
import type { Simulator } from "../../src/simulator/server.js";
import { rawPoints, type StoredPoint } from "./expected-points.js";
import type { TestInfluxDb } from "./influx-db.js";
import { influxql, TEST_INFLUX_ORG, TEST_INFLUX_TOKEN } from "./influxd.js";
import { type OracleRequest, requestsFor } from "./schema-oracle.js";

/** One GET /data request a sync of the window makes, with the simulator's rows for it (no faults). */
export interface TruthAnswer {
  readonly resourceId: string;
  readonly chunk: OracleRequest;
  readonly records: DataRecord[];
}

/** The requests a first sync of `deviceId` over [fromS, toS] makes (by the schema oracle), and the truth of each answer. */
export function truthAnswers(
  sim: Simulator,
  deviceId: string,
  fromS: number,
  toS: number,
): TruthAnswer[] {
  const { fleet } = sim;
  return (fleet.resourceIds(deviceId) ?? []).flatMap((resourceId) => {
    const values = fleet.valueIds(deviceId, resourceId) ?? [];
    return requestsFor(values, fromS, toS).map((chunk) => ({
      resourceId,
      chunk,
      records: fleet.records(deviceId, resourceId, chunk.values, chunk.fromS, chunk.toS),
    }));
  });
}

/** The rows of the answers grouped by resource (what expectedPoints takes, one call per resource). */
export function recordsByResource(answers: readonly TruthAnswer[]): Map<string, DataRecord[]> {
  const byResource = new Map<string, DataRecord[]>();
  for (const answer of answers) {
    const list = byResource.get(answer.resourceId) ?? [];
    list.push(...answer.records);
    byResource.set(answer.resourceId, list);
  }
  return byResource;
}

/** A row's identity in the API: (timestamp, values_id). */
export const rowKey = (record: Pick<DataRecord, "timestamp" | "values_id">): string =>
  `${record.timestamp}|${JSON.stringify(record.values_id ?? null)}`;

const META = new Set(META_VALUE_IDS);

/** True when a row has a member the simulator can poison (a non-meta one, with or without a value). */
export function hasPoisonTarget(record: DataRecord): boolean {
  return Object.keys(record).some((key) => key !== "timestamp" && !META.has(key));
}

/** Epoch seconds of a record timestamp. */
export const recordS = (timestamp: string): number => Date.parse(`${timestamp}Z`) / 1000;

/**
 * The first clock value (startMs, startMs + stepMs, ...; at most `tries`) that `accept` takes;
 * throws when none does (a bounded search over the simulator's deterministic truth).
 */
export function findClock<T>(
  startMs: number,
  stepMs: number,
  tries: number,
  accept: (nowMs: number) => T | undefined,
): { nowMs: number; found: T } {
  for (let k = 0; k < tries; k++) {
    const nowMs = startMs + k * stepMs;
    const found = accept(nowMs);
    if (found !== undefined) return { nowMs, found };
  }
  throw new Error(`no clock value among ${tries} fits the test's data`);
}

/**
 * A fresh database on the run's influxd with one-hour shards (field types are per shard in
 * InfluxDB 1.x, so a type conflict is confined to one hour), reached as a bucket through the proxy.
 */
export async function createHourShardDb(prefix: string): Promise<TestInfluxDb> {
  const url = process.env.TEST_INFLUX_URL;
  const rawUrl = process.env.TEST_INFLUX_RAW_URL;
  if (!url || !rawUrl) throw new Error("no test influxd: jest's globalSetup starts it");
  const bucket = `${prefix.replace(/\W/g, "_")}_${randomBytes(4).toString("hex")}`;
  await influxql(rawUrl, "", `CREATE DATABASE "${bucket}" WITH SHARD DURATION 1h`);
  return {
    url,
    rawUrl,
    token: TEST_INFLUX_TOKEN,
    org: TEST_INFLUX_ORG,
    bucket,
    series: async (q) =>
      (await influxql(rawUrl, bucket, q)).results?.flatMap((r) => r.series ?? []) ?? [],
  };
}

/** Writes line protocol (second precision) straight to influxd, past the pipeline. */
export async function writeRawLines(db: TestInfluxDb, lines: readonly string[]): Promise<void> {
  const params = new URLSearchParams({ db: db.bucket, precision: "s" });
  const res = await fetch(`${db.rawUrl}/write?${params}`, {
    method: "POST",
    body: lines.join("\n"),
  });
  if (res.status !== 204) throw new Error(`write failed: HTTP ${res.status} ${await res.text()}`);
}

/** Drops the shard of the database that starts at `hourS` (what clears a field type on 1.x). */
export async function dropShardAt(db: TestInfluxDb, hourS: number): Promise<void> {
  const start = new Date(hourS * 1000).toISOString().replace(".000Z", "Z");
  const { results } = await influxql(db.rawUrl, "", "SHOW SHARDS");
  const series = results?.flatMap((r) => r.series ?? []).find((s) => s.name === db.bucket);
  const idAt = series?.columns.indexOf("id") ?? -1;
  const startAt = series?.columns.indexOf("start_time") ?? -1;
  const row = series?.values.find((v) => v[startAt] === start);
  const id = row?.[idAt];
  if (typeof id !== "number") throw new Error(`no shard of ${db.bucket} starts at ${start}`);
  await influxql(db.rawUrl, "", `DROP SHARD ${id}`);
}

/** Drops a test database. */
export async function dropTestDb(db: TestInfluxDb): Promise<void> {
  await influxql(db.rawUrl, "", `DROP DATABASE "${db.bucket}"`);
}

/** The stored points of one device (etl_* and rollup_* left out). */
export async function devicePoints(db: TestInfluxDb, deviceId: string): Promise<StoredPoint[]> {
  const quoted = deviceId.replace(/\\/g, "\\\\").replace(/'/g, "\\'");
  return rawPoints(db, `"device_id" = '${quoted}'`);
}

/** A pino JSON log line as an object (empty when the line is not a JSON object). */
export function logRecord(line: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(line);
    if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) {
      return { ...parsed };
    }
  } catch {
    // not JSON
  }
  return {};
}

/** The column values of the first column of InfluxQL series (SHOW MEASUREMENTS, SHOW TAG KEYS). */
export function firstColumn(series: readonly { values: unknown[][] }[]): string[] {
  return series.flatMap((s) => s.values.map((v) => String(v[0])));
}
