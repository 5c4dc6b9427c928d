/** The Audit Box's values: credit days, logger readout 001 and meter readout 002. */
import { floor, roundTo } from "../num.js";
import { smoothNoise, unit2, wobble } from "../rng.js";
import type { DayFrame } from "../site-physics.js";
import { COMMISSIONED_AT_S, DAY_S } from "../time.js";
import { counter, sampled, type ValueDef } from "../values.js";
import { at, type ReadoutContext, sampleTime } from "./context.js";

export const DAYS_REMAINING_ID = "e_00_00_00_000_days_remaining";

/** Credit days and logger readout 001: data sent, uptime, subscription age, firmware. */
function loggerValues(ctx: ReadoutContext): ValueDef[] {
  const creditStart = 30 + floor(300 * unit2(ctx.key(DAYS_REMAINING_ID), 0));
  const dk = ctx.key("e_03_28_04_001_data_transmitted");
  const rebootKey = ctx.key("e_00_25_00_001_uptime");
  const rebootEveryS = (20 + floor(25 * unit2(rebootKey, 0))) * DAY_S;
  const rebootOffsetS = floor(unit2(rebootKey, 1) * rebootEveryS);
  const monthsBefore = floor(24 * unit2(ctx.key("e_00_26_00_001_subscription_age"), 0));
  const fwKey = ctx.key("e_00_00_03_001_firmware_version");
  const upgrade1 = 40 + floor(100 * unit2(fwKey, 0));
  const upgrade2 = upgrade1 + 150 + floor(150 * unit2(fwKey, 1));
  return [
    sampled(DAYS_REMAINING_ID, (f) => (((creditStart - f.day) % 365) + 365) % 365),
    counter(
      "e_03_28_04_001_data_transmitted",
      (f, i) => (0.9 + 0.6 * smoothNoise(dk, sampleTime(f, i), 3600)) * (f.resolutionS / 60),
      { base: roundTo(5000 + 20000 * unit2(dk, 0), 0) },
    ),
    sampled("e_00_25_00_001_uptime", (_f, _i, t) => {
      const since = t - COMMISSIONED_AT_S - rebootOffsetS;
      const lastBoot = since < 0 ? COMMISSIONED_AT_S : t - (since % rebootEveryS);
      return roundTo((t - lastBoot) / DAY_S, 2);
    }),
    sampled("e_00_26_00_001_subscription_age", (_f, _i, t) => {
      const d = new Date(t * 1000);
      return monthsBefore + (d.getUTCFullYear() - 2025) * 12 + d.getUTCMonth();
    }),
    sampled("e_00_00_03_001_firmware_version", (f) =>
      f.day < upgrade1 ? "2.4.1" : f.day < upgrade2 ? "2.5.0" : "2.6.3",
    ),
  ];
}

/** Meter readout 002: voltage, current, power factor and insulation resistance. */
function meterValues(ctx: ReadoutContext): ValueDef[] {
  const vk = ctx.key("e_00_02_00_002_voltage_L1");
  const pfk = ctx.key("e_00_00_00_002_power_factor");
  const ik = ctx.key("e_02_21_00_002_insulation_resistance");
  const volts = (f: DayFrame, i: number, t: number): number => {
    if (at(f.gridUp, i) === 1) return roundTo(229 + 3 * wobble(vk, t, 1200), 1);
    return at(f.gensetOn, i) === 1 ? roundTo(226 + 4 * wobble(vk, t, 300), 1) : 0;
  };
  return [
    sampled("e_00_02_00_002_voltage_L1", volts),
    sampled("e_00_03_00_002_current_L1", (f, i, t) => {
      const v = volts(f, i, t);
      return v === 0 ? 0 : roundTo((at(f.load, i) * 1000) / 3 / v, 2);
    }),
    sampled("e_00_00_00_002_power_factor", (_f, _i, t) =>
      roundTo(0.93 + 0.04 * wobble(pfk, t, 1800), 3),
    ),
    sampled("e_02_21_00_002_insulation_resistance", (f, i, t) =>
      at(f.alarm, i) === 302
        ? 0.35
        : roundTo(40 + 25 * smoothNoise(ik, t, 5 * DAY_S) - 8 * f.cloudiness, 2),
    ),
  ];
}

export function auditValues(ctx: ReadoutContext): ValueDef[] {
  return [...loggerValues(ctx), ...meterValues(ctx)];
}
