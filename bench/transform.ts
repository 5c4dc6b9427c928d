import { InfluxDB, Point } from "@influxdata/influxdb-client";
import type { DataRecord } from "../src/api/schemas.js";
import { createFleet } from "../src/simulator/model/fleet.js";
import { RecordEncoder, valuesIdTag } from "../src/transform/record-encoder.js";
import { decodeValueId, ValueIdDecoder } from "../src/transform/value-id.js";

/** Records of the simulator holding at least `values` non-null values (one device, 20 values a request). */
export function sampleRecords(values: number): { records: DataRecord[]; values: number } {
  const fleet = createFleet({ seed: 1, resolutionS: 60 });
  const device = "hybrid-site-01";
  const ids = (fleet.valueIds(device, "all_data") ?? [])
    .filter((v) => v !== "values_id")
    .slice(0, 20);
  const records: DataRecord[] = [];
  let count = 0;
  let fromS = Date.UTC(2026, 0, 1) / 1000;
  while (count < values) {
    const batch = fleet.records(device, "all_data", ids, fromS, fromS + 7 * 86_400);
    for (const r of batch) {
      records.push(r);
      for (const [k, v] of Object.entries(r))
        if (k !== "timestamp" && k !== "values_id" && v !== null) count++;
      if (count >= values) break;
    }
    fromS += 7 * 86_400 + 1;
  }
  return { records, values: count };
}

/** Our path: RecordEncoder -> line protocol strings. Returns points. */
export function ourPath(records: readonly DataRecord[]): number {
  const encoder = new RecordEncoder(new ValueIdDecoder(), "hybrid-site-01", "all_data");
  let points = 0;
  for (let i = 0; i < records.length; i += 2000) {
    const out: string[] = [];
    points += encoder.encode(records.slice(i, i + 2000), out).points;
  }
  return points;
}

/** The naive path: a Point per value, written with writePoint (serialised into its buffer). */
export function naivePath(records: readonly DataRecord[], expectedPoints: number): number {
  // one batch that is never sent: what is measured is Point building and writePoint's serialising
  const api = new InfluxDB({ url: "http://127.0.0.1:9" }).getWriteApi("o", "b", "s", {
    batchSize: expectedPoints + 1,
    maxBatchBytes: Number.MAX_SAFE_INTEGER,
    flushInterval: 0,
  });
  let points = 0;
  for (const record of records) {
    const seconds = Date.parse(`${record.timestamp}Z`) / 1000;
    for (const [id, member] of Object.entries(record)) {
      if (id === "timestamp" || id === "values_id" || member === null) continue;
      const d = decodeValueId(id);
      const point = new Point(d.measurement || "_")
        .tag("device_id", "hybrid-site-01")
        .tag("resource_id", "all_data")
        .tag("type", d.type)
        .tag("unit", d.unit)
        .tag("values_id", valuesIdTag(record.values_id))
        .timestamp(seconds);
      if (typeof member === "number") point.floatField("value", member);
      else point.stringField("text", String(member));
      api.writePoint(point);
      points++;
    }
  }
  void api.dispose();
  return points;
}
