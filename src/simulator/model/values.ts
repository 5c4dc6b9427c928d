/** Value definitions: how a value id is computed from a simulated day, and value id parsing. */
import type { RecordMember } from "../../records/data-record.js";
import { roundTo } from "./num.js";
import type { DayFrame } from "./site-physics.js";

export type SampleFn = (frame: DayFrame, i: number, t: number) => RecordMember;

/** What a counter adds at sample i (e.g. power * resolutionS / 3600). */
export type IncrementFn = (frame: DayFrame, i: number) => number;

/** Turns a counter's running sum into the reported member. */
export type CounterOutput = (sum: number, frame: DayFrame, i: number, t: number) => RecordMember;

export interface SampledValueDef {
  readonly kind: "sample";
  readonly id: string;
  readonly readout: number;
  readonly sample: SampleFn;
}

/**
 * A value integrated over samples: base + sum of increments since commissioning (cumulative),
 * or since 00:00 UTC of the sample's day (daily reset, base ignored).
 */
export interface CounterValueDef {
  readonly kind: "counter";
  readonly id: string;
  readonly readout: number;
  readonly daily: boolean;
  readonly base: number;
  readonly increment: IncrementFn;
  readonly output: CounterOutput;
}

export type ValueDef = SampledValueDef | CounterValueDef;

const CODED_RE = /^e_(\d{2})_(\d{2})_(\d{2})_(\d{3})_(.+)$/;

/** The parts of a coded value id `e_<prefix>_<unit>_<type>_<values_id>_<name>`; else undefined. */
export function parseValueId(
  id: string,
): { prefix: number; unit: number; type: number; readout: number; name: string } | undefined {
  const m = CODED_RE.exec(id);
  if (!m) return undefined;
  const [, prefix = "0", unit = "0", type = "0", readout = "0", name = ""] = m;
  return {
    prefix: Number(prefix),
    unit: Number(unit),
    type: Number(type),
    readout: Number(readout),
    name,
  };
}

export function readoutOf(id: string): number {
  return parseValueId(id)?.readout ?? 0;
}

export function sampled(id: string, sample: SampleFn): SampledValueDef {
  return { kind: "sample", id, readout: readoutOf(id), sample };
}

/** A counter value; by default cumulative from 0 and reported rounded to 3 decimals. */
export function counter(
  id: string,
  increment: IncrementFn,
  options: { daily?: boolean; base?: number; output?: CounterOutput } = {},
): CounterValueDef {
  return {
    kind: "counter",
    id,
    readout: readoutOf(id),
    daily: options.daily ?? false,
    base: options.base ?? 0,
    increment,
    output: options.output ?? ((sum) => roundTo(sum, 3)),
  };
}
