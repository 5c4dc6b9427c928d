/**
 * Now as the API sees it, from every answer's `Date` header (noted by the transport): a run that
 * plans with it never reads or reports the future when the local clock runs ahead.
 */
export class ApiClock {
  /** The API's clock at its latest answer, and the local clock then (epoch ms). */
  private latest: { serverMs: number; localMs: number } | undefined;

  /** @param local the local clock (injected by tests) */
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
