import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "@jest/globals";
import {
  BURST_COUNT,
  limitHeapGrowth,
  MAX_GROWTH_PERCENT,
  OLD_SPACE_GROWTH_PERCENT,
  OldGenerationGrowth,
  RAISED_MS,
  YoungGenerationCap,
} from "../../src/util/heap-growth.js";

const MODULE = pathToFileURL(resolve("dist/util/heap-growth.js")).href;

/**
 * A child node (with `nodeOptions` as NODE_OPTIONS) that calls limitHeapGrowth from the build with a 4 MB
 * semi-space, then allocates objects of which a third survive a while (as a tick's requests do),
 * in slices between which the event loop turns (as it does between answers' pieces), and reports
 * V8's new space after.
 */
function newSpaceAfterWork(nodeOptions: string): { young: boolean; newSpaceMb: number } {
  const script = `
    import v8 from "node:v8";
    import { limitHeapGrowth } from ${JSON.stringify(MODULE)};
    const { young } = limitHeapGrowth(undefined, undefined, { semiSpaceMb: 4 });
    let kept = [];
    for (let i = 0; i < 3e6; i++) {
      const o = { a: i, b: [i, i + 1], s: "x" + i };
      if (i % 3 === 0) kept.push(o);
      if (kept.length > 200000) kept = [];
      if (i % 10000 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    const space = v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space");
    console.log(JSON.stringify({ young, newSpaceMb: space.space_size / 2 ** 20 }));
  `;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], {
    env: { ...process.env, NODE_OPTIONS: nodeOptions },
    encoding: "utf8",
  });
  return JSON.parse(out) as { young: boolean; newSpaceMb: number };
}

describe("limitHeapGrowth", () => {
  it("stops V8's new space at twice the semi-space asked for", () => {
    expect(newSpaceAfterWork("")).toEqual({ young: true, newSpaceMb: 8 });
  });

  it("leaves a young generation sized at start alone (the same work grows it past the cap)", () => {
    const sized = newSpaceAfterWork("--max_semi_space_size=16");
    expect(sized.young).toBe(false);
    expect(sized.newSpaceMb).toBeGreaterThan(8);
  });

  it("sets the old generation's growth unless a node flag at start did", () => {
    const set: string[] = [];
    const growing = limitHeapGrowth(["--max-semi-space-size=16"], (f) => set.push(f));
    growing.stop();
    expect(growing).toMatchObject({ young: false, old: true });
    expect(set).toEqual([`--heap-growing-percent=${OLD_SPACE_GROWTH_PERCENT}`]);
    const kept: string[] = [];
    const given = ["--heap-growing-percent=30", "--max-heap-size=200"];
    const sized = limitHeapGrowth(given, (f) => kept.push(f));
    sized.stop();
    expect(sized).toMatchObject({ young: false, old: false });
    expect(kept).toEqual([]);
  });

  it("raises the growth factor again when V8 shrank an idle new space, and gives up past the cap", () => {
    const MB = 2 ** 20;
    const set: string[] = [];
    const cap = new YoungGenerationCap(16 * MB, (f) => set.push(f));
    expect(cap.observe(2 * MB)).toBe(true);
    expect(cap.observe(16 * MB)).toBe(true);
    expect(cap.observe(16 * MB)).toBe(true);
    // the memory reducer shrank it back to V8's first size: grown to the cap again in one step
    expect(cap.observe(2 * MB)).toBe(true);
    expect(cap.observe(4 * MB)).toBe(true);
    expect(cap.observe(16 * MB)).toBe(true);
    // past the cap: this V8 did not take a factor of 1; its own is restored
    expect(cap.observe(32 * MB)).toBe(false);
    expect(set.map((f) => f.replace("--semi-space-growth-factor=", ""))).toEqual([
      "8",
      "1",
      "8",
      "4",
      "1",
      "2",
    ]);
  });

  it("raises the old generation's growth after a burst of mark-compacts (a child's own)", () => {
    // four full collections one after the other, in a window of an hour: a burst however slow
    const script = `
      import { limitHeapGrowth } from ${JSON.stringify(MODULE)};
      import { constants, PerformanceObserver } from "node:perf_hooks";
      import v8 from "node:v8";
      const set = [];
      limitHeapGrowth([], (f) => { set.push(f); v8.setFlagsFromString(f); }, { burstMs: 3_600_000 });
      let majors = 0;
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++;
      }).observe({ entryTypes: ["gc"] });
      const turn = () => new Promise((resolve) => setImmediate(resolve));
      // event-loop turns, not time: the observers are told after a turn or two
      for (let i = 1; i <= ${BURST_COUNT}; i++) {
        globalThis.gc();
        for (let t = 0; t < 10_000 && majors < i; t++) await turn();
      }
      const growth = () => set.filter((f) => f.startsWith("--heap-growing-percent"));
      for (let t = 0; t < 10_000 && growth().length < 2; t++) await turn();
      console.log(JSON.stringify(growth()));
    `;
    const out = execFileSync(
      process.execPath,
      ["--expose-gc", "--input-type=module", "-e", script],
      {
        env: { ...process.env, NODE_OPTIONS: "" },
        encoding: "utf8",
        // a hang (no gc entries) fails here rather than blocking the worker
        timeout: 60_000,
      },
    );
    // a child's live heap is a few MB: the floor is more than MAX_GROWTH_PERCENT away
    expect(JSON.parse(out)).toEqual([
      `--heap-growing-percent=${OLD_SPACE_GROWTH_PERCENT}`,
      `--heap-growing-percent=${MAX_GROWTH_PERCENT}`,
    ]);
  });
});

describe("OldGenerationGrowth", () => {
  const MB = 2 ** 20;
  const percents = (set: string[]): number[] =>
    set.map((f) => Number(f.replace("--heap-growing-percent=", "")));

  it("grows by OLD_SPACE_GROWTH_PERCENT while fewer than BURST_COUNT come within BURST_MS", () => {
    const set: string[] = [];
    const growth = new OldGenerationGrowth(48 * MB, (f) => set.push(f));
    for (let i = 0; i < 10; i++) growth.observe(i * 400, 14 * MB);
    expect(percents(set)).toEqual([OLD_SPACE_GROWTH_PERCENT]);
  });

  it("reaches the floor after a burst, for RAISED_MS, then grows as before", () => {
    const set: string[] = [];
    const growth = new OldGenerationGrowth(48 * MB, (f) => set.push(f));
    growth.observe(0, 12 * MB);
    growth.observe(100, 12 * MB);
    growth.observe(200, 12 * MB);
    growth.observe(300, 12 * MB); // the fourth within a second: 48 MB is 300 % above 12
    growth.observe(5_000, 16 * MB); // 200 % above 16
    growth.observe(RAISED_MS + 299, 20 * MB); // still raised: 140 %
    growth.observe(RAISED_MS + 300, 20 * MB);
    expect(percents(set)).toEqual([
      OLD_SPACE_GROWTH_PERCENT,
      300,
      200,
      140,
      OLD_SPACE_GROWTH_PERCENT,
    ]);
  });

  it("never grows by less than OLD_SPACE_GROWTH_PERCENT nor by more than MAX_GROWTH_PERCENT", () => {
    const set: string[] = [];
    const growth = new OldGenerationGrowth(48 * MB, (f) => set.push(f));
    for (const t of [0, 10, 20, 30]) growth.observe(t, 40 * MB); // the floor is below 2 x 40
    growth.observe(40, 2 * MB);
    expect(percents(set)).toEqual([OLD_SPACE_GROWTH_PERCENT, MAX_GROWTH_PERCENT]);
  });
});
