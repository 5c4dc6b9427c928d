import type { DataRecord } from "../../../src/records/data-record.js";
import { COMMISSIONED_AT_S, type SimulatedFleet } from "../../../src/simulator/model/fleet.js";

/** 00:00 UTC of day `day` after commissioning. */
export const dayStart = (day: number): number => COMMISSIONED_AT_S + day * 86_400;

/** Seconds since the epoch of a record's timestamp. */
export const secondsOf = (r: DataRecord): number => Date.parse(`${r.timestamp}Z`) / 1000;

/** A numeric member of a record (fails the test otherwise). */
export function num(r: DataRecord | undefined, id: string): number {
  const v = r?.[id];
  if (typeof v !== "number") throw new Error(`${id} is ${String(v)} in ${JSON.stringify(r)}`);
  return v;
}

/** The rows of one readout. */
export function rowsOf(records: readonly DataRecord[], readout: number): DataRecord[] {
  return records.filter((r) => r.values_id === readout);
}

/** One value over a window, as [t, value] pairs (the value's own readout rows only). */
export function series(
  fleet: SimulatedFleet,
  deviceId: string,
  valueId: string,
  fromS: number,
  toS: number,
): { t: number; v: number }[] {
  return fleet
    .records(deviceId, "all_data", [valueId], fromS, toS)
    .map((r) => ({ t: secondsOf(r), v: num(r, valueId) }));
}

/** Every device's all_data value ids, values_id left out. */
export function requestable(fleet: SimulatedFleet, deviceId: string): string[] {
  return (fleet.valueIds(deviceId, "all_data") ?? []).filter((id) => id !== "values_id");
}
