import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A new directory in the OS temp dir, removed (with its content) once the test file is done, also
 * when a test failed: the test environment (test/support/test-environment.mjs) does it. Use it
 * anywhere: at the top of a file, in beforeAll, in a test.
 */
export function tempDir(prefix: string): string {
  const register = (globalThis as { __registerTempDir?: (path: string) => void }).__registerTempDir;
  if (register === undefined) {
    throw new Error("tempDir() needs jest's testEnvironment test/support/test-environment.mjs");
  }
  const dir = mkdtempSync(join(tmpdir(), prefix));
  register(dir);
  return dir;
}
