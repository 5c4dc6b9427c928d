/** The simulated fleet, deterministic from a seed (no I/O, no clock); devices built on first use. */
import type { DataRecord } from "../../records/data-record.js";
import { ALL_DATA } from "./catalog.js";
import {
  applyCounterFaults,
  type CounterFaultOptions,
  checkCounterFaults,
  counterFaultsActive,
} from "./counter-faults.js";
import { SimulatedDevice } from "./device.js";
import {
  type GeneratedDevice,
  generatedDevice,
  generatedId,
  generatedIndex,
  generatedResources,
  idWidth,
} from "./device-mix.js";
import { historyOf } from "./history.js";
import { LruCache } from "./lru.js";
import type { DeviceKind } from "./profiles.js";
import { type CatalogOption, specResources } from "./spec-catalog.js";
import { COMMISSIONED_AT_S, DAY_S } from "./time.js";
import { DEFAULT_NEW_VALUE_SHARE, type ScheduledValue, seededSchedule } from "./value-schedule.js";

export { COMMON_VALUE_IDS } from "../../api/common-values.js";
export type { CounterFaultOptions } from "./counter-faults.js";
export { DAYS_REMAINING_ID } from "./readouts/audit-box.js";
export { type CatalogOption, SPEC_EXTRA_VALUES, specExtraIds } from "./spec-catalog.js";
export { COMMISSIONED_AT_S } from "./time.js";
export { DEFAULT_NEW_VALUE_SHARE, NEW_VALUE_SPREAD_S } from "./value-schedule.js";

export interface FleetOptions {
  seed: number;
  /** Sample spacing in whole seconds (default 60). */
  resolutionS?: number;
  /** Number of devices (default 4): the default ones, then generated `site-00005` …. */
  devices?: number;
  /** Share (0..1) of generated devices that get a new value id later (default 0.02; 0: none). */
  newValueShare?: number;
  /** Reference time of those new values (epoch s, default COMMISSIONED_AT_S); see value-schedule.ts. */
  newValuesFromS?: number;
  /** "spec": devices list only spec 2.3's value ids and a few seeded coded ones. */
  catalog?: CatalogOption;
  /** Counters replaced by a new meter: what rollups must see as a reset, not as a fall. */
  counterResets?: readonly CounterReset[];
  /** Counter readings that fall as real meters' do, applied after `counterResets`. */
  counterFaults?: CounterFaultOptions;
}

/** A cumulative counter of a device that starts again from zero at `atS` (epoch s). */
export interface CounterReset {
  readonly deviceId: string;
  readonly valueId: string;
  readonly atS: number;
}

export const DEFAULT_DEVICES: readonly { readonly id: string; readonly kind: DeviceKind }[] = [
  { id: "hybrid-site-01", kind: "hybrid" },
  { id: "offgrid-genset-02", kind: "offgrid" },
  { id: "audit-box-03", kind: "auditbox" },
  { id: "site A+1", kind: "gridtied" },
];

/** Devices kept built (LRU): at 0.8 MB each, near 100 MB however many a client walks. */
export const BUILT_DEVICE_LIMIT = 128;

/** Day-frame samples a generated device keeps: the 8 UTC days of a 7-day window at 60 s. */
const GENERATED_FRAME_SAMPLES = 8 * 1440;

/** A value listing made after the fleet was created, replayed when its device is rebuilt. */
interface ValueChange {
  readonly resourceId: string;
  readonly valueId: string;
  readonly atS: number | undefined;
}

export class SimulatedFleet {
  readonly resolutionS: number;
  private readonly seed: number;
  private readonly deviceCount: number;
  private readonly width: number;
  private readonly newValueShare: number;
  private readonly newValuesFromS: number;
  private readonly catalog: CatalogOption;
  private readonly defaults = new Map<string, DeviceKind>();
  private readonly added = new Map<string, DeviceKind>();
  private readonly built = new LruCache<string, SimulatedDevice>(BUILT_DEVICE_LIMIT);
  private readonly changes = new Map<string, ValueChange[]>();
  private readonly explicit: ScheduledValue[] = [];
  private ids: string[] | undefined;
  private seeded: ReadonlyMap<string, ScheduledValue> | undefined;

  private readonly resets: readonly CounterReset[];
  private readonly resetBases = new Map<CounterReset, number>();
  private readonly counterFaults: CounterFaultOptions | undefined;

