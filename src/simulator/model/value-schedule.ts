/**
 * Value lists that change now and then: a seeded share of the generated devices gets a new value
 * id at a time within NEW_VALUE_SPREAD_S after a reference time. Computed from (seed, index)
 * alone, without building devices.
 */
import { ALL_DATA } from "./catalog.js";
import type { GeneratedDevice } from "./device-mix.js";
import { NEW_SENSOR_BOARD, SENSOR_TEMPLATES, sensorId } from "./extra-sensors.js";
import { floor } from "./num.js";
import { hashString, subKey, unit2 } from "./rng.js";
import { DAY_S } from "./time.js";

/** A value id that a device starts to list at `atS` (epoch s), with data back to commissioning. */
export interface ScheduledValue {
  readonly deviceId: string;
  readonly resourceId: string;
  readonly valueId: string;
  readonly atS: number;
}

/** New values appear within this many seconds after the reference time (7 days). */
export const NEW_VALUE_SPREAD_S = 7 * DAY_S;

/** Share of generated devices that get a new value when the fleet options do not say. */
export const DEFAULT_NEW_VALUE_SHARE = 0.02;

/** What the schedule needs to know about the fleet. */
export interface ScheduleInput {
  readonly seed: number;
  /** Index of the first and of the last generated device (first > last: none). */
  readonly first: number;
  readonly last: number;
  readonly share: number;
  readonly fromS: number;
  readonly deviceAt: (index: number) => GeneratedDevice;
}

/**
 * The seeded new values, in device order: devices whose draw is below `share`, or (share > 0 and
 * no draw below it) the device with the lowest draw, so a fleet with generated devices has one.
 * Each appears a whole number of minutes after fromS, before fromS + NEW_VALUE_SPREAD_S, in the device's second
 * resource (and all_data) when it has one, else in all_data, on sensor board 009.
 */
export function seededSchedule(input: ScheduleInput): ScheduledValue[] {
  const { seed, first, last, share, fromS, deviceAt } = input;
  if (!(share > 0) || first > last) return [];
  const key = subKey(hashString(String(seed)), "new-values");
  const chosen: number[] = [];
  let lowest = first;
  let lowestDraw = 1;
  for (let index = first; index <= last; index++) {
    const u = unit2(key, index);
    if (u < share) chosen.push(index);
    if (u < lowestDraw) [lowest, lowestDraw] = [index, u];
  }
  if (chosen.length === 0) chosen.push(lowest);
  return chosen.map((index) => {
    const device = deviceAt(index);
    const minutes = floor(unit2(subKey(key, "at"), index) * (NEW_VALUE_SPREAD_S / 60));
    const template = floor(unit2(subKey(key, "sensor"), index) * SENSOR_TEMPLATES.length);
    return {
      deviceId: device.id,
      resourceId: device.secondResource ?? ALL_DATA,
      valueId: sensorId(template, NEW_SENSOR_BOARD),
      atS: fromS + minutes * 60,
    };
  });
}
