/**
 * The simulated fleet of the Energy Monitoring Data API: devices, resources, value ids and
 * data records, deterministic from a seed. Pure data, no I/O and no clock.
 */
import type { DataRecord } from "../../api/schemas.js";
import { SimulatedDevice } from "./device.js";
import type { DeviceKind } from "./profiles.js";

export { ALL_DATA, COMMON_VALUE_IDS, DAYS_REMAINING_ID } from "./catalog.js";
export type { DeviceKind } from "./profiles.js";
export { COMMISSIONED_AT_S } from "./time.js";

/** Options of a fleet. */
export interface FleetOptions {
  /** Changes the data, not the device ids. */
  seed: number;
  /** Sample spacing in whole seconds (default 60). */
  resolutionS?: number;
}

/** The default devices, in listing order. */
export const DEFAULT_DEVICES: readonly { readonly id: string; readonly kind: DeviceKind }[] = [
  { id: "hybrid-site-01", kind: "hybrid" },
  { id: "offgrid-genset-02", kind: "offgrid" },
  { id: "audit-box-03", kind: "auditbox" },
  { id: "site A+1", kind: "gridtied" },
];

/** The simulated devices and their data. */
export interface SimulatedFleet {
  readonly resolutionS: number;
  /** All device ids, the default ones first. */
  deviceIds(): string[];
  /** Resource ids of a device; undefined = unknown device. */
  resourceIds(deviceId: string): string[] | undefined;
  /** Value ids of a resource; undefined = unknown device or resource. */
  valueIds(deviceId: string, resourceId: string): string[] | undefined;
  /**
   * Records with timestamps t, fromS <= t <= toS, t a multiple of resolutionS and not before
   * COMMISSIONED_AT_S, in increasing time order; per timestamp one row per readout with a
   * requested value, ordered by values_id. Throws for an unknown device, resource or value.
   */
  records(
    deviceId: string,
    resourceId: string,
    valueIds: readonly string[],
    fromS: number,
    toS: number,
  ): DataRecord[];
  /** Adds a device of a kind under any id; throws if the id is taken. */
  addDevice(deviceId: string, kind: DeviceKind): void;
  /**
   * A new sensor appears: lists the value id in the resource (created if missing) and in
   * all_data, with history back to COMMISSIONED_AT_S from its unit and type codes.
   */
  addValue(deviceId: string, resourceId: string, valueId: string): void;
  /**
   * The day's increment of a counter value (kWh for energy counters): the sum over the samples
   * of [dayStartS, dayStartS + 86400) of power * resolutionS / 3600. dayStartS must be 00:00 UTC.
   */
  dayEnergyKwh(deviceId: string, counterValueId: string, dayStartS: number): number;
}

class Fleet implements SimulatedFleet {
  readonly resolutionS: number;
  private readonly seed: number;
  private readonly devices = new Map<string, SimulatedDevice>();

  constructor(options: FleetOptions) {
    const res = options.resolutionS ?? 60;
    if (!Number.isInteger(res) || res <= 0) {
      throw new RangeError(`resolutionS must be a positive integer, got ${res}`);
    }
    this.resolutionS = res;
    this.seed = options.seed;
    for (const d of DEFAULT_DEVICES) this.addDevice(d.id, d.kind);
  }

  deviceIds(): string[] {
    return [...this.devices.keys()];
  }

  resourceIds(deviceId: string): string[] | undefined {
    return this.devices.get(deviceId)?.resourceIds();
  }

  valueIds(deviceId: string, resourceId: string): string[] | undefined {
    return this.devices.get(deviceId)?.valueIds(resourceId);
  }

  records(
    deviceId: string,
    resourceId: string,
    valueIds: readonly string[],
    fromS: number,
    toS: number,
  ): DataRecord[] {
    return this.device(deviceId).records(resourceId, valueIds, fromS, toS);
  }

  addDevice(deviceId: string, kind: DeviceKind): void {
    if (this.devices.has(deviceId)) throw new Error(`device ${deviceId} exists already`);
    this.devices.set(deviceId, new SimulatedDevice(deviceId, kind, this.seed, this.resolutionS));
  }

  addValue(deviceId: string, resourceId: string, valueId: string): void {
    this.device(deviceId).addValue(resourceId, valueId);
  }

  dayEnergyKwh(deviceId: string, counterValueId: string, dayStartS: number): number {
    return this.device(deviceId).dayTotal(counterValueId, dayStartS);
  }

  private device(deviceId: string): SimulatedDevice {
    const device = this.devices.get(deviceId);
    if (device === undefined) throw new Error(`unknown device ${deviceId}`);
    return device;
  }
}

/** A fleet with the default devices (hybrid-site-01, offgrid-genset-02, audit-box-03, site A+1). */
export function createFleet(options: FleetOptions): SimulatedFleet {
  return new Fleet(options);
}
