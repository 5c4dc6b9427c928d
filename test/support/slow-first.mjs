/**
 * jest's order of test files, with the files that take minutes first. jest starts the longest
 * files first only when its cache knows their times; a clean clone (CI) has none, so it orders by
 * file size, and a short file that runs for minutes (rollups-exact-ids) started last and ran alone
 * at the end of the run. These start first, in this order; the rest keep jest's own.
 */
import TestSequencer from "@jest/test-sequencer";

/** Test files (below test/, without `.test.ts`) that take half a minute or more on 2 cores, longest first. */
export const SLOW_FILES = [
  "reliability/thirty-days",
  "cli/closed-stdout-api",
  "rollups/rollups-exact-ids",
  "rollups/rollups-exact",
  "cli/closed-stdout",
  "reliability/secrets",
  "deploy/dashboards",
  "service/fleet-ticks",
  "cli/demo",
  "pipeline/crash-resume",
  "reliability/crash-loop",
];

const Base = TestSequencer.default ?? TestSequencer;

export default class SlowFirst extends Base {
  async sort(tests) {
    const sorted = await super.sort(tests);
    const rank = (test) => {
      const at = SLOW_FILES.findIndex((name) => test.path.endsWith(`/test/${name}.test.ts`));
      return at === -1 ? SLOW_FILES.length : at;
    };
    return [...sorted].sort((a, b) => rank(a) - rank(b));
  }
}
