/** One device of a fleet: its resources and value ids (including added ones) and its records. */
import { VALUES_ID } from "../../api/limits.js";
import type { DataRecord, RecordMember } from "../../records/data-record.js";
import { ALL_DATA, META_VALUE_IDS, type ResourceDef } from "./catalog.js";
import { genericValue } from "./generic.js";
import type { DeviceHistory } from "./history.js";
import { ceil, floor, max, min } from "./num.js";
import {
  COMMISSIONED_AT_S,
  ceilToMultiple,
  DAY_S,
  datePrefixOf,
  dayIndexOf,
  floorToMultiple,
  formatWithPrefix,
} from "./time.js";
import type { CounterValueDef, ValueDef } from "./values.js";

/** The requested values of a readout; `counter`: index into the window's counter sums, else -1. */
interface Readout {
  readonly readout: number;
  readonly columns: readonly { readonly def: ValueDef; readonly counter: number }[];
}

/** An object with fast (non-dictionary) properties whatever its size: rows spread from it stay fast. */
function fastObject(members: readonly [string, RecordMember][]): Record<string, RecordMember> {
  return JSON.parse(JSON.stringify(Object.fromEntries(members)));
}

/** True when something listed from `fromS` (undefined: always) is listed at `atS` (undefined: any time). */
function listedAt(fromS: number | undefined, atS: number | undefined): boolean {
  return fromS === undefined || atS === undefined || fromS <= atS;
}

/** A device of the fleet; every value is a pure function of seed, id, value id, time and resolution. */
export class SimulatedDevice {
  private readonly defs = new Map<string, ValueDef>();
  private readonly resources = new Map<string, string[]>();
  /** Listed only from a time on (epoch s). */
  private readonly valueFromS = new Map<string, number>();
  private readonly resourceFromS = new Map<string, number>();

  /** `resources`: what it lists (all_data first); ids not in the catalog get generic values. */
  constructor(
    readonly id: string,
    private readonly history: DeviceHistory,
    resources: readonly ResourceDef[] = history.catalog.resources,
  ) {
    for (const def of history.catalog.defs) this.defs.set(def.id, def);
    for (const r of resources) {
      this.resources.set(r.id, [...r.valueIds]);
      for (const valueId of r.valueIds) this.define(valueId);
    }
  }

  /** Resource ids listed at `atS` (undefined: every one), `all_data` first. */
  resourceIds(atS?: number): string[] {
    return [...this.resources.keys()].filter((r) => listedAt(this.resourceFromS.get(r), atS));
  }

  /** Value ids a resource lists at `atS` (undefined: every one); undefined for an unknown resource. */
  valueIds(resourceId: string, atS?: number): string[] | undefined {
    const ids = this.resources.get(resourceId);
    if (ids === undefined || !listedAt(this.resourceFromS.get(resourceId), atS)) return undefined;
    if (atS === undefined || this.valueFromS.size === 0) return [...ids];
    return ids.filter((id) => listedAt(this.valueFromS.get(id), atS));
  }

  /** Lists `valueId` in `resourceId` (made if missing) and all_data, from `fromS` (or at once). */
  addValue(resourceId: string, valueId: string, fromS?: number): void {
    if (valueId === VALUES_ID) return;
    this.define(valueId);
    let listed = this.resources.get(resourceId);
    if (listed === undefined) {
      listed = [...META_VALUE_IDS];
      this.resources.set(resourceId, listed);
      if (fromS !== undefined) this.resourceFromS.set(resourceId, fromS);
    }
    const all = this.resources.get(ALL_DATA);
    const listedBefore = listed.includes(valueId) || (all?.includes(valueId) ?? false);
    if (fromS === undefined) {
      this.resourceFromS.delete(resourceId);
      this.valueFromS.delete(valueId);
    } else if (!listedBefore) {
      this.valueFromS.set(valueId, fromS);
    }
    if (!listed.includes(valueId)) listed.push(valueId);
    if (all !== undefined && !all.includes(valueId)) all.push(valueId);
  }

