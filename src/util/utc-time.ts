import { type IsoDuration, NO_TIME, parseIsoDuration } from "./iso-duration.js";

const INSTANT_RE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$/i;

/** Seconds in a UTC day (no leap seconds: Unix time). */
export const DAY_S = 86_400;

/** An ISO 8601 date or date-time (UTC without a zone); undefined: malformed or not a real date. */
export function parseUtcInstant(text: string): Date | undefined {
  const m = INSTANT_RE.exec(text.trim());
  if (!m) return undefined;
  const [, y, mo, d, h = "00", mi = "00", s = "00", frac = "", zone = "Z"] = m;
  const normalized = `${y}-${mo}-${d}T${h}:${mi}:${s}${frac}${zone.toUpperCase()}`;
  const date = new Date(normalized);
  if (Number.isNaN(date.getTime())) return undefined;
  const local = new Date(`${y}-${mo}-${d}T00:00:00Z`);
  const dayOk = local.toISOString().slice(0, 10) === `${y}-${mo}-${d}`;
  return dayOk && Number(h) < 24 && Number(mi) < 60 && Number(s) < 60 ? date : undefined;
}

export function epochSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}

/** A time as `--from`, `--to` and SYNC_START take it: an instant, or a duration before now. */
export type TimeSpec =
  | { readonly kind: "at"; readonly at: Date }
  | { readonly kind: "ago"; readonly duration: IsoDuration };

export const TIME_SPEC_FORMS =
  'an ISO date or date-time (UTC), "now", or a time before now (P30D, PT6H, -30d, -12h)';

/** `-30d`, `-12h`, `-90m`: a shorthand for P30D, PT12H, PT90M before now. */
const SHORT_AGO = /^-(\d+)([dhm])$/i;

/** The one grammar of times: an ISO date(-time), UTC unless zoned; `now`; or a time before now. */
export function parseTimeSpec(text: string): TimeSpec | undefined {
  const trimmed = text.trim();
  if (trimmed.toLowerCase() === "now") return { kind: "ago", duration: NO_TIME };
  const short = SHORT_AGO.exec(trimmed);
  const iso = short
    ? `P${short[2]?.toLowerCase() === "d" ? "" : "T"}${short[1]}${short[2]?.toUpperCase()}`
    : trimmed.toUpperCase();
  const duration = iso.startsWith("P") ? parseIsoDuration(iso) : undefined;
  if (duration) return { kind: "ago", duration };
  const at = parseUtcInstant(trimmed);
  return at ? { kind: "at", at } : undefined;
}

/** Epoch seconds as an ISO string (`2026-06-15T12:00:00.000Z`), for logs and messages. */
export function isoSeconds(s: number): string {
  return new Date(s * 1000).toISOString();
}
