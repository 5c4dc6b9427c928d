import { randomBytes } from "node:crypto";
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
