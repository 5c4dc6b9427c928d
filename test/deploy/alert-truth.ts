/**
 * The oracle of test/deploy/alerting.test.ts for the plant's alert rules on the simulator's fill:
 * which alert instances each rule should have and which should fire, from the simulator's own
 * samples (what the pipeline fetched), read by the rules' definitions in docs/dashboards.md, not
 * by the queries.
 */
import { codedShape } from "../support/schema-oracle.js";
import { labelKey } from "./alert-rules.js";
import { DAY_S, type FilledInfluxd, SYNCED_FROM_S } from "./filled-influxd.js";

export interface RuleTruth {
  readonly instances: readonly string[];
  readonly firing: readonly string[];
}

/** A value of a device resource as the pipeline tags it. */
interface Listed {
  readonly deviceId: string;
  readonly resourceId: string;
  readonly valueId: string;
  readonly measurement: string;
  readonly unit: string;
  readonly type: string;
  readonly valuesId: string;
}

interface Sample {
  readonly t: number;
  readonly v: number;
}

function listed(filled: FilledInfluxd): Listed[] {
  const { fleet } = filled.sim;
  return fleet.deviceIds().flatMap((deviceId) =>
    (fleet.resourceIds(deviceId) ?? []).flatMap((resourceId) =>
      (fleet.valueIds(deviceId, resourceId) ?? []).flatMap((valueId) => {
        const d = codedShape(valueId);
        if (d === undefined) return [];
        const { measurement, unit, type, valuesId } = d;
        return [{ deviceId, resourceId, valueId, measurement, unit, type, valuesId }];
      }),
    ),
  );
}

/** The numeric samples of a value, fromS <= t <= toS, within what the pipeline synced. */
function samples(filled: FilledInfluxd, v: Listed, fromS: number, toS: number): Sample[] {
  const from = Math.max(fromS, SYNCED_FROM_S);
  const to = Math.min(toS, filled.toS);
  if (to < from) return [];
  return filled.sim.fleet.records(v.deviceId, v.resourceId, [v.valueId], from, to).flatMap((r) => {
    const value = r[v.valueId];
    const t = Date.parse(`${r.timestamp}Z`) / 1000;
    return typeof value === "number" ? [{ t, v: value }] : [];
  });
}

const tagsOf = (v: Listed): Record<string, string> => ({
  device_id: v.deviceId,
  resource_id: v.resourceId,
  values_id: v.valuesId,
});

/** A value's latest reading in the last `rangeS` below `limit` (fuel, grid voltage). */
function latestBelow(
  filled: FilledInfluxd,
  nowS: number,
  select: (v: Listed) => boolean,
  rangeS: number,
  limit: number,
): RuleTruth {
  const instances: string[] = [];
  const firing: string[] = [];
  for (const v of listed(filled).filter(select)) {
    const last = samples(filled, v, nowS - rangeS, nowS).at(-1);
    if (last === undefined) continue;
    instances.push(labelKey(tagsOf(v)));
    if (last.v < limit) firing.push(labelKey(tagsOf(v)));
  }
  return { instances, firing };
}

/**
 * Per device and alarm (its name, the tag `alarm`): those with an alarm (alarm_index set) in any
 * sample of the last 30 minutes. A sample with an index but no name would be grouped under the
 * empty tag value, as InfluxDB answers for points without the tag.
 */
function alarms(filled: FilledInfluxd, nowS: number): RuleTruth {
  const { fleet } = filled.sim;
  const keys = new Set<string>();
  const fromS = Math.max(nowS - 1800, SYNCED_FROM_S);
  const toS = Math.min(nowS, filled.toS);
  for (const d of fleet.deviceIds()) {
    for (const r of fleet.resourceIds(d) ?? []) {
      for (const row of fleet.records(d, r, ["alarm_index", "alarm_name"], fromS, toS)) {
        if (typeof row.alarm_index !== "number" || row.alarm_index <= 0) continue;
        const name = row.alarm_name;
        keys.add(labelKey({ device_id: d, alarm: name === null ? "" : String(name) }));
      }
    }
  }
  return { instances: [...keys], firing: [...keys] };
}