  /** Records of spec 2.4 for samples t with fromS <= t <= toS; see SimulatedFleet.records. */
  records(
    resourceId: string,
    valueIds: readonly string[],
    fromS: number,
    toS: number,
  ): DataRecord[] {
    const readouts = this.plan(resourceId, valueIds);
    const res = this.history.resolutionS;
    const first = ceilToMultiple(max(fromS, COMMISSIONED_AT_S), res);
    const last = floorToMultiple(toS, res);
    const out: DataRecord[] = [];
    if (first > last || readouts.length === 0) return out;

    const members: [string, RecordMember][] = [
      ["timestamp", ""],
      [VALUES_ID, 0],
    ];
    const counters: CounterValueDef[] = [];
    for (const r of readouts) {
      for (const c of r.columns) {
        members.push([c.def.id, null]);
        if (c.def.kind === "counter") counters.push(c.def);
      }
    }
    const template = fastObject(members);
    const sums = new Float64Array(counters.length);

    for (let day = dayIndexOf(first); day <= dayIndexOf(last); day++) {
      const frame = this.history.frame(day);
      const i0 = max(0, ceil((first - frame.firstS) / res));
      const i1 = min(frame.count - 1, floor((last - frame.firstS) / res));
      if (i0 > i1) continue;
      for (let c = 0; c < counters.length; c++) {
        const def = counters[c];
        if (def === undefined) continue;
        let sum = def.daily ? 0 : def.base + this.history.ledger.sumBefore(def, day);
        for (let k = 0; k < i0; k++) sum += def.increment(frame, k);
        sums[c] = sum;
      }
      const prefix = datePrefixOf(frame.dayStartS);
      for (let i = i0; i <= i1; i++) {
        const t = frame.firstS + i * res;
        for (let c = 0; c < counters.length; c++) {
          const def = counters[c];
          if (def !== undefined) sums[c] = (sums[c] ?? 0) + def.increment(frame, i);
        }
        const timestamp = formatWithPrefix(prefix, t);
        for (const r of readouts) {
          const row: DataRecord = { ...template, timestamp, values_id: r.readout };
          for (const c of r.columns) {
            const def = c.def;
            row[def.id] =
              def.kind === "sample"
                ? def.sample(frame, i, t)
                : def.output(sums[c.counter] ?? 0, frame, i, t);
          }
          out.push(row);
        }
      }
    }
    return out;
  }

  /** Sum of a counter's increments over the UTC day starting at `dayStartS` (00:00 UTC). */
  dayTotal(valueId: string, dayStartS: number): number {
    const def = this.defs.get(valueId);
    if (def === undefined || def.kind !== "counter") {
      throw new Error(`${this.id}: ${valueId} is not a counter value`);
    }
    if (dayStartS % DAY_S !== 0) throw new RangeError(`dayStartS ${dayStartS} is not 00:00 UTC`);
    return this.history.ledger.dayTotal(def, dayIndexOf(dayStartS));
  }

  /** Gives `valueId` a generic generator unless it has one; its counters are tracked by the history. */
  private define(valueId: string): void {
    if (valueId === VALUES_ID || this.defs.has(valueId)) return;
    const def = genericValue(this.history.deviceKey, valueId);
    this.defs.set(valueId, def);
    if (def.kind === "counter") this.history.track(def);
  }

  private plan(resourceId: string, valueIds: readonly string[]): Readout[] {
    const listed = this.resources.get(resourceId);
    if (listed === undefined) throw new Error(`${this.id}: unknown resource ${resourceId}`);
    const byReadout = new Map<number, ValueDef[]>();
    for (const id of new Set(valueIds)) {
      if (id === VALUES_ID) continue;
      const def = this.defs.get(id);
      if (def === undefined || !listed.includes(id)) {
        throw new Error(`${this.id}/${resourceId}: unknown value ${id}`);
      }
      const group = byReadout.get(def.readout);
      if (group === undefined) byReadout.set(def.readout, [def]);
      else group.push(def);
    }
    let counter = 0;
    return [...byReadout.entries()]
      .sort(([a], [b]) => a - b)
      .map(([readout, defs]) => ({
        readout,
        columns: defs.map((def) => ({ def, counter: def.kind === "counter" ? counter++ : -1 })),
      }));
  }
}
