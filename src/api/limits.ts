/**
 * Limits of the Energy Monitoring Data API (spec section 8). Their one owner on the client side is
 * the planner (pipeline/plan-chunks.ts): nothing re-checks them. The simulator enforces them.
 */

/** Spec 8: maximum number of value ids in the `values` parameter of GET /data. */
export const MAX_VALUES_PER_REQUEST = 20;

/** Spec 8: maximum interval between `from` and `to` of GET /data (7 days). */
export const MAX_WINDOW_MS = 7 * 24 * 3600 * 1000;

/** Spec 5.2: default validity of an access token (12 hours). */
export const DEFAULT_TOKEN_TTL_S = 43_200;

/** Spec 2.3: meta value that every record carries and that must not be requested. */
export const VALUES_ID = "values_id";

/**
 * Spec 4.4, `values`: ids separated by commas, no spaces. An id holding a comma or white space (or
 * none at all) cannot travel in that list (the API would cut it or refuse it): never requested.
 */
export function isRequestable(valueId: string): boolean {
  return valueId !== "" && !/[,\s]/u.test(valueId);
}
