/**
 * The counter series of a device resource as rollups read them back from InfluxDB: which
 * measurements, which points (device, resource) and how a result's series maps to a counter.
 */
import { type InfluxqlSeries, quoteIdentifier, quoteLiteral } from "../influx/influx-query.js";

/** A counter of a device resource, as InfluxDB stores its raw points. */
export interface CounterSeries {
  /** The measurement (as stored). */
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

export const keyOf = (t: SeriesTags): SeriesKey =>
  JSON.stringify([t.measurement, t.valuesId, t.unit, t.type]);

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

/** The InfluxQL condition that selects a device resource's points (raw or rollup). */
export function targetWhere(target: Pick<RollupTarget, "deviceId" | "resourceId">): string {
  return `"device_id" = ${quoteLiteral(target.deviceId)} AND "resource_id" = ${quoteLiteral(target.resourceId)}`;
}

/** The counter series a rollup result series (grouped by its series tags) belongs to. */
export function rollupSeriesOf(s: InfluxqlSeries): SeriesTags {
  return {
    measurement: s.tags?.measurement ?? "",
    valuesId: s.tags?.values_id ?? "",
    unit: s.tags?.unit ?? "",
    type: s.tags?.type ?? "",
  };
}

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
      const t: SeriesTags = {
        measurement: s.name,
        valuesId: s.tags?.values_id ?? "",
        unit: s.tags?.unit ?? "",
        type: s.tags?.type ?? "",
      };
      return counters.has(JSON.stringify([t.measurement, t.unit, t.type])) ? t : undefined;
    },
  };
}
