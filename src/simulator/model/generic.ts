/** Generic generators for values added at run time, keyed on the unit and type codes of the id. */

import { floor, PI, roundTo, sin } from "./num.js";
import { sampleTime } from "./readouts/context.js";
import { hash2, smoothNoise, subKey, unit2, wobble } from "./rng.js";
import type { DayFrame } from "./site-physics.js";
import { counter, parseValueId, sampled, type ValueDef } from "./values.js";

/** Typical level, swing, decimals and counting rate (units per hour) of each unit code. */
interface UnitRange {
  readonly center: number;
  readonly swing: number;
  readonly decimals: number;
  readonly perHour: number;
}

const UNIT_RANGES: Readonly<Record<number, UnitRange>> = {
  0: { center: 50, swing: 40, decimals: 2, perHour: 1 },
  1: { center: 2.5, swing: 2.5, decimals: 3, perHour: 1 },
  2: { center: 230, swing: 4, decimals: 1, perHour: 1 },
  3: { center: 8, swing: 7, decimals: 2, perHour: 1 },
  4: { center: 28, swing: 8, decimals: 1, perHour: 1 },
  5: { center: 55, swing: 35, decimals: 1, perHour: 1 },
  6: { center: 50, swing: 0.05, decimals: 2, perHour: 1 },
  7: { center: 2, swing: 1.5, decimals: 3, perHour: 1.5 },
  8: { center: 0.3, swing: 0.2, decimals: 3, perHour: 0.3 },
  9: { center: 3, swing: 2.5, decimals: 3, perHour: 1 },
  10: { center: 7.2, swing: 0.4, decimals: 2, perHour: 1 },
  11: { center: 3, swing: 1.5, decimals: 2, perHour: 1 },
  12: { center: 400, swing: 380, decimals: 1, perHour: 1 },
  13: { center: 1500, swing: 40, decimals: 0, perHour: 1 },
  14: { center: 3, swing: 2, decimals: 2, perHour: 3 },
  15: { center: 0.4, swing: 0.3, decimals: 3, perHour: 1 },
  16: { center: 12, swing: 10, decimals: 2, perHour: 0.5 },
  17: { center: 180, swing: 170, decimals: 0, perHour: 1 },
  18: { center: 25, swing: 10, decimals: 2, perHour: 1 },
  19: { center: 150, swing: 100, decimals: 1, perHour: 2 },
  20: { center: 1.5, swing: 1, decimals: 2, perHour: 1 },
  21: { center: 500, swing: 300, decimals: 1, perHour: 1 },
  22: { center: 180, swing: 40, decimals: 1, perHour: 1 },
  23: { center: 40, swing: 30, decimals: 1, perHour: 5 },
  24: { center: 30, swing: 25, decimals: 0, perHour: 20 },
  25: { center: 15, swing: 14, decimals: 0, perHour: 1 / 24 },
  26: { center: 6, swing: 5, decimals: 0, perHour: 1 / 720 },
  27: { center: 150, swing: 100, decimals: 1, perHour: 10 },
  28: { center: 512, swing: 500, decimals: 0, perHour: 2048 },
  29: { center: 4, swing: 3.5, decimals: 1, perHour: 1 },
  30: { center: 3, swing: 2.5, decimals: 3, perHour: 2 },
};

const FALLBACK: UnitRange = { center: 100, swing: 50, decimals: 3, perHour: 1 };

const WORDS: readonly string[] = ["OK", "Running", "Idle", "Standby", "Maintenance", "Warning"];

/** A value for an id added at run time, shaped by its type code (uncoded ids: continuous). */
export function genericValue(deviceKey: number, id: string): ValueDef {
  const coded = parseValueId(id);
  const key = subKey(deviceKey, id);
  const range = UNIT_RANGES[coded?.unit ?? -1] ?? FALLBACK;
  const phase = unit2(key, 0) * 24;
  switch (coded?.type) {
    case 1:
      return sampled(id, (f, _i, t) => {
        const burst = smoothNoise(key, t, 1800);
        if (burst < 0.7) return 0;
        return floor(((burst - 0.7) / 0.3) * 5 * (f.resolutionS / 60) + unit2(key, hash2(t, 1)));
      });
    case 2:
      return sampled(id, (_f, _i, t) => (smoothNoise(key, t, 5400) > 0.55 ? 1 : 0));
    case 3:
      return sampled(id, (_f, _i, t) => {
        const slot = floor(t / 10_800);
        return WORDS[floor(unit2(key, slot) * WORDS.length)] ?? "OK";
      });
    case 4:
    case 5: {
      const rate = (f: DayFrame, i: number): number =>
        range.perHour *
        (0.2 + 1.6 * smoothNoise(key, sampleTime(f, i), 3600)) *
        (f.resolutionS / 3600);
      return counter(id, rate, {
        daily: coded.type === 5,
        base: roundTo(1000 * range.perHour * unit2(key, 1), 3),
      });
    }
    case 6:
      return sampled(id, (_f, _i, t) => {
        const u = unit2(key, floor(t / 3600));
        return u < 0.8 ? 0 : u < 0.9 ? 1 : u < 0.97 ? 2 : 3;
      });
    default:
      return sampled(id, (_f, _i, t) => {
        const daily = sin((2 * PI * ((t / 3600 + phase) % 24)) / 24);
        const v = range.center + range.swing * (0.55 * daily + 0.45 * wobble(key, t, 1800));
        return roundTo(v, range.decimals);
      });
  }
}
