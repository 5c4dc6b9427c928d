/**
 * How many cases a property test tries: `n` in the suite, a tenth of it (at least 20) under
 * mutation testing (npm run mutate: jest.mutate.config.js sets ENERGY_ETL_MUTATION), where a test
 * runs once for every mutant it covers and a bug shows within the first cases or not at all.
 */
export function propertyRuns(n: number): number {
  return process.env.ENERGY_ETL_MUTATION === "1" ? Math.max(20, Math.round(n / 10)) : n;
}
