/**
 * The simulated fleet of the Energy Monitoring Data API: devices, resources, value ids and
 * data records, deterministic from a seed. Pure data, no I/O and no clock (times are passed in).
 * Devices are built on first use and kept in a bounded cache, so a fleet of thousands costs
 * little until asked.
 */
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

export { ALL_DATA, COMMON_VALUE_IDS, DAYS_REMAINING_ID } from "./catalog.js";
export type { CounterFaultOptions } from "./counter-faults.js";
export type { DeviceKind } from "./profiles.js";
export { type CatalogOption, SPEC_EXTRA_VALUES, specExtraIds } from "./spec-catalog.js";
export { COMMISSIONED_AT_S } from "./time.js";
export {
  DEFAULT_NEW_VALUE_SHARE,
  NEW_VALUE_SPREAD_S,
  type ScheduledValue,
} from "./value-schedule.js";

/** Options of a fleet. */
export interface FleetOptions {
  /** Changes the data, not the device ids. */
  seed: number;
  /** Sample spacing in whole seconds (default 60). */
  resolutionS?: number;
  /**
   * Number of devices (default 4): the default devices first (the first N when N < 4), then
   * generated ones `site-00005` … (zero-padded to 5 digits, 6 for 100 000 devices).
   */
  devices?: number;
  /** Share (0..1) of generated devices that get a new value id later (default 0.02; 0: none). */
  newValueShare?: number;
  /** Reference time of those new values (epoch s, default COMMISSIONED_AT_S); see value-schedule.ts. */
  newValuesFromS?: number;
  /**
   * "spec": every device lists only the value ids spec 2.3 documents plus SPEC_EXTRA_VALUES seeded
   * coded ids (one resource, all_data); default "default", each kind's own catalog.
   */
  catalog?: CatalogOption;
  /**
   * Cumulative counters replaced at a time (a new meter): from `atS` on, the counter of the device
   * counts from zero again; what rollups must see as a reset, not as a fall.
   */
  counterResets?: readonly CounterReset[];
  /**
   * Counter readings that fall as real meters' do (dips, transient zeros, daily counters that
   * start above 0; counter-faults.ts), applied in `records` after `counterResets` (default: none).
   */
  counterFaults?: CounterFaultOptions;
}

/** A cumulative counter of a device that starts again from zero at `atS` (epoch s). */
export interface CounterReset {
  readonly deviceId: string;
  readonly valueId: string;
  readonly atS: number;
}

/** The default devices, in listing order. */
export const DEFAULT_DEVICES: readonly { readonly id: string; readonly kind: DeviceKind }[] = [
  { id: "hybrid-site-01", kind: "hybrid" },
  { id: "offgrid-genset-02", kind: "offgrid" },
  { id: "audit-box-03", kind: "auditbox" },
  { id: "site A+1", kind: "gridtied" },
];

/**
 * Devices kept built at most; the least recently used one is dropped (and rebuilt when asked).
 * A built generated device holds up to GENERATED_FRAME_SAMPLES samples of day frames (about
 * 0.8 MB at 60 s), so the built devices stay near 100 MB however many a client walks.
 */
export const BUILT_DEVICE_LIMIT = 128;

/** Day-frame samples a generated device keeps: the 8 UTC days of a 7-day window at 60 s. */
const GENERATED_FRAME_SAMPLES = 8 * 1440;

/** A value listing made after the fleet was created, replayed when its device is rebuilt. */
interface ValueChange {
  readonly resourceId: string;
  readonly valueId: string;
  readonly atS: number | undefined;
}

