/** MEMORY_BUDGET_MB's rule (src/pipeline/memory-budget.ts), reading by reading. */
import type { Logger } from "pino";
import { MemoryBudget, MemoryBudgetError, watchMemory } from "../../src/pipeline/memory-budget.js";

describe("MemoryBudget", () => {
  it("warns at the first reading over the budget, ends only after three in a row", () => {
    const budget = new MemoryBudget(256, 3, 5);
    const verdicts = [100, 300, 300, 120, 300, 280, 290].map((mb) => budget.check(mb));
    expect(verdicts.slice(0, 6)).toEqual(["ok", "first-over", "over", "ok", "first-over", "over"]);
    const last = verdicts[6];
    expect(last).toBeInstanceOf(MemoryBudgetError);
    expect(last instanceof Error && last.message).toBe(
      "energy-etl used 290 MB of memory for 15 s, over MEMORY_BUDGET_MB=256: raise " +
        "MEMORY_BUDGET_MB (and the container's limit with it), or share the fleet among " +
        "processes (SHARD_COUNT); see docs/operations.md#memory",
    );
  });

  it("a reading at the budget is within it", () => {
    const budget = new MemoryBudget(256, 1, 5);
    expect(budget.check(256)).toBe("ok");
    expect(budget.check(256.5)).toBeInstanceOf(MemoryBudgetError);
  });
});

describe("watchMemory", () => {
  it("ends the work once, with the error naming the setting, after the readings in a row", async () => {
    const readings = [100, 300, 300, 300, 300];
    const warnings: unknown[] = [];
    const logger = { warn: (...args: unknown[]) => warnings.push(args) } as unknown as Logger;
    const errors: MemoryBudgetError[] = [];
    await new Promise<void>((resolve) => {
      watchMemory({
        budgetMb: 256,
        logger,
        rssMb: () => readings.shift() ?? 300,
        intervalMs: 1,
        onOver: (error) => {
          errors.push(error);
          resolve();
        },
      });
    });
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toMatch(/^energy-etl used 300 MB of memory .* MEMORY_BUDGET_MB=256/);
    expect(warnings).toHaveLength(1);
    // the watch stopped itself: one reading after the error's and no more
    expect(readings).toEqual([300]);
  });
});
