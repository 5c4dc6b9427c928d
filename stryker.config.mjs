/**
 * Mutation testing of the core (npm run mutate; docs/development.md, "Mutation testing").
 * Stryker 9: Stryker 10 needs Node 22, and the project supports Node 20.
 */
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: "npm",
  testRunner: "jest",
  testRunnerNodeArgs: ["--experimental-vm-modules"],
  jest: { configFile: "jest.mutate.config.js", enableFindRelatedTests: true },
  checkers: ["typescript"],
  // the checker type-checks the mutated files and what they import, not all of src (faster)
  tsconfigFile: "tsconfig.mutate.json",
  coverageAnalysis: "perTest",
  ignoreStatic: true,
  // 2 test runners and 2 TypeScript checkers on 2 cores: the checkers wait most of the time
  concurrency: 4,
  timeoutMS: 2000,
  mutate: [
    "src/transform/json-array-scanner.ts",
    "src/transform/json-tokens.ts",
    "src/transform/record-scanner.ts",
    "src/transform/record-encoder.ts",
    "src/transform/line-protocol.ts",
    "src/transform/value-id.ts",
    "src/transform/units.ts",
    "src/pipeline/plan-chunks.ts",
    "src/pipeline/cursor.ts",
    "src/rollups/counter-rule.ts",
    "src/rollups/lane.ts",
    "src/rollups/bases.ts",
    "src/influx/narrow-refused.ts",
    "src/influx/write-errors.ts",
    "src/api/limits.ts",
    "src/api/rate-gate.ts",
    "src/retry/*.ts",
    "src/config/values.ts",
  ],
  ignorePatterns: [".stryker-tmp", "dist", "build-bench", "coverage", "data", "reports", "*.log"],
  tempDirName: ".stryker-tmp",
  incrementalFile: "reports/stryker-incremental.json",
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: "reports/mutation/index.html" },
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  thresholds: { high: 90, low: 85, break: 85 },
};
