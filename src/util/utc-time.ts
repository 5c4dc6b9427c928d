const INSTANT_RE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$/i;

/**
 * An ISO 8601 date or date-time; without a zone it is UTC (`2025-06-01`, `2025-06-01T12:00`,
 * `2025-06-01T12:00:00+02:00`). Undefined when malformed or not a real calendar date.
 */
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

/** Whole seconds since the epoch of a Date (floored). */
export function epochSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}
