/**
 * Counter faults of real meters (a test knob): counter readings (types 04, 05) that fall for one
 * reading, and daily counters whose day starts above 0. Every choice is a pure function of the
 * seed and (device, value id, timestamp, values_id), so every answer holding a reading agrees.
 */
import type { DataRecord } from "../../records/data-record.js";
import { max, min, roundTo } from "./num.js";
import { hash2, hashString, subKey, unit2 } from "./rng.js";
import { parseValueId } from "./values.js";

/** Counter faults (test knob). Rates are shares of counter readings in [0, 1], summing to at most 1. */
export interface CounterFaultOptions {
  /** Devices whose counters fall (default: every device). */
  readonly deviceIds?: readonly string[];
  /** Share of counter readings reported 0.1 % to 8 % below the truth, a quarter of them only 0.001 below: a dip of the rollups' rule; a chosen reading below 0.1 stays as it is (default 0: none). */
  readonly shallowDipRate?: number;
  /** Share of counter readings reported 15 % to 60 % below the truth: a reset of the rollups' rule; a chosen reading below 0.1 stays as it is (default 0: none). */
  readonly deepDipRate?: number;
  /** Share of counter readings reported as 0 (default 0: none). */
  readonly zeroRate?: number;
  /** Type 05 counters only: every reading of a UTC day is reported higher by an offset drawn per (device, value, day) from [dailyOffsetMax / 2, dailyOffsetMax] (in the counter's unit, 3 decimals, at least 0.001), so every day starts from a reading above 0 (default 0: none). */
  readonly dailyOffsetMax?: number;
}

/** What happens to one reading: `depth` is the share taken off (shallow depth 0: 0.001 off). */
export type CounterFall =
  | { readonly kind: "shallow-dip"; readonly depth: number }
  | { readonly kind: "deep-dip"; readonly depth: number }
  | { readonly kind: "zero" };

/** Readings below this are not dipped (3 decimals cannot keep a shallow dip within 10 %). */
export const MIN_DIP_READING = 0.1;
/** Share of shallow dips that take off only 0.001 (a jitter). */
export const SHALLOW_JITTER_SHARE = 0.25;
/** Depth of the other shallow dips: from 0.1 % to 8 %. */
export const SHALLOW_DEPTH = { from: 0.001, to: 0.08 } as const;
/** Depth of a deep dip: from 15 % to 60 %. */
export const DEEP_DEPTH = { from: 0.15, to: 0.6 } as const;
const JITTER = 0.001;

/** Throws a RangeError for a rate outside [0, 1], rates over 1 in all, or a bad dailyOffsetMax. */
export function checkCounterFaults(faults: CounterFaultOptions | undefined): void {
  if (faults === undefined) return;
  let sum = 0;
  for (const name of ["shallowDipRate", "deepDipRate", "zeroRate"] as const) {
    const rate = faults[name] ?? 0;
    if (!(rate >= 0 && rate <= 1)) throw new RangeError(`${name} must be from 0 to 1, got ${rate}`);
    sum += rate;
  }
  if (sum > 1) throw new RangeError(`the counter fault rates add up to ${sum}, more than 1`);
  const offset = faults.dailyOffsetMax ?? 0;
  if (!(offset >= 0 && Number.isFinite(offset))) {
    throw new RangeError(`dailyOffsetMax must be a finite number >= 0, got ${offset}`);
  }
}

export function counterFaultsActive(faults: CounterFaultOptions | undefined): boolean {
  if (faults === undefined || faults.deviceIds?.length === 0) return false;
  const { shallowDipRate, deepDipRate, zeroRate, dailyOffsetMax } = faults;
  return [shallowDipRate, deepDipRate, zeroRate, dailyOffsetMax].some((x) => (x ?? 0) > 0);
}

/** 4 or 5 for a coded counter id (`e_PP_UU_04_…`, `e_PP_UU_05_…`), else undefined. */
export function counterTypeOf(valueId: string): 4 | 5 | undefined {
  const type = parseValueId(valueId)?.type;
  return type === 4 || type === 5 ? type : undefined;
}

