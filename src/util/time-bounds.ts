/**
 * The bounds of every time a user gives: none before 1970, none after now (a `--to` may run a day
 * ahead), a range of at most ten years unless `--yes`. The API names none, so these are our own.
 */
import { type IsoDuration, NO_TIME, subtractDuration } from "./iso-duration.js";

export const EARLIEST = new Date(0);
export const EARLIEST_TEXT = "1970-01-01T00:00:00Z";

const MAX_RANGE_YEARS = 10;
/** {@link MAX_RANGE_YEARS} as a duration: also the longest SYNC_START before now. */
export const MAX_RANGE: IsoDuration = { ...NO_TIME, years: MAX_RANGE_YEARS };

const TO_AHEAD_MS = 86_400_000;

/** How a time is checked against now: never after it, or (a `--to`) at most a day after it. */
export type FutureRule = "not-after-now" | "a-day-ahead";

/** `2026-06-15T12:00:00Z` */
function shown(date: Date): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}

/**
 * What is wrong with `date`, the time `text` of `name` (a flag or a setting) resolved to, or
 * undefined: before 1970, not a time (a duration beyond the calendar), or after now (by `rule`).
 */
export function instantProblem(
  name: string,
  text: string,
  date: Date,
  now: Date,
  rule: FutureRule,
): string | undefined {
  const valid = Number.isFinite(date.getTime());
  // a time before now (P100Y, -30d) says which instant it came to
  const at = valid && !/^\d/.test(text.trim()) ? ` (${shown(date)})` : "";
  const given = `${name} ${text.trim()}${at}`;
  if (!valid || date.getTime() < EARLIEST.getTime()) {
    return `${given} is before ${EARLIEST_TEXT}, the earliest time energy-etl takes`;
  }
  const ahead = date.getTime() - now.getTime();
  if (rule === "not-after-now" && ahead > 0) {
    return `${given} is in the future: there is no data after now`;
  }
  if (rule === "a-day-ahead" && ahead > TO_AHEAD_MS) {
    return (
      `${given} is more than a day after now: there is no data after now (a ${name} up to a ` +
      "day ahead stops at now)"
    );
  }
  return undefined;
}

/** What is wrong with the range `from`..`to`: over {@link MAX_RANGE_YEARS} years without `yes`. */
export function rangeProblem(from: Date, to: Date, yes: boolean): string | undefined {
  if (yes || from.getTime() >= subtractDuration(to, MAX_RANGE).getTime()) return undefined;
  const years = (to.getTime() - from.getTime()) / (365.25 * 86_400_000);
  return (
    `--from ${shown(from)} to --to ${shown(to)} is ${years.toFixed(1)} years, more than ` +
    `${MAX_RANGE_YEARS}: give a shorter range, or add --yes to go ahead`
  );
}
