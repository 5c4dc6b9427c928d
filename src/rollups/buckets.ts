/** A time zone's days in epoch seconds, DST included (a skipped midnight: the date's first instant). */

/** [startS, endS) */
export interface Bucket {
  readonly startS: number;
  readonly endS: number;
}

export const HOUR_S = 3600;

/** The start of the UTC hour holding `s`. */
export const hourStart = (s: number): number => Math.floor(s / HOUR_S) * HOUR_S;

const formats = new Map<string, Intl.DateTimeFormat>();

function formatOf(zone: string): Intl.DateTimeFormat {
  const format =
    formats.get(zone) ??
    new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      year: "numeric",
      month: "numeric",
      day: "numeric",
    });
  formats.set(zone, format);
  return format;
}

function wallDate(zone: string, s: number) {
  const parts: Record<string, number> = {};
  for (const part of formatOf(zone).formatToParts(new Date(s * 1000))) {
    if (part.type !== "literal") parts[part.type] = Number(part.value);
  }
  return { year: parts.year ?? 1970, month: parts.month ?? 1, day: parts.day ?? 1 };
}

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

const starts = new Map<string, number>();
/** `YYYY-MM-DD` of each day start found, by `zone startS` (a day line asks for its date). */
const dates = new Map<string, string>();

/**
 * The first instant of the local date year-month-day in `zone`, found by a binary search over the
 * two days around its UTC midnight (a date only ever follows the one before it).
 */
function startOfDate(zone: string, year: number, month: number, day: number): number {
  const key = `${zone} ${year}-${month}-${day}`;
  const known = starts.get(key);
  if (known !== undefined) return known;
  const target = year * 10_000 + month * 100 + day;
  const dateAt = (s: number) => {
    const w = wallDate(zone, s);
    return w.year * 10_000 + w.month * 100 + w.day;
  };
  const wall = Date.UTC(year, month - 1, day) / 1000;
  // no zone is more than 14 hours from UTC
  let low = wall - 15 * HOUR_S;
  let high = wall + 15 * HOUR_S;
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2);
    if (dateAt(mid) >= target) high = mid;
    else low = mid;
  }
  starts.set(key, high);
  dates.set(`${zone} ${high}`, `${pad(year, 4)}-${pad(month)}-${pad(day)}`);
  return high;
}

/** The first instant of the local date `date` (`YYYY-MM-DD`) in `zone`. */
export function startOfLocalDate(zone: string, date: string): number {
  const ymd = /^(\d{4})-(\d\d)-(\d\d)$/.exec(date);
  if (ymd === null) throw new RangeError(`not a date (YYYY-MM-DD): ${date}`);
  return startOfDate(zone, Number(ymd[1]), Number(ymd[2]), Number(ymd[3]));
}

export function dayOf(zone: string, s: number): Bucket {
  const w = wallDate(zone, s);
  const startS = startOfDate(zone, w.year, w.month, w.day);
  const next = new Date(Date.UTC(w.year, w.month - 1, w.day + 1));
  const endS = startOfDate(zone, next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate());
  return { startS, endS };
}

/** The local date of `s` in `zone`: `YYYY-MM-DD` (a day's start found before: without Intl). */
export function localDate(zone: string, s: number): string {
  const known = dates.get(`${zone} ${s}`);
  if (known !== undefined) return known;
  const w = wallDate(zone, s);
  return `${pad(w.year, 4)}-${pad(w.month)}-${pad(w.day)}`;
}
