/** The off-grid site's water pump and tank readout 003: a solar pump filling a tank. */
import { clamp, PI, roundTo, sin } from "../num.js";
import { smoothNoise, wobble } from "../rng.js";
import type { DayFrame } from "../site-physics.js";
import { DAY_S } from "../time.js";
import { counter, sampled, type ValueDef } from "../values.js";
import { at, dtH, type ReadoutContext, sampleTime } from "./context.js";

const PIPE_AREA_M2 = PI * 0.025 * 0.025;
const TANK_AREA_M2 = 12;

export function pumpValues(ctx: ReadoutContext): ValueDef[] {
  const fk = ctx.key("e_00_14_00_003_pump_flow");
  const levelKey = ctx.key("e_00_20_00_003_tank_level");
  const pk = ctx.key("e_03_22_00_003_pipe_pressure");
  const phk = ctx.key("e_00_10_00_003_water_pH");
  const flow = (f: DayFrame, i: number, t: number): number => {
    const s = at(f.solar, i);
    if (s < 1) return 0;
    return roundTo(2.2 + 1.6 * clamp((s - 1) / 4, 0, 1) + 0.1 * wobble(fk, t, 600), 2);
  };
  const dayPumped = new WeakMap<DayFrame, number>();
  const pumpedOn = (f: DayFrame): number => {
    const cached = dayPumped.get(f);
    if (cached !== undefined) return cached;
    let sum = 0;
    for (let i = 0; i < f.count; i++) sum += flow(f, i, sampleTime(f, i)) * dtH(f);
    dayPumped.set(f, sum);
    return sum;
  };
  const demandShare = (h: number): number => h / 24 - (0.6 / (2 * PI)) * sin((2 * PI * h) / 24);
  return [
    sampled("e_00_14_00_003_pump_flow", flow),
    counter("e_00_20_00_003_tank_level", (f, i) => flow(f, i, sampleTime(f, i)) * dtH(f), {
      daily: true,
      output: (pumped, f, _i, t) => {
        const mid = 1.1 + 0.9 * smoothNoise(levelKey, t, 3 * DAY_S);
        const h = (t - f.dayStartS) / 3600;
        const swing = (pumped - pumpedOn(f) * demandShare(h)) / TANK_AREA_M2;
        return roundTo(clamp(mid + swing, 0.1, 3.2), 2);
      },
    }),
    sampled("e_03_22_00_003_pipe_pressure", (f, i, t) => {
      const q = flow(f, i, t);
      return roundTo(
        q > 0 ? 160 + 18 * q + 3 * wobble(pk, t, 300) : 14 + 0.5 * wobble(pk, t, 3600),
        1,
      );
    }),
    sampled("e_00_18_00_003_flow_velocity", (f, i, t) =>
      roundTo(flow(f, i, t) / PIPE_AREA_M2 / 60, 2),
    ),
    sampled("e_00_10_00_003_water_pH", (_f, _i, t) =>
      roundTo(7.15 + 0.25 * wobble(phk, t, 6 * 3600) + 0.04 * wobble(phk ^ 0x3c, t, 600), 2),
    ),
    counter(
      "e_00_24_05_003_pump_runtime_today",
      (f, i) => (at(f.solar, i) >= 1 ? f.resolutionS / 60 : 0),
      { daily: true },
    ),
    counter(
      "e_00_23_05_003_chlorine_dosed_today",
      (f, i) => flow(f, i, sampleTime(f, i)) * dtH(f) * 2,
      { daily: true },
    ),
  ];
}
