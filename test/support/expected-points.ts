/**
 * The points InfluxDB must hold for the simulator's records, by the independent schema oracle
 * (schema-oracle.ts: the spec's tables and docs/schema.md, no code of src but types), and the
 * points it holds, read back with InfluxQL.
 */
import type { DataRecord, RecordMember } from "../../src/records/data-record.js";
import type { SimulatedFleet } from "../../src/simulator/model/fleet.js";
import type { TestInfluxDb } from "./influx-db.js";
import {
  type IdShape,
  idShape,
  numberIn,
  requestsFor,
  safeMeasurement,
  safeName,
  valuesIdTag,
} from "./schema-oracle.js";

export type Fields = Record<string, number | string>;
export interface StoredPoint {
  measurement: string;
  tags: Record<string, string>;
  fields: Fields;
  time: number;
}

/** The points docs/schema.md promises for these records (the reference model). */
export function expectedPoints(
  deviceId: string,
  resourceId: string,
  records: DataRecord[],
): StoredPoint[] {
  const points = new Map<string, StoredPoint>();
  for (const record of records) {
    const time = Date.parse(`${record.timestamp}Z`) / 1000;
    for (const [id, member] of Object.entries(record)) {
      if (id === "timestamp" || id === "values_id" || member === null) continue;
      const shape = idShape(id);
      if (shape === undefined) continue;
      const tags: Record<string, string> = {
        device_id: safeName(deviceId),
        resource_id: safeName(resourceId),
        type: safeName(shape.type),
        unit: safeName(shape.unit),
        values_id: safeName(valuesIdTag(record.values_id)),
      };
      // the alarm ids' point is tagged `alarm` with the record's alarm name, when it has one
      const name = record.alarm_name;
      const isAlarmId = id === "alarm_index" || id === "alarm_name";
      if (isAlarmId && name !== null && name !== undefined && String(name) !== "") {
        tags.alarm = safeName(String(name));
      }
      const measurement = safeMeasurement(shape.measurement);
      const key = JSON.stringify([measurement, tags, time]);
      const point = points.get(key) ?? { measurement, tags, fields: {}, time };
      points.set(key, point);
      Object.assign(point.fields, fieldOf(shape, member));
    }
  }
  return [...points.values()];
}

function fieldOf({ field, type }: IdShape, member: RecordMember): Fields {
  if (field === "alarm_name") return { alarm_name: String(member) };
  if (typeof member === "boolean") return { [field]: member ? 1 : 0 };
  if (typeof member === "number") return { [field]: member === 0 ? 0 : member };
  const n = type === "text" ? undefined : numberIn(String(member));
  return n === undefined ? { text: String(member) } : { [field]: n === 0 ? 0 : n };
}

const sorted = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).sort());
export const sortPoints = (points: StoredPoint[]) =>
  points
    .map((p) => JSON.stringify([p.measurement, sorted(p.tags), sorted(p.fields), p.time]))
    .sort();

/** Every point of a test database (or those matching an InfluxQL `where`), as InfluxQL returns them. */
export async function storedPoints(db: TestInfluxDb, where?: string): Promise<StoredPoint[]> {
  const points: StoredPoint[] = [];
  const filter = where === undefined ? "" : ` WHERE ${where}`;
  for (const s of await db.series(`SELECT * FROM /.*/${filter} GROUP BY *`)) {
    for (const row of s.values) {
      const fields: Fields = {};
      s.columns.forEach((column, i) => {
        const v = row[i];
        if (column !== "time" && v !== null && v !== undefined)
          fields[column] = v as number | string;
      });
      // GROUP BY * lists the tag keys of every measurement; InfluxDB never stores an empty value
      const tags = Object.fromEntries(Object.entries(s.tags ?? {}).filter(([, v]) => v !== ""));
      points.push({ measurement: s.name, tags, fields, time: row[0] as number });
    }
  }
  return points;
}

/**
 * The raw data points of a test database (or those matching `where`): the pipeline's own health
 * points (etl_*), the sites (site) and the rollups derived from the data (rollup_*) left out.
 */
export async function rawPoints(db: TestInfluxDb, where?: string): Promise<StoredPoint[]> {
  return (await storedPoints(db, where)).filter(
    (p) =>
      !p.measurement.startsWith("etl_") &&
      !p.measurement.startsWith("rollup_") &&
      p.measurement !== "site",
  );
}

/** The simulator's own records of a device's resource over [fromS, toS], as the API's limits let them be asked. */
export function simulatorRecords(
  fleet: SimulatedFleet,
  deviceId: string,
  resourceId: string,
  fromS: number,
  toS: number,
): DataRecord[] {
  const values = (fleet.valueIds(deviceId, resourceId) ?? []).filter((v) => v !== "values_id");
  return requestsFor(values, fromS, toS).flatMap((c) =>
    fleet.records(deviceId, resourceId, c.values, c.fromS, c.toS),
  );
}
