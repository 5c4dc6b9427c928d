/** ISO 8601 durations (`P30D`, `PT1H`, `P1Y2M`): years and months are calendar steps (UTC). */
export interface IsoDuration {
  readonly years: number;
  readonly months: number;
  readonly weeks: number;
  readonly days: number;
  readonly hours: number;
  readonly minutes: number;
  readonly seconds: number;
}

/** A duration of zero (`now` is no time before now); spread it for one of a few parts. */
export const NO_TIME: IsoDuration = Object.freeze({
  years: 0,
  months: 0,
  weeks: 0,
  days: 0,
  hours: 0,
  minutes: 0,
  seconds: 0,
});

const DURATION_RE =
  /^P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/;

/** Parses an ISO 8601 duration; returns undefined when `text` is not one (or is empty, like `P`). */
export function parseIsoDuration(text: string): IsoDuration | undefined {
  const upper = text.trim().toUpperCase();
  const m = DURATION_RE.exec(upper);
  if (!m || upper === "P" || upper.endsWith("T")) return undefined;
  const n = (i: number): number => Number(m[i] ?? 0);
  return {
    years: n(1),
    months: n(2),
    weeks: n(3),
    days: n(4),
    hours: n(5),
    minutes: n(6),
    seconds: n(7),
  };
}

/**
 * The instant `duration` before `from`: calendar years and months first (the day clamped to the
 * target month's length, so P1M before 31 March is 28/29 February), then the fixed units.
 */
export function subtractDuration(from: Date, duration: IsoDuration): Date {
  const d = new Date(from.getTime());
  if (duration.years || duration.months) {
    const day = d.getUTCDate();
    d.setUTCDate(1);
    d.setUTCMonth(d.getUTCMonth() - duration.months - 12 * duration.years);
    const monthLength = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();
    d.setUTCDate(Math.min(day, monthLength));
  }
  return new Date(d.getTime() - fixedDurationMs(duration));
}

/** The fixed-length part of a duration in milliseconds (weeks, days, hours, minutes, seconds). */
export function fixedDurationMs(duration: IsoDuration): number {
  return Math.round(
    ((((duration.weeks * 7 + duration.days) * 24 + duration.hours) * 60 + duration.minutes) * 60 +
      duration.seconds) *
      1000,
  );
}

/** `P7D`, `PT1H`, `PT0S` for zero. */
export function formatIsoDuration(d: IsoDuration): string {
  const date = `${d.years ? `${d.years}Y` : ""}${d.months ? `${d.months}M` : ""}${d.weeks ? `${d.weeks}W` : ""}${d.days ? `${d.days}D` : ""}`;
  const time = `${d.hours ? `${d.hours}H` : ""}${d.minutes ? `${d.minutes}M` : ""}${d.seconds ? `${d.seconds}S` : ""}`;
  if (date === "" && time === "") return "PT0S";
  return `P${date}${time ? `T${time}` : ""}`;
}

/** A duration in milliseconds for limits and caps: a month counts 30 days, a year 365. */
export function durationMs(duration: IsoDuration): number {
  const calendarDays = duration.years * 365 + duration.months * 30;
  return fixedDurationMs(duration) + calendarDays * 86_400_000;
}