/** The highest solar power from 11:30 to 12:30 UTC of the latest such hour begun by `atS`. */
function noonKw(filled: FilledInfluxd, v: Listed, atS: number): number {
  const start = Math.floor((atS - 41_400) / DAY_S) * DAY_S + 41_400;
  const hour = samples(filled, v, start, Math.min(start + 3599, atS));
  return hour.length === 0 ? -1 : Math.max(...hour.map((s) => s.v));
}

/** No power around noon (below 0.05 kW) after a noon hour with power the day before. */
function solarAtNoon(filled: FilledInfluxd, nowS: number): RuleTruth {
  const instances: string[] = [];
  const firing: string[] = [];
  for (const v of listed(filled).filter((x) => x.measurement === "total_solar_power")) {
    const key = labelKey({ device_id: v.deviceId, resource_id: v.resourceId });
    const today = noonKw(filled, v, nowS);
    const before = noonKw(filled, v, nowS - DAY_S);
    instances.push(key);
    if (today >= 0 && today < 0.05 && before >= 0.05) firing.push(key);
  }
  return { instances, firing };
}

/**
 * What each reading of a cumulative counter adds (docs/schema.md, the rule of the rollups): the
 * rise above the highest reading since the last reset; a fall below 90 % of it is a reset that
 * adds the reading; the first adds nothing.
 */
function additions(readings: readonly Sample[]): Sample[] {
  let high = Number.NaN;
  return readings.map(({ t, v }) => {
    let add = 0;
    if (Number.isNaN(high)) high = v;
    else if (v >= high) [add, high] = [v - high, v];
    else if (v < 0.9 * high) [add, high] = [v, v];
    return { t, v: add };
  });
}

/**
 * Counters (type cumulative) that added nothing in the UTC hours of the last 24 hours and added
 * something on each UTC day whose midnight is in the three days before.
 */
function stalledCounters(filled: FilledInfluxd, nowS: number): RuleTruth {
  const instances: string[] = [];
  const firing: string[] = [];
  const firstHour = Math.ceil((nowS - DAY_S) / 3600) * 3600;
  const firstDay = Math.ceil((nowS - 4 * DAY_S) / DAY_S) * DAY_S;
  for (const v of listed(filled).filter((x) => x.type === "cumulative")) {
    const added = additions(samples(filled, v, SYNCED_FROM_S, nowS));
    const sum = (from: number, to: number): number =>
      added.filter((a) => a.t >= from && a.t < to).reduce((s, a) => s + a.v, 0);
    const days: number[] = [];
    for (let d = firstDay; d <= nowS - DAY_S; d += DAY_S) {
      if (added.some((a) => a.t >= d && a.t < d + DAY_S)) days.push(sum(d, d + DAY_S));
    }
    if (days.length === 0 || !added.some((a) => a.t >= firstHour)) continue;
    const key = labelKey({ ...tagsOf(v), measurement: v.measurement });
    instances.push(key);
    if (sum(firstHour, nowS + 1) <= 0 && Math.min(...days) > 0) firing.push(key);
  }
  return { instances, firing };
}

/** Per plant rule uid: its alert instances and those that fire, at `nowS`. */
export function simulatorTruth(filled: FilledInfluxd, nowS: number): Record<string, RuleTruth> {
  return {
    "energy-device-alarm": alarms(filled, nowS),
    "energy-solar-none-at-noon": solarAtNoon(filled, nowS),
    "energy-genset-fuel-low": latestBelow(
      filled,
      nowS,
      (v) => /fuel/i.test(v.measurement) && v.unit === "liter" && v.type === "continuous",
      3600,
      20,
    ),
    "energy-grid-voltage-absent": latestBelow(
      filled,
      nowS,
      (v) => /grid/i.test(v.measurement) && v.unit === "V" && v.type === "continuous",
      3600,
      50,
    ),
    "energy-counter-stalled": stalledCounters(filled, nowS),
  };
}