/** The simulated devices and their data. */
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
  /** The counter faults (a copy) when some are active, else undefined. */
  private readonly counterFaults: CounterFaultOptions | undefined;

  constructor(options: FleetOptions) {
    const res = options.resolutionS ?? 60;
    if (!Number.isInteger(res) || res <= 0) {
      throw new RangeError(`resolutionS must be a positive integer, got ${res}`);
    }
    const devices = options.devices ?? DEFAULT_DEVICES.length;
    if (!Number.isInteger(devices) || devices < 1) {
      throw new RangeError(`devices must be a positive integer, got ${devices}`);
    }
    const share = options.newValueShare ?? DEFAULT_NEW_VALUE_SHARE;
    if (!(share >= 0 && share <= 1)) {
      throw new RangeError(`newValueShare must be from 0 to 1, got ${share}`);
    }
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

  /** True for a device of the fleet (cheap: builds nothing). */
  hasDevice(deviceId: string): boolean {
    return this.kindOf(deviceId) !== undefined;
  }

  /** The kind of a device; undefined = unknown device (cheap: builds nothing). */
  kindOf(deviceId: string): DeviceKind | undefined {
    return (
      this.defaults.get(deviceId) ?? this.added.get(deviceId) ?? this.generated(deviceId)?.kind
    );
  }

  /**
   * Resource ids of a device listed at `atS` (epoch s; undefined: every one, later ones too);
   * undefined = unknown device.
   */
  resourceIds(deviceId: string, atS?: number): string[] | undefined {
    return this.device(deviceId)?.resourceIds(atS);
  }

  /**
   * Value ids of a resource listed at `atS` (epoch s; undefined: every one, scheduled ones too);
   * undefined = unknown device or resource (or a resource not listed yet).
   */
  valueIds(deviceId: string, resourceId: string, atS?: number): string[] | undefined {
    return this.device(deviceId)?.valueIds(resourceId, atS);
  }

  /**
   * Records with timestamps t, fromS <= t <= toS, t a multiple of resolutionS and not before
   * COMMISSIONED_AT_S, in increasing time order; per timestamp one row per readout with a
   * requested value, ordered by values_id. Throws for an unknown device, resource or value.
   * Scheduled values have records whatever the time (history back to COMMISSIONED_AT_S).
   * Counter readings as served: with the counter resets, then the counter faults.
   */
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

  /**
   * A new sensor appears: lists the value id in the resource (created if missing) and in
   * all_data, with history back to COMMISSIONED_AT_S from its unit and type codes.
   */
  addValue(deviceId: string, resourceId: string, valueId: string): void {
    this.change(deviceId, { resourceId, valueId, atS: undefined });
  }

  /**
   * As addValue, but listed only from `atS` (epoch s) on; the resource too if it is created.
   * Throws for an unknown device, values_id, or a value id the device lists already.
   */
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

  /** Devices built and held right now (at most BUILT_DEVICE_LIMIT). */
  builtDevices(): number {
    return this.built.size;
  }

  /**
   * The day's increment of a counter value (kWh for energy counters): the sum over the samples
   * of [dayStartS, dayStartS + 86400) of power * resolutionS / 3600. dayStartS must be 00:00 UTC.
   */
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

  /** The seeded new values by device id, computed once. */
  private seededValues(): ReadonlyMap<string, ScheduledValue> {
    this.seeded ??= new Map(
      seededSchedule({
        seed: this.seed,
        first: DEFAULT_DEVICES.length + 1,
        last: this.deviceCount,
        share: this.newValueShare,
        fromS: this.newValuesFromS,
        deviceAt: (index) => generatedDevice(this.seed, index, this.width),
      }).map((s) => [s.deviceId, s]),
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
    const kind = this.defaults.get(deviceId) ?? this.added.get(deviceId);
    const spec = this.catalog === "spec" ? specResources(this.seed, deviceId) : undefined;
    if (kind !== undefined) {
      const history = historyOf(this.seed, deviceId, kind, this.resolutionS);
      return new SimulatedDevice(deviceId, history, spec);
    }
    const generated = this.generated(deviceId);
    if (generated === undefined) return undefined;
    const frames = GENERATED_FRAME_SAMPLES;
    const history = historyOf(this.seed, deviceId, generated.kind, this.resolutionS, frames);
    const device = new SimulatedDevice(deviceId, history, spec ?? generatedResources(generated));
    const scheduled = this.seededValues().get(deviceId);
    if (scheduled !== undefined) {
      device.addValue(scheduled.resourceId, scheduled.valueId, scheduled.atS);
    }
    return device;
  }
}

/**
 * A fleet with the default devices (hybrid-site-01, offgrid-genset-02, audit-box-03, site A+1),
 * and generated ones past 4 devices.
 */
export function createFleet(options: FleetOptions): SimulatedFleet {
  return new SimulatedFleet(options);
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
