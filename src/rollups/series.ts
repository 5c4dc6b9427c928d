/** The counter series of a device resource as rollups read them back, and where rollups are. */
import { databaseAndPolicy } from "../config/values.js";
import type { InfluxqlSeries } from "../influx/influx-query.js";
import { quoteIdentifier, quoteLiteral } from "../influx/influxql.js";
import { storedName } from "../transform/line-protocol.js";

/** A counter of a device resource, as InfluxDB stores its raw points. */
export interface CounterSeries {
  readonly measurement: string;
  readonly unit: string;
  readonly type: string;
}

/** The device resource whose rollups are recomputed, and its counters. */
export interface RollupTarget {
  readonly deviceId: string;
  readonly resourceId: string;
  readonly counters: readonly CounterSeries[];
}

/** A counter series of a device resource: its tags besides device and resource. */
export interface SeriesTags extends CounterSeries {
  readonly valuesId: string;
}

/** A series' key: measurement, values_id, unit, type. */
export type SeriesKey = string;

export const keyOf = (t: SeriesTags): SeriesKey =>
  JSON.stringify([t.measurement, t.valuesId, t.unit, t.type]);

export interface Reading {
  readonly s: number;
  readonly value: number;
}

/** The retention policy InfluxQL reads rollup points from (none: the raw points' default). */
export interface RollupHome {
  readonly retentionPolicy?: string;
}

/** Where the rollups are: ROLLUP_BUCKET's retention policy (`database/policy`), else the raw points'. */
export function rollupHomeOf(config: {
  readonly rollups: { readonly bucket: string };
}): RollupHome {
  const { bucket } = config.rollups;
  const rp = bucket === "" ? undefined : databaseAndPolicy(bucket).retentionPolicy;
  return rp ? { retentionPolicy: rp } : {};
}

/** A rollup measurement as InfluxQL names it in `home`: `"rp"."rollup_day"` or `"rollup_day"`. */
export function rollupSource(home: RollupHome, measurement: string): string {
  const rp = home.retentionPolicy;
  return rp
    ? `${quoteIdentifier(rp)}.${quoteIdentifier(measurement)}`
    : quoteIdentifier(measurement);
}

/** The tags a rollup point's series is grouped by besides device and resource. */
export const ROLLUP_SERIES_TAGS = `"measurement", "values_id", "unit", "type"`;

/** The InfluxQL condition that selects a device resource's points, by its ids as stored. */
export function targetWhere(target: Pick<RollupTarget, "deviceId" | "resourceId">): string {
  return (
    `"device_id" = ${quoteLiteral(storedName(target.deviceId))} AND ` +
    `"resource_id" = ${quoteLiteral(storedName(target.resourceId))}`
  );
}

/** A result series' tags, with the counter's `measurement`. */
const tagsOf = (s: InfluxqlSeries, measurement: string): SeriesTags => ({
  measurement,
  valuesId: s.tags?.values_id ?? "",
  unit: s.tags?.unit ?? "",
  type: s.tags?.type ?? "",
});

/** The counter series a rollup result series (grouped by ROLLUP_SERIES_TAGS) belongs to. */
export const rollupSeriesOf = (s: InfluxqlSeries): SeriesTags =>
  tagsOf(s, s.tags?.measurement ?? "");

/**
 * The InfluxQL pieces that select `target`'s raw counter points: grouped by `tags`, a result
 * series per counter series; `seriesOf` a result series' counter (undefined: another type or unit).
 */
export function selectionOf(target: RollupTarget) {
  const counters = new Set(
    target.counters.map((c) => JSON.stringify([c.measurement, c.unit, c.type])),
  );
  return {
    from: [...new Set(target.counters.map((c) => quoteIdentifier(c.measurement)))].join(","),
    where: targetWhere(target),
    tags: `"values_id", "unit", "type"`,
    seriesOf: (s: InfluxqlSeries): SeriesTags | undefined => {
      const t = tagsOf(s, s.name);
      return counters.has(JSON.stringify([t.measurement, t.unit, t.type])) ? t : undefined;
    },
  };
}
