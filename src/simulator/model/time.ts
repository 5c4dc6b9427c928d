/** UTC day grid and timestamp formatting of the simulated data. */
import { ceil, floor } from "./num.js";

/** Data starts here for every device; records before it do not exist. */
export const COMMISSIONED_AT_S = Date.UTC(2025, 0, 1) / 1000;

export const DAY_S = 86_400;

/** Index of the UTC day holding `t`, counted from the commissioning day (day 0). */
export function dayIndexOf(t: number): number {
  return floor((t - COMMISSIONED_AT_S) / DAY_S);
}

export function dayStartOf(day: number): number {
  return COMMISSIONED_AT_S + day * DAY_S;
}

/** The smallest multiple of `step` that is >= t. */
export function ceilToMultiple(t: number, step: number): number {
  return ceil(t / step) * step;
}

/** The largest multiple of `step` that is <= t. */
export function floorToMultiple(t: number, step: number): number {
  return floor(t / step) * step;
}

/** Samples (multiples of `resolutionS`) within [00:00, 24:00) of day `day`: the first, how many. */
export function dayGrid(day: number, resolutionS: number): { firstS: number; count: number } {
  const start = dayStartOf(day);
  const firstS = ceilToMultiple(start, resolutionS);
  const lastS = ceilToMultiple(start + DAY_S, resolutionS) - resolutionS;
  return { firstS, count: lastS >= firstS ? (lastS - firstS) / resolutionS + 1 : 0 };
}

/** Day of the year in [0, 365), fractional, for seasonal curves. */
export function dayOfYear(t: number): number {
  const days = t / DAY_S - 10_957;
  return ((days % 365.2425) + 365.2425) % 365.2425;
}

/** 0 = Sunday. */
export function weekdayOf(t: number): number {
  return (floor(t / DAY_S) + 4) % 7;
}

function pad2(n: number): string {
  return n < 10 ? `0${n}` : `${n}`;
}

/** Formats whole seconds as `YYYY-MM-DDTHH:MM:SS` (UTC); `datePrefix` is the day's `YYYY-MM-DDT`. */
export function formatWithPrefix(datePrefix: string, t: number): string {
  const s = ((t % DAY_S) + DAY_S) % DAY_S;
  const h = floor(s / 3600);
  const m = floor((s % 3600) / 60);
  return `${datePrefix}${pad2(h)}:${pad2(m)}:${pad2(floor(s % 60))}`;
}

export function datePrefixOf(t: number): string {
  return new Date(floor(t) * 1000).toISOString().slice(0, 11);
}
