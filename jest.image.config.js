/**
 * `npm run test:image`: the container image built with podman and run (test/image/). Needs root;
 * installs podman and debootstrap with apt-get when missing. Not part of `npm test`.
 */
import base from "./jest.config.js";

/** @type {import('jest').Config} */
export default {
  ...base,
  testPathIgnorePatterns: ["/node_modules/"],
  roots: ["<rootDir>/test/image"],
  // building the image takes minutes; a step inside a test has its own bound
  testTimeout: 300000,
};
