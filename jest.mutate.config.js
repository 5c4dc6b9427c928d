import { fileURLToPath } from "node:url";
import base from "./jest.config.js";

/**
 * The tests Stryker runs against each mutant (npm run mutate, stryker.config.mjs): the unit tests
 * of the mutated core, none of which needs influxd, the simulator or the built CLI, so jest's
 * global setup (a throwaway influxd) is left out.
 */
// property tests try a tenth of their cases under mutation (test/support/property-runs.ts)
process.env.ENERGY_ETL_MUTATION = "1";

/** @type {import('jest').Config} */
export default {
  ...base,
  // src too, so that jest finds the tests related to a mutated file (Stryker asks per file)
  roots: ["<rootDir>/src", "<rootDir>/test"],
  testMatch: [
    "<rootDir>/test/transform/*.test.ts",
    "<rootDir>/test/pipeline/plan-chunks.test.ts",
    "<rootDir>/test/pipeline/cursor.test.ts",
    "<rootDir>/test/rollups/counter-rule.test.ts",
    "<rootDir>/test/rollups/lane.test.ts",
    "<rootDir>/test/rollups/bases.test.ts",
    "<rootDir>/test/influx/partial-count.test.ts",
    "<rootDir>/test/influx/narrow-refused.test.ts",
    "<rootDir>/test/influx/write-errors*.test.ts",
    "<rootDir>/test/api/limits.test.ts",
    "<rootDir>/test/api/rate-gate*.test.ts",
    // api-deadline.test.ts is left out: 14 s of real-time drips per run; retry/ has unit tests
    "<rootDir>/test/api/api-deadline-abort.test.ts",
    "<rootDir>/test/api/api-deadline-retry-after.test.ts",
    "<rootDir>/test/retry/*.test.ts",
    "<rootDir>/test/config/values.test.ts",
    "<rootDir>/test/config/bounds.test.ts",
  ],
  // an absolute path: Stryker's jest runner wraps the environment and does not expand <rootDir>
  testEnvironment: fileURLToPath(new URL("./test/support/test-environment.mjs", import.meta.url)),
  setupFiles: ["<rootDir>/test/support/mutation-setup.ts"],
  testSequencer: undefined,
  globalSetup: undefined,
  globalTeardown: undefined,
};