  constructor(options: FleetOptions) {
    const res = options.resolutionS ?? 60;
    const devices = options.devices ?? DEFAULT_DEVICES.length;
    const share = options.newValueShare ?? DEFAULT_NEW_VALUE_SHARE;
    check(Number.isInteger(res) && res > 0, `resolutionS must be a positive integer, got ${res}`);
    check(
      Number.isInteger(devices) && devices >= 1,
      `devices must be a positive integer, got ${devices}`,
    );
    check(share >= 0 && share <= 1, `newValueShare must be from 0 to 1, got ${share}`);
    this.resolutionS = res;
    this.seed = options.seed;
    this.deviceCount = devices;
    this.width = idWidth(devices);
    this.newValueShare = share;
    this.newValuesFromS = options.newValuesFromS ?? COMMISSIONED_AT_S;
    this.catalog = options.catalog ?? "default";
    this.resets = options.counterResets ?? [];
    checkCounterFaults(options.counterFaults);
    const faults = options.counterFaults;
    this.counterFaults =
      faults !== undefined && counterFaultsActive(faults)
        ? { ...faults, deviceIds: faults.deviceIds && [...faults.deviceIds] }
        : undefined;
    for (const d of DEFAULT_DEVICES.slice(0, devices)) this.defaults.set(d.id, d.kind);
  }

  /** All device ids: the default ones, the generated ones, then added ones. */
  deviceIds(): string[] {
    if (this.ids === undefined) {
      const ids = [...this.defaults.keys()];
      for (let index = this.defaults.size + 1; index <= this.deviceCount; index++) {
        ids.push(generatedId(index, this.width));
      }
      this.ids = [...ids, ...this.added.keys()];
    }
    return [...this.ids];
  }

  /** Cheap: builds nothing. */
  hasDevice(deviceId: string): boolean {
    return this.kindOf(deviceId) !== undefined;
  }

  /** The kind of a device; undefined = unknown device (cheap: builds nothing). */
  kindOf(deviceId: string): DeviceKind | undefined {
    return (
      this.defaults.get(deviceId) ?? this.added.get(deviceId) ?? this.generated(deviceId)?.kind
    );
  }

  /** Resource ids listed at `atS` (epoch s; undefined: all); undefined = unknown device. */
  resourceIds(deviceId: string, atS?: number): string[] | undefined {
    return this.device(deviceId)?.resourceIds(atS);
  }

  /** Value ids listed at `atS` (undefined: all); undefined = unknown or unlisted resource. */
  valueIds(deviceId: string, resourceId: string, atS?: number): string[] | undefined {
    return this.device(deviceId)?.valueIds(resourceId, atS);
  }

  /** Records of [fromS, toS] with the counter resets, then the counter faults; throws for unknown ids. */
  records(
    deviceId: string,
    resourceId: string,
    valueIds: readonly string[],
    fromS: number,
    toS: number,
  ): DataRecord[] {
    const records = this.knownDevice(deviceId).records(resourceId, valueIds, fromS, toS);
    for (const reset of this.resets) {
      if (reset.deviceId !== deviceId || !valueIds.includes(reset.valueId)) continue;
      applyReset(records, reset, this.counterAt(reset));
    }
    const faults = this.counterFaults;
    if (faults !== undefined) {
      applyCounterFaults(records, { seed: this.seed, faults, deviceId }, valueIds);
    }
    return records;
  }

  /** The counter's reading just before its reset (what the new meter starts below). */
  private counterAt(reset: CounterReset): number {
    const known = this.resetBases.get(reset);
    if (known !== undefined) return known;
    const before = this.knownDevice(reset.deviceId)
      .records(ALL_DATA, [reset.valueId], reset.atS - DAY_S, reset.atS - 1)
      .map((r) => r[reset.valueId])
      .filter((v): v is number => typeof v === "number");
    const base = before.at(-1) ?? 0;
    this.resetBases.set(reset, base);
    return base;
  }

  /** Adds a device of a kind under any id; throws if the id is taken. */
  addDevice(deviceId: string, kind: DeviceKind): void {
    if (this.hasDevice(deviceId)) throw new Error(`device ${deviceId} exists already`);
    this.added.set(deviceId, kind);
    this.ids = undefined;
  }

  /** A new sensor: in the resource (created if missing) and all_data, with all its history. */
  addValue(deviceId: string, resourceId: string, valueId: string): void {
    this.change(deviceId, { resourceId, valueId, atS: undefined });
  }

