/** The hybrid site's readouts past the inverter: battery 002, grid meter 003, weather 004, genset 005. */
import { abs, max, roundTo } from "../num.js";
import { unit2, wobble } from "../rng.js";
import type { DayFrame } from "../site-physics.js";
import { counter, sampled, type ValueDef } from "../values.js";
import { rainPulses, weatherKeys, windDirection, windSpeed } from "../weather.js";
import { at, dtH, type ReadoutContext } from "./context.js";

/** The battery's state of charge in % (readout 002; the off-grid site reports it alone). */
export function batterySoc(): ValueDef {
  return sampled("e_00_05_00_002_battery_SOC", (f, i) => roundTo(at(f.soc, i) * 100, 1));
}

export function batteryValues(ctx: ReadoutContext): ValueDef[] {
  const bat = ctx.profile.battery;
  if (bat === undefined) return [];
  const vk = ctx.key("e_00_02_00_002_battery_voltage");
  const tk = ctx.key("e_00_04_00_002_battery_temperature");
  const volts = (f: DayFrame, i: number, t: number): number =>
    roundTo(48 + 6 * at(f.soc, i) - 0.12 * at(f.battery, i) + 0.05 * wobble(vk, t, 600), 2);
  return [
    batterySoc(),
    sampled("e_00_02_00_002_battery_voltage", volts),
    sampled("e_00_03_00_002_battery_current", (f, i, t) =>
      roundTo((at(f.battery, i) * 1000) / volts(f, i, t), 2),
    ),
    sampled("e_00_27_00_002_remaining_capacity", (f, i) =>
      roundTo((at(f.soc, i) * bat.capacityKwh * 1000) / bat.nominalV, 1),
    ),
    sampled("e_00_04_00_002_battery_temperature", (f, i, t) =>
      roundTo(
        17 + 0.35 * at(f.ambient, i) + 0.9 * abs(at(f.battery, i)) + 0.4 * wobble(tk, t, 1800),
        1,
      ),
    ),
    counter("e_03_07_05_002_charge_energy_today", (f, i) => max(0, -at(f.battery, i)) * dtH(f), {
      daily: true,
    }),
    counter("e_03_07_05_002_discharge_energy_today", (f, i) => max(0, at(f.battery, i)) * dtH(f), {
      daily: true,
    }),
    counter(
      "e_00_00_04_002_cycle_count",
      (f, i) => (max(0, at(f.battery, i)) * dtH(f)) / (bat.capacityKwh * (bat.maxSoc - bat.minSoc)),
      { base: roundTo(80 + 120 * unit2(ctx.key("e_00_00_04_002_cycle_count"), 0), 0) },
    ),
  ];
}

export function gridValues(ctx: ReadoutContext): ValueDef[] {
  const vk = ctx.key("e_00_02_00_003_grid_voltage");
  return [
    sampled("e_03_01_00_003_grid_power", (f, i) => at(f.other, i)),
    sampled("e_00_02_00_003_grid_voltage", (f, i, t) =>
      at(f.gridUp, i) === 0 ? 0 : roundTo(231 + 3 * wobble(vk, t, 1200) - 0.2 * at(f.other, i), 1),
    ),
  ];
}

export function weatherValues(ctx: ReadoutContext): ValueDef[] {
  const wk = weatherKeys(ctx.deviceKey);
  return [
    sampled("e_00_12_00_004_irradiance", (f, i) => roundTo(at(f.irradiance, i), 1)),
    sampled("e_00_04_00_004_ambient_temperature", (f, i) => roundTo(at(f.ambient, i), 1)),
    sampled("e_00_29_00_004_wind_speed", (f, _i, t) => roundTo(windSpeed(wk, t, f.cloudiness), 1)),
    sampled("e_00_17_00_004_wind_direction", (_f, _i, t) => roundTo(windDirection(wk, t), 0)),
    sampled("e_01_20_01_004_rain_gauge", (f, _i, t) =>
      roundTo(rainPulses(wk, t, f.cloudiness, f.resolutionS) * 0.2, 1),
    ),
  ];
}

export function gensetValues(ctx: ReadoutContext): ValueDef[] {
  const gen = ctx.profile.genset;
  if (gen === undefined) return [];
  const rk = ctx.key("e_00_13_00_005_engine_speed");
  const ok = ctx.key("e_00_11_00_005_oil_pressure");
  const refill = 0.75 * gen.tankLiter;
  return [
    sampled("e_00_13_00_005_engine_speed", (f, i, t) =>
      at(f.gensetOn, i) === 1 ? roundTo(1500 + 6 * wobble(rk, t, 120), 0) : 0,
    ),
    counter(
      "e_00_19_00_005_fuel_level",
      (f, i) => (at(f.gensetOn, i) === 1 ? (0.6 + 0.27 * at(f.genset, i)) * dtH(f) : 0),
      {
        base: refill * unit2(ctx.key("e_00_19_00_005_fuel_level"), 0),
        output: (used) => roundTo(gen.tankLiter - (used % refill), 1),
      },
    ),
    counter("e_00_16_04_005_run_hours", (f, i) => (at(f.gensetOn, i) === 1 ? dtH(f) : 0), {
      base: roundTo(600 + 900 * unit2(ctx.key("e_00_16_04_005_run_hours"), 0), 1),
    }),
    sampled("e_00_11_00_005_oil_pressure", (f, i, t) =>
      at(f.gensetOn, i) === 1 ? roundTo(4.2 + 0.15 * wobble(ok, t, 300), 2) : 0,
    ),
    sampled("e_00_00_02_005_running", (f, i) => at(f.gensetOn, i)),
  ];
}
