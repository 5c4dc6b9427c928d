import { availableParallelism } from "node:os";

/** @type {import('jest').Config} */
export default {
  preset: "ts-jest/presets/default-esm",
  // a temp dir per test file, removed after it; a file that leaves something in it fails
  testEnvironment: "<rootDir>/test/support/test-environment.mjs",
  roots: ["<rootDir>/test"],
  testMatch: ["**/*.test.ts"],
  // the container image test has its own command (npm run test:image, jest.image.config.js)
  testPathIgnorePatterns: ["/node_modules/", "<rootDir>/test/image/"],
  transform: { "^.+\\.tsx?$": ["ts-jest", { useESM: true }] },
  moduleNameMapper: { "^(\\.{1,2}/.*)\\.js$": "$1" },
  testTimeout: 60000,
  // two files at once even on 2 cores (jest's default there is one): most test time waits on
  // child processes, influxd and sockets, and the suite takes 10 minutes instead of 17
  maxWorkers: Math.max(2, availableParallelism() - 1),
  // the files that take minutes start first, also on a clean clone (no timings in jest's cache)
  testSequencer: "<rootDir>/test/support/slow-first.mjs",
  // jest's cache stays in the checkout (ignored by git), not in the OS temp dir
  cacheDirectory: "<rootDir>/node_modules/.cache/jest",
  globalSetup: "<rootDir>/test/support/influxd.ts",
  globalTeardown: "<rootDir>/test/support/global-teardown.ts",
};
