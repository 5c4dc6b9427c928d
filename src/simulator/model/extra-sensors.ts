/** Sensors beyond a kind's catalog for generated devices: coded ids on extra readouts (boards). */
import { floor } from "./num.js";

/** Realistic sensors of an extension board: `e_<codes>_<board>_<name>`, codes as in spec 2.3. */
export const SENSOR_TEMPLATES: readonly { readonly codes: string; readonly name: string }[] = [
  { codes: "00_04_00", name: "cabinet_temperature" },
  { codes: "00_05_00", name: "cabinet_humidity" },
  { codes: "00_02_00", name: "aux_voltage" },
  { codes: "01_03_00", name: "aux_current" },
  { codes: "03_01_00", name: "aux_power" },
  { codes: "03_07_04", name: "aux_energy" },
  { codes: "00_07_05", name: "aux_energy_today" },
  { codes: "00_06_00", name: "line_frequency" },
  { codes: "00_12_00", name: "module_irradiance" },
  { codes: "00_04_00", name: "module_temperature" },
  { codes: "00_13_00", name: "fan_speed" },
  { codes: "00_11_00", name: "coolant_pressure" },
  { codes: "00_19_04", name: "water_used" },
  { codes: "00_14_00", name: "air_flow" },
  { codes: "00_00_01", name: "door_pulses" },
  { codes: "00_00_02", name: "door_open" },
  { codes: "00_00_03", name: "controller_state" },
  { codes: "00_00_06", name: "fan_status" },
  { codes: "00_16_04", name: "fan_hours" },
  { codes: "00_24_05", name: "fan_minutes_today" },
  { codes: "00_28_04", name: "data_sent" },
  { codes: "00_21_00", name: "earth_resistance" },
  { codes: "00_17_00", name: "tracker_angle" },
  { codes: "00_29_00", name: "fan_air_speed" },
];

/** A board holds one sensor of each template. */
export const FIRST_BOARD = 6;

/** Readout of the sensors that appear later (value-schedule.ts); above every board in use. */
export const NEW_SENSOR_BOARD = 9;

/** The value id of template `template` (index, wrapping) on readout `board`. */
export function sensorId(template: number, board: number): string {
  const t = SENSOR_TEMPLATES[template % SENSOR_TEMPLATES.length] ?? {
    codes: "00_00_00",
    name: "x",
  };
  return `e_${t.codes}_${String(board).padStart(3, "0")}_${t.name}`;
}

/** The k-th extra sensor (k = 0, 1, …) of a device whose templates start at `offset`. */
export function extraSensorId(k: number, offset: number): string {
  return sensorId(offset + k, FIRST_BOARD + floor(k / SENSOR_TEMPLATES.length));
}
