import { planChunks } from "../../src/pipeline/plan-chunks.js";
import type { DataRecord, RecordMember } from "../../src/records/data-record.js";
import type { SimulatedFleet } from "../../src/simulator/model/fleet.js";
import { storedMeasurement, storedName } from "../../src/transform/line-protocol.js";
import { numericString, valuesIdTag } from "../../src/transform/record-encoder.js";
import { decodeValueId } from "../../src/transform/value-id.js";
import type { TestInfluxDb } from "./influx-db.js";

export type Fields = Record<string, number | string>;
export interface StoredPoint {
  measurement: string;
  tags: Record<string, string>;
  fields: Fields;
  time: number;
}

/** The points the README's schema promises for these records (the reference model). */
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
      const decoded = decodeValueId(id);
      if (decoded.kind === "values_id") continue;
      const tags: Record<string, string> = {
        device_id: storedName(deviceId),
        resource_id: storedName(resourceId),
        type: storedName(decoded.type),
        unit: storedName(decoded.unit),
        values_id: storedName(valuesIdTag(record.values_id)),
      };
      // the alarm ids' point is tagged `alarm` with the record's alarm name, when it has one
      const name = record.alarm_name;
      const isAlarmId = id === "alarm_index" || id === "alarm_name";
      if (isAlarmId && name !== null && name !== undefined && String(name) !== "") {
        tags.alarm = storedName(String(name));
      }
      const measurement = storedMeasurement(decoded.measurement);
      const key = JSON.stringify([measurement, tags, time]);
      const point = points.get(key) ?? { measurement, tags, fields: {}, time };
      points.set(key, point);
      Object.assign(point.fields, fieldOf(decoded.field, decoded.type, member));
    }
  }
  return [...points.values()];
}

function fieldOf(fixed: string | undefined, type: string, member: RecordMember): Fields {
  if (fixed === "alarm_name") return { alarm_name: String(member) };
  const field = fixed ?? "value";
  if (typeof member === "boolean") return { [field]: member ? 1 : 0 };
  if (typeof member === "number") return { [field]: member === 0 ? 0 : member };
  const n = type === "text" ? undefined : numericString(String(member));
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

/** The simulator's own records of a device's resource over [fromS, toS], as the pipeline's chunks ask. */
export function simulatorRecords(
  fleet: SimulatedFleet,
  deviceId: string,
  resourceId: string,
  fromS: number,
  toS: number,
): DataRecord[] {
  const values = (fleet.valueIds(deviceId, resourceId) ?? []).filter((v) => v !== "values_id");
  return planChunks(values, fromS, toS).flatMap((c) =>
    fleet.records(deviceId, resourceId, c.values, c.fromS, c.toS),
  );
}
