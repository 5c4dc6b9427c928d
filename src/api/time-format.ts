/** Time formats of the API: query parameters (spec 4.4) and record timestamps (spec 2.4), all UTC. */

const pad = (n: number, width = 2): string => String(n).padStart(width, "0");

/** `YYYYMMDDTHHMMSS` in UTC, the shape of the `from`/`to` query parameters (spec 4.4). */
export function formatQueryTime(date: Date): string {
  return (
    `${date.getUTCFullYear()}${pad(date.getUTCMonth() + 1)}${pad(date.getUTCDate())}` +
    `T${pad(date.getUTCHours())}${pad(date.getUTCMinutes())}${pad(date.getUTCSeconds())}`
  );
}

const QUERY_TIME_RE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})$/;

/** Parses `YYYYMMDDTHHMMSS` (UTC); undefined when malformed or not a real calendar time. */
export function parseQueryTime(text: string): Date | undefined {
  const m = QUERY_TIME_RE.exec(text);
  if (!m) return undefined;
  const [y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0] = m.slice(1).map(Number);
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  const roundTrips =
    date.getUTCFullYear() === y &&
    date.getUTCMonth() === mo - 1 &&
    date.getUTCDate() === d &&
    date.getUTCHours() === h &&
    date.getUTCMinutes() === mi &&
    date.getUTCSeconds() === s;
  return roundTrips ? date : undefined;
}
