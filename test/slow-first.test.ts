/**
 * jest's order (test/support/slow-first.mjs): every file it starts first is a test file that
 * exists, so a renamed or removed slow file cannot leave the list naming nothing.
 */
import { existsSync, readFileSync } from "node:fs";

const source = readFileSync("test/support/slow-first.mjs", "utf8");
const list = /SLOW_FILES = \[([^\]]*)\]/.exec(source)?.[1] ?? "";
const names = [...list.matchAll(/"([^"]+)"/g)].map((m) => m[1]);

describe("the files jest starts first", () => {
  it("are named in slow-first.mjs", () => {
    expect(names.length).toBeGreaterThanOrEqual(5);
  });

  it("each name a test file that exists, once", () => {
    const missing = names.filter((name) => !existsSync(`test/${name}.test.ts`));
    expect(missing).toEqual([]);
    expect(new Set(names).size).toBe(names.length);
  });
});