  /** As addValue, but listed (with a resource it creates) from `atS` (epoch s) on; new ids only. */
  scheduleValue(deviceId: string, resourceId: string, valueId: string, atS: number): void {
    const device = this.knownDevice(deviceId);
    if (!Number.isFinite(atS)) throw new RangeError(`atS must be a finite time, got ${atS}`);
    if (valueId === "values_id") throw new Error("values_id cannot be scheduled");
    const listed = [resourceId, ALL_DATA].some((r) => device.valueIds(r)?.includes(valueId));
    if (listed) throw new Error(`${deviceId} lists ${valueId} already`);
    this.change(deviceId, { resourceId, valueId, atS });
    this.explicit.push({ deviceId, resourceId, valueId, atS });
  }

  /** Every value id that appears later: the seeded ones and scheduleValue's, by time (builds nothing). */
  scheduledValues(): readonly ScheduledValue[] {
    return [...this.seededValues().values(), ...this.explicit].sort((a, b) => a.atS - b.atS);
  }

  builtDevices(): number {
    return this.built.size;
  }

  /** The day's increment of a counter (kWh for energy counters) from `dayStartS` (00:00 UTC). */
  dayEnergyKwh(deviceId: string, counterValueId: string, dayStartS: number): number {
    return this.knownDevice(deviceId).dayTotal(counterValueId, dayStartS);
  }

  private change(deviceId: string, change: ValueChange): void {
    this.knownDevice(deviceId).addValue(change.resourceId, change.valueId, change.atS);
    const list = this.changes.get(deviceId);
    if (list === undefined) this.changes.set(deviceId, [change]);
    else list.push(change);
  }

  private generated(deviceId: string): GeneratedDevice | undefined {
    const index = generatedIndex(deviceId, this.width, this.deviceCount);
    return index === undefined ? undefined : generatedDevice(this.seed, index, this.width);
  }

  private seededValues(): ReadonlyMap<string, ScheduledValue> {
    const { seed, deviceCount, newValueShare, newValuesFromS } = this;
    this.seeded ??= new Map(
      seededSchedule(seed, deviceCount, newValueShare, newValuesFromS).map((s) => [s.deviceId, s]),
    );
    return this.seeded;
  }

  private knownDevice(deviceId: string): SimulatedDevice {
    const device = this.device(deviceId);
    if (device === undefined) throw new Error(`unknown device ${deviceId}`);
    return device;
  }

  /** The device, built (with its later value listings) unless held; undefined = unknown. */
  private device(deviceId: string): SimulatedDevice | undefined {
    const held = this.built.get(deviceId);
    if (held !== undefined) return held;
    const device = this.build(deviceId);
    if (device === undefined) return undefined;
    for (const c of this.changes.get(deviceId) ?? []) {
      device.addValue(c.resourceId, c.valueId, c.atS);
    }
    this.built.set(deviceId, device);
    return device;
  }

  private build(deviceId: string): SimulatedDevice | undefined {
    const { seed, resolutionS } = this;
    const kind = this.defaults.get(deviceId) ?? this.added.get(deviceId);
    const spec = this.catalog === "spec" ? specResources(seed, deviceId) : undefined;
    if (kind !== undefined) {
      return new SimulatedDevice(deviceId, historyOf(seed, deviceId, kind, resolutionS), spec);
    }
    const generated = this.generated(deviceId);
    if (generated === undefined) return undefined;
    const history = historyOf(seed, deviceId, generated.kind, resolutionS, GENERATED_FRAME_SAMPLES);
    const device = new SimulatedDevice(deviceId, history, spec ?? generatedResources(generated));
    const scheduled = this.seededValues().get(deviceId);
    if (scheduled !== undefined) {
      device.addValue(scheduled.resourceId, scheduled.valueId, scheduled.atS);
    }
    return device;
  }
}

export function createFleet(options: FleetOptions): SimulatedFleet {
  return new SimulatedFleet(options);
}

function check(ok: boolean, message: string): void {
  if (!ok) throw new RangeError(message);
}

/** From the reset on, a counter's readings count from zero: the base subtracted (to 3 decimals). */
function applyReset(records: DataRecord[], reset: CounterReset, base: number): void {
  for (const record of records) {
    const value = record[reset.valueId];
    if (typeof value !== "number") continue;
    if (Date.parse(`${record.timestamp}Z`) / 1000 < reset.atS) continue;
    record[reset.valueId] = Math.round((value - base) * 1000) / 1000;
  }
}
