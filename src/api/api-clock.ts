/**
 * Now as the API sees it, from every answer's `Date` header (noted by the transport): a run that
 * plans with it never reads or reports the future when the local clock runs ahead.
 */
export class ApiClock {
  /** The API's clock at its latest answer, and the local clock then (epoch ms). */
  private latest: { serverMs: number; localMs: number } | undefined;

  constructor(private readonly local: () => Date = () => new Date()) {}

  /** Notes the API's clock (epoch ms of an answer's `Date` header). */
  observe(serverMs: number): void {
    this.latest = { serverMs, localMs: this.local().getTime() };
  }

  /**
   * The local clock, or the API's clock when that is behind (its latest `Date` plus the local time
   * passed since); a local clock that went back since the last answer makes it no measure.
   */
  now(): Date {
    const local = this.local();
    const latest = this.latest;
    if (latest === undefined) return local;
    if (local.getTime() < latest.localMs) {
      this.latest = undefined;
      return local;
    }
    const server = latest.serverMs + Math.max(0, local.getTime() - latest.localMs);
    return server < local.getTime() ? new Date(server) : local;
  }
}

/** The epoch ms of an HTTP `Date` header, or undefined when absent or unreadable. */
export function parseDateHeader(header: unknown): number | undefined {
  if (typeof header !== "string") return undefined;
  const ms = Date.parse(header);
  return Number.isNaN(ms) ? undefined : ms;
}

/** The earliest `Date` an API's answer may carry: one before it is a clock not set. */
export const EARLIEST_API_TIME_MS = Date.UTC(2000, 0, 1);

/** Why an answer's `Date` header cannot be the API's clock (before 2000-01-01), if so. */
export function implausibleDate(header: unknown): string | undefined {
  const ms = parseDateHeader(header);
  if (ms === undefined || ms >= EARLIEST_API_TIME_MS) return undefined;
  return (
    `the API's Date header says ${JSON.stringify(header)}, before 2000-01-01: its clock is not ` +
    "set, and no window can be planned by it (set the API server's clock; nothing was fetched)"
  );
}
