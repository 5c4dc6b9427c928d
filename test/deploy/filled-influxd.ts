/**
 * Shared by the Grafana tests of test/deploy: an influxd filled through the pipeline from the
 * simulator, and which tag-driven queries (`FROM /regex/ WHERE "unit" = … AND "type" = …`) should
 * find something on a given device.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Site } from "../../src/config/sites.js";
import { runCatalogRefresh } from "../../src/pipeline/catalog-refresh.js";
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import { runSync } from "../../src/pipeline/sync.js";
import type { Simulator, SimulatorOptions } from "../../src/simulator/server.js";
import { queriedMeasurement } from "../support/dashboard-queries.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { influxql } from "../support/influxd.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { idShape } from "../support/schema-oracle.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";
import { tempDir } from "../support/temp-dir.js";

export const DAY_S = 86_400;
/** The first sync: 00:05 UTC, SYNC_START P3D, so the data covers 12 June 00:05 to 15 June. */
export const NOW_MS = Date.UTC(2026, 5, 15, 0, 5);
export const SYNCED_FROM_S = NOW_MS / 1000 - 3 * DAY_S;

export const isoOf = (s: number): string => new Date(s * 1000).toISOString();

/** ROLLUP_TIME_ZONES of the fill: the zones the tests choose as $tz. */
export const FILL_ZONES = [
  "UTC",
  "Europe/Berlin",
  "Europe/London",
  "America/New_York",
  "Africa/Nairobi",
  "Asia/Kolkata",
  "Australia/Sydney",
];

/**
 * The `sites` of every fill's config file: two devices with different peak powers, one with a
 * name and group but no kWp (listed as without kWp), one not described at all (audit-box-03).
 */
export const FILL_SITES: Readonly<Record<string, Site>> = {
  "hybrid-site-01": { kwp: 9.8, name: "Hybrid north", group: "north" },
  "offgrid-genset-02": { kwp: 3.25, group: "north" },
  "site A+1": { name: "Site A+1 roof", group: "south" },
};

/** The configured kWp of a device of the fill, if any. */
export const fillKwp = (deviceId: string): number | undefined =>
  Object.hasOwn(FILL_SITES, deviceId) ? FILL_SITES[deviceId]?.kwp : undefined;

export interface FilledInfluxd {
  readonly sim: Simulator;
  readonly db: TestInfluxDb;
  readonly pipeline: Pipeline;
  /** The end of the data (the second sync's time), epoch s. */
  readonly toS: number;
  close(): Promise<void>;
}

/** What {@link fillFromSimulator} fills. */
export interface FillOptions extends Pick<SimulatorOptions, "catalog"> {
  /**
   * A retention policy of the database (made with InfluxQL, shard groups of 52 weeks) that the
   * rollups go to (ROLLUP_BUCKET); none: beside the raw points.
   */
  readonly rollupPolicy?: string;
}

/**
 * Two syncs, ten minutes apart, of the simulator's fleet into a fresh database, with a catalog
 * refresh run (CATALOG_REFRESH PT5M, so the catalogs the first sync read are due) just before the
 * second sync: its `etl_run` point (kind `catalog`) feeds the pipeline-health catalog panels.
 * The config file describes the sites of {@link FILL_SITES}.
 * `catalog: "spec"`: the second installation, whose devices list only the spec's value names
 * plus a few seeded coded ids (FleetOptions.catalog).
 */
