/**
 * The counter series of a device resource as rollups read them back from InfluxDB (as the writer
 * stored them), how a result's series maps to a counter, and where the rollup points are.
 */
import { type InfluxqlSeries, quoteIdentifier, quoteLiteral } from "../influx/influx-query.js";
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
export interface SeriesTags {
  readonly measurement: string;
  readonly valuesId: string;
  readonly unit: string;
  readonly type: string;
}

/** A series' key: measurement, values_id, unit, type. */
export type SeriesKey = string;

/** The key of a series. */
export const keyOf = (t: SeriesTags): SeriesKey =>
  JSON.stringify([t.measurement, t.valuesId, t.unit, t.type]);

/** A counter reading. */
export interface Reading {
  readonly s: number;
  readonly value: number;
}

/**
 * Where the rollup points are: the retention policy InfluxQL reads them from (ROLLUP_BUCKET's, on
 * the raw points' database); none: the database's default one, beside the raw points.
 */
export interface RollupHome {
  readonly retentionPolicy?: string;
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

/** The InfluxQL pieces that select a target's raw counter points. */
export interface Selection {
  /** `FROM` list: the counters' measurements. */
  readonly from: string;
  /** The device resource's points. */
  readonly where: string;
  /** One result series per counter series (the tags besides device and resource). */
  readonly tags: string;
  /** The counter series a result series is; undefined for a series of another type or unit. */
  seriesOf(s: InfluxqlSeries): SeriesTags | undefined;
}

/**
 * The InfluxQL condition that selects a device resource's points (raw or rollup), by its ids as
 * stored (storedName): an id with a backslash, a line break or a tab is found too.
 */
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

/** How to select `target`'s counter points. */
export function selectionOf(target: RollupTarget): Selection {
  const counters = new Set(
    target.counters.map((c) => JSON.stringify([c.measurement, c.unit, c.type])),
  );
  return {
    from: [...new Set(target.counters.map((c) => quoteIdentifier(c.measurement)))].join(","),
    where: targetWhere(target),
    tags: `"values_id", "unit", "type"`,
    seriesOf: (s) => {
      const t = tagsOf(s, s.name);
      return counters.has(JSON.stringify([t.measurement, t.unit, t.type])) ? t : undefined;
    },
  };
}
