/** Value lists that change: a seeded share of generated devices gets a new value id later. */
import { ALL_DATA } from "./catalog.js";
import { FIRST_GENERATED, generatedDevice, idWidth } from "./device-mix.js";
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

export { DEFAULT_NEW_VALUE_SHARE } from "../../util/demo-defaults.js";

/**
 * The seeded new values of a fleet of `devices`, in device order: generated devices whose draw is
 * below `share`, else (share > 0) the one with the lowest draw. Each appears a whole number of
 * minutes after `fromS`, on sensor board 009 of the device's second resource (and all_data).
 */
export function seededSchedule(
  seed: number,
  devices: number,
  share: number,
  fromS: number,
): ScheduledValue[] {
  if (!(share > 0) || FIRST_GENERATED > devices) return [];
  const key = subKey(hashString(String(seed)), "new-values");
  const chosen: number[] = [];
  let lowest = FIRST_GENERATED;
  let lowestDraw = 1;
  for (let index = FIRST_GENERATED; index <= devices; index++) {
    const u = unit2(key, index);
    if (u < share) chosen.push(index);
    if (u < lowestDraw) [lowest, lowestDraw] = [index, u];
  }
  if (chosen.length === 0) chosen.push(lowest);
  return chosen.map((index) => {
    const device = generatedDevice(seed, index, idWidth(devices));
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
