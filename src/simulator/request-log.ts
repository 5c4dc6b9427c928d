/** The simulator's request log: every request answered (or dropped), oldest first, bounded. */
import type { Endpoint, LoggedRequest } from "./options.js";

/** A log of at most `max` requests; past it the oldest are dropped. */
export class RequestLog {
  /** The logged requests, oldest first (the simulator's `requests`). */
  readonly entries: LoggedRequest[] = [];

  constructor(private readonly max: number) {}

  add(entry: LoggedRequest): void {
    this.entries.push(entry);
    if (this.entries.length > this.max) this.entries.splice(0, this.entries.length - this.max);
  }

  /** Requests for an endpoint (all endpoints when omitted), optionally with a status. */
  count(endpoint?: Endpoint, status?: number): number {
    return this.entries.filter(
      (r) =>
        (endpoint === undefined || r.endpoint === endpoint) &&
        (status === undefined || r.status === status),
    ).length;
  }

  /** Forgets every request. */
  reset(): void {
    this.entries.length = 0;
  }
}
