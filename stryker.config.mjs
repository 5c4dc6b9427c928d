import { readFileSync } from "node:fs";

/**
 * Mutation testing of the core (npm run mutate; docs/development.md, "Mutation testing").
 * Stryker 9: Stryker 10 needs Node 22, and the project supports Node 20.
 */
const scope = JSON.parse(readFileSync(new URL("./tsconfig.mutate.json", import.meta.url), "utf8"));

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
  // static mutants too (the unit and type tables): jest loads the modules afresh on every run
  ignoreStatic: false,
  // Stryker gives half to TypeScript checkers: 2 checkers and 2 jest runners on 2 cores
  concurrency: 4,
  // a mutant whose tests take 1.5 x their time + 15 s is a Timeout (counted as detected). With
  // Stryker's 5 s, mutants that only ran slower on a loaded 2-core machine (a static mutant runs
  // every related test; a failing diff of a large batch is slow) were counted as timeouts
  timeoutMS: 15000,
  // the scope: the files tsconfig.mutate.json type-checks (one list for both)
  mutate: scope.include,
  ignorePatterns: [".stryker-tmp", "dist", "build-bench", "coverage", "data", "reports", "*.log"],
  tempDirName: ".stryker-tmp",
  incrementalFile: "reports/stryker-incremental.json",
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: "reports/mutation/index.html" },
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  thresholds: { high: 90, low: 85, break: 85 },
};