export async function fillFromSimulator(
  prefix: string,
  { rollupPolicy, ...options }: FillOptions = {},
): Promise<FilledInfluxd> {
  const clock = new ManualClock(NOW_MS);
  const sim = await startTestSimulator({ now: clock.now, resolutionS: 300, ...options });
  const db = await createTestInfluxDb(prefix);
  if (rollupPolicy !== undefined) {
    await influxql(
      db.rawUrl,
      db.bucket,
      `CREATE RETENTION POLICY "${rollupPolicy}" ON "${db.bucket}" DURATION INF REPLICATION 1 SHARD DURATION 52w`,
    );
  }
  const { pipeline } = await openTestPipeline(
    pipelineEnv(sim, db, tempStateDb(), {
      SYNC_START: "P3D",
      LOG_LEVEL: "warn",
      // the zones the tests choose as $tz: the energy panels read their daily rollups
      ROLLUP_TIME_ZONES: FILL_ZONES.join(","),
      CATALOG_REFRESH: "PT5M",
      ...(rollupPolicy === undefined ? {} : { ROLLUP_BUCKET: `${db.bucket}/${rollupPolicy}` }),
    }),
    () => new Date(clock.now()),
    {},
    sitesFile(),
  );
  for (let i = 0; i < 2; i += 1) {
    if (i > 0) {
      clock.advance(10 * 60_000);
      const catalog = await runCatalogRefresh(pipeline);
      if (catalog?.status !== "ok") throw new Error(`catalog refresh: ${catalog?.status}`);
    }
    const { status } = await runSync(pipeline);
    if (status !== "ok") throw new Error(`sync ${i + 1}: ${status}`);
  }
  return {
    sim,
    db,
    pipeline,
    toS: clock.now() / 1000,
    close: async () => {
      await pipeline.close();
      await sim.close();
    },
  };
}

/** A config file holding {@link FILL_SITES}, in a temp dir removed after the test file. */
function sitesFile(): string {
  const file = join(tempDir("energy-etl-sites-"), "config.json");
  writeFileSync(file, JSON.stringify({ sites: FILL_SITES }));
  return file;
}

/** A value of a device as the schema stores it: measurement, unit and type tags. */
export interface StoredValue {
  readonly measurement: string;
  readonly unit: string;
  readonly type: string;
}

/** The values the simulator lists for a device, decoded as the pipeline stores them. */
export function storedValues(sim: Simulator, deviceId: string): StoredValue[] {
  const out: StoredValue[] = [];
  for (const r of sim.fleet.resourceIds(deviceId) ?? []) {
    for (const id of sim.fleet.valueIds(deviceId, r) ?? []) {
      const d = idShape(id);
      if (d !== undefined) out.push({ measurement: d.measurement, unit: d.unit, type: d.type });
    }
  }
  return out;
}

/** An InfluxQL regex (RE2, with an optional leading `(?i)`) as a JavaScript RegExp. */
export function influxRegex(body: string): RegExp {
  const insensitive = body.startsWith("(?i)");
  return new RegExp(insensitive ? body.slice(4) : body, insensitive ? "i" : "");
}

/**
 * Whether a query can find something among `values`: `FROM "name"` needs that measurement,
 * `FROM /regex/` a measurement matching it, and `"unit" = '…'` / `"type" = '…'` conditions the
 * tags, and selecting the `text` field (where strings go) a value of type `text`. Queries of the
 * pipeline's own measurements (`etl_…`, `site`) always apply.
 */
export function queryApplies(query: string, values: readonly StoredValue[]): boolean {
  const named = queriedMeasurement(query);
  if (named?.startsWith("etl_") || named === "site") return true;
  const regex = /\bFROM\s+\/((?:\\.|[^\\/\n])*)\//i.exec(query)?.[1];
  const unit = /"unit"\s*=\s*'([^']*)'/.exec(query)?.[1];
  const type =
    /"type"\s*=\s*'([^']*)'/.exec(query)?.[1] ??
    (/\bSELECT\b[^;]*?\(\s*"text"\s*\)/i.test(query) ? "text" : undefined);
  const matches = (v: StoredValue): boolean =>
    (named === undefined || v.measurement === named) &&
    (regex === undefined || influxRegex(regex).test(v.measurement)) &&
    (unit === undefined || v.unit === unit) &&
    (type === undefined || v.type === type);
  return values.some(matches);
}

/**
 * Whether a specific-yield query can find something for `devices` by their sites
 * ({@link FILL_SITES}): one reading `kwh_per_kwp` or `"kwp" > 0` needs a device with a kWp, the
 * list of devices without one (`"kwp" = 0`) a device without. Other queries: true.
 */
export function sitesFit(query: string, devices: readonly string[]): boolean {
  if (/"kwp" = 0/.test(query)) return devices.some((d) => fillKwp(d) === undefined);
  if (/kwh_per_kwp|"kwp" > 0/.test(query)) return devices.some((d) => fillKwp(d) !== undefined);
  return true;
}
