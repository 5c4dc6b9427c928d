import { randomBytes } from "node:crypto";
import type { InfluxApi } from "../../src/influx/influx-connection.js";
import { type InfluxqlSeries, influxql, TEST_INFLUX_ORG, TEST_INFLUX_TOKEN } from "./influxd.js";

/** A fresh database on the run's shared influxd, reached as a bucket through the proxy. */
export interface TestInfluxDb {
  readonly url: string;
  readonly rawUrl: string;
  readonly token: string;
  readonly org: string;
  readonly bucket: string;
  /** Series of an InfluxQL query on this database (epoch seconds). */
  series(q: string): Promise<InfluxqlSeries[]>;
}

export async function createTestInfluxDb(prefix: string): Promise<TestInfluxDb> {
  const url = process.env.TEST_INFLUX_URL;
  const rawUrl = process.env.TEST_INFLUX_RAW_URL;
  if (!url || !rawUrl)
    throw new Error("no test influxd: jest's globalSetup (test/support/global-setup.ts) starts it");
  const bucket = `${prefix.replace(/\W/g, "_")}_${randomBytes(4).toString("hex")}`;
  await influxql(rawUrl, "", `CREATE DATABASE "${bucket}"`);
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

/** One way to InfluxDB a test runs on: its name, and the target of `db` on it. */
export interface InfluxPath {
  readonly name: string;
  target(db: TestInfluxDb): TestInfluxDb & { readonly api: InfluxApi };
}

/**
 * Both write paths, for `describe.each`: v1 writes influxd (1.6.7) directly on `/write?db=&rp=`
 * with no credentials; v2 goes through the proxy's `/api/v2/write` with the token.
 */
export const INFLUX_PATHS: readonly InfluxPath[] = [
  { name: "v1 direct", target: (db) => ({ ...db, url: db.rawUrl, token: "", api: "v1" }) },
  { name: "v2 proxy", target: (db) => ({ ...db, api: "v2" }) },
];