/** A reading's fall from two uniform draws: `kindDraw` picks its kind, `depthDraw` its depth. */
export function fallFor(
  faults: CounterFaultOptions,
  kindDraw: number,
  depthDraw: number,
): CounterFall | undefined {
  const shallow = faults.shallowDipRate ?? 0;
  const deep = shallow + (faults.deepDipRate ?? 0);
  if (kindDraw < shallow) {
    const over = (depthDraw - SHALLOW_JITTER_SHARE) / (1 - SHALLOW_JITTER_SHARE);
    const span = SHALLOW_DEPTH.to - SHALLOW_DEPTH.from;
    return { kind: "shallow-dip", depth: over < 0 ? 0 : SHALLOW_DEPTH.from + span * over };
  }
  const deepSpan = DEEP_DEPTH.to - DEEP_DEPTH.from;
  if (kindDraw < deep) return { kind: "deep-dip", depth: DEEP_DEPTH.from + deepSpan * depthDraw };
  if (kindDraw < deep + (faults.zeroRate ?? 0)) return { kind: "zero" };
  return undefined;
}

/** Decimals a faulted reading keeps: those of the reading (a MWh counter has 6), at least 3, at most 9. */
export function decimalsOf(value: number): number {
  const text = String(value);
  const dot = text.indexOf(".");
  const own = dot < 0 || text.includes("e") ? 0 : text.length - dot - 1;
  return min(9, max(3, own));
}

/** A reading after its fall (see fallFor); one below MIN_DIP_READING does not dip. */
export function fallenReading(value: number, fall: CounterFall): number {
  if (fall.kind === "zero") return 0;
  if (value < MIN_DIP_READING) return value;
  const places = decimalsOf(value);
  const dipped = roundTo(value * (1 - fall.depth), places);
  return fall.kind === "deep-dip" ? dipped : min(dipped, roundTo(value - JITTER, places));
}

/** A day's offset from a uniform draw in [0, 1): from largest / 2 to largest, 3 decimals, at least 0.001; 0 when largest is 0. */
export function dailyOffsetFor(largest: number, draw: number): number {
  if (!(largest > 0)) return 0;
  return max(JITTER, roundTo(largest * (0.5 + 0.5 * draw), 3));
}

/** Applies the counter faults in place: the day's offset (type 05), then the fall. */
export function applyCounterFaults(
  records: DataRecord[],
  scope: { readonly seed: number; readonly faults: CounterFaultOptions; readonly deviceId: string },
  valueIds: readonly string[],
): void {
  const { seed, faults, deviceId } = scope;
  if (faults.deviceIds !== undefined && !faults.deviceIds.includes(deviceId)) return;
  const largest = faults.dailyOffsetMax ?? 0;
  const deviceKey = subKey(subKey(seed, "counter-faults"), deviceId);
  const counters = [...new Set(valueIds)].filter((id) => counterTypeOf(id) !== undefined);
  for (const record of records) {
    const { timestamp, values_id: valuesId } = record;
    const readout = hashString(valuesId === undefined ? "" : JSON.stringify(valuesId));
    for (const valueId of counters) {
      const value = record[valueId];
      if (typeof value !== "number") continue;
      const key = subKey(deviceKey, valueId);
      const offset =
        largest > 0 && counterTypeOf(valueId) === 5
          ? dailyOffsetFor(largest, unit2(subKey(key, `day ${timestamp.slice(0, 10)}`), 0))
          : 0;
      const shifted = offset > 0 ? roundTo(value + offset, decimalsOf(value)) : value;
      const fallKey = hash2(subKey(key, timestamp), readout);
      const fall = fallFor(faults, unit2(fallKey, 1), unit2(fallKey, 2));
      record[valueId] = fall === undefined ? shifted : fallenReading(shifted, fall);
    }
  }
}
