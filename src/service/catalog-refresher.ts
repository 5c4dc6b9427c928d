import type { ServiceFailures } from "./failures.js";

/** What {@link CatalogRefresher} works with. */
export interface CatalogRefresherParts {
  readonly failures: Pick<ServiceFailures, "settled">;
  /** True once the pipeline stops: no new catalog run is started. */
  readonly isStopping: () => boolean;
  /** One catalog run: reads again the catalogs that are due (CATALOG_REFRESH). */
  readonly refresh: () => Promise<unknown>;
  /** What follows each catalog run once it settled (history jobs of values that appeared). */
  readonly afterRefresh: () => void;
}

/**
 * The catalog refresh between ticks: a tick's sync takes the stored catalogs; this reads again
 * those last read CATALOG_REFRESH ago or more, as one recorded catalog run whose requests queue
 * behind data requests, one run at a time.
 */
export class CatalogRefresher {
  private cataloging: Promise<void> | undefined;

  constructor(private readonly parts: CatalogRefresherParts) {}

  /** The catalog run under way, if any; it settles, never rejects. */
  get current(): Promise<void> | undefined {
    return this.cataloging;
  }

  /** Starts a catalog run unless one is under way or the pipeline stops. */
  refresh(): void {
    const { failures, isStopping, refresh, afterRefresh } = this.parts;
    if (this.cataloging || isStopping()) return;
    this.cataloging = failures.settled(refresh(), "catalog refresh failed", () => {
      this.cataloging = undefined;
      afterRefresh();
    });
  }
}
