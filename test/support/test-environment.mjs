/**
 * Jest's node environment with a temp dir of its own per test file: while the file runs, TMPDIR
 * points into it (os.tmpdir() of the tests, and of the processes they spawn with this
 * environment), and once the file is done the dir is removed. The dirs the file made with
 * tempDir() (test/support/temp-dir.ts) go quietly; anything else still there fails the file,
 * naming it: each test removes what it creates, and a run leaves nothing in the OS temp dir.
 *
 * Plain JavaScript with no local imports: jest loads this file outside the tests' module system,
 * and so does Stryker's jest runner (npm run mutate), which requires it without a TS transform.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { TestEnvironment as NodeEnvironment } from "jest-environment-node";

/** The global through which tempDir() registers its dirs (see test/support/temp-dir.ts). */
const REGISTER = "__registerTempDir";

export default class TempDirEnvironment extends NodeEnvironment {
  outerTmpdir = process.env.TMPDIR;
  /** @type {Set<string>} the dirs tempDir() made */
  registered = new Set();
  tornDown = false;

  /** @param {ConstructorParameters<typeof NodeEnvironment>} args */
  constructor(...args) {
    super(...args);
    this.testPath = relative(process.cwd(), args[1].testPath);
    this.dir = mkdtempSync(join(tmpdir(), "energy-etl-test-"));
  }

  async setup() {
    await super.setup();
    process.env.TMPDIR = this.dir;
    this.global.process.env.TMPDIR = this.dir;
    /** @param {string} path */
    this.global[REGISTER] = (path) => {
      this.registered.add(path);
    };
  }

  /** Removes the file's temp dir; fails when something not made with tempDir() was left in it. */
  async teardown() {
    // jest calls teardown again after one that failed
    if (this.tornDown) return;
    this.tornDown = true;
    if (this.outerTmpdir === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = this.outerTmpdir;
    const left = readdirSync(this.dir).filter((name) => !this.registered.has(join(this.dir, name)));
    for (const path of [...this.registered, this.dir]) {
      rmSync(path, { recursive: true, force: true, maxRetries: 3 });
    }
    await super.teardown();
    if (left.length > 0) {
      throw new Error(
        `${this.testPath} left ${left.length} entries in the temp dir: ${left.join(", ")}. ` +
          "Remove what a test creates (afterEach/afterAll), or make the dir with tempDir() " +
          "(test/support/temp-dir.ts). They are removed now.",
      );
    }
  }
}
