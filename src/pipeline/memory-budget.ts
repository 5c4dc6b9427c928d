import type { Logger } from "pino";

/** energy-etl used more memory than MEMORY_BUDGET_MB allows, for longer than a moment. */
export class MemoryBudgetError extends Error {
  constructor(usedMb: number, budgetMb: number, seconds: number) {
    super(
      `energy-etl used ${Math.round(usedMb)} MB of memory for ${seconds} s, over ` +
        `MEMORY_BUDGET_MB=${budgetMb}: raise MEMORY_BUDGET_MB (and the container's limit with it), ` +
        "or share the fleet among processes (SHARD_COUNT); see docs/operations.md#memory",
    );
    this.name = "MemoryBudgetError";
  }
}

export interface MemoryWatch {
  readonly budgetMb: number;
  readonly logger: Logger;
  /** Called once, when the process stayed over the budget for three checks in a row. */
  readonly onOver: (error: MemoryBudgetError) => void;
  /** Resident set size now, in MB (default: the process's own). */
  readonly rssMb?: () => number;
  /** Between two checks (default 5 s). */
  readonly intervalMs?: number;
}

/** Over MEMORY_BUDGET_MB three checks in a row ends the work with an error naming the setting. */
export function watchMemory(watch: MemoryWatch): () => void {
  const rssMb = watch.rssMb ?? (() => process.memoryUsage.rss() / 2 ** 20);
  const intervalMs = watch.intervalMs ?? 5000;
  const budget = new MemoryBudget(watch.budgetMb, 3, intervalMs / 1000);
  const timer = setInterval(() => {
    const used = rssMb();
    const verdict = budget.check(used);
    if (verdict === "first-over") {
      watch.logger.warn(
        { rssMb: Math.round(used), budgetMb: watch.budgetMb },
        "memory over MEMORY_BUDGET_MB",
      );
    } else if (verdict instanceof MemoryBudgetError) {
      clearInterval(timer);
      watch.onOver(verdict);
    }
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** The rule of {@link watchMemory}, one reading at a time. */
export class MemoryBudget {
  private over = 0;

  constructor(
    private readonly budgetMb: number,
    private readonly samples: number,
    private readonly intervalS: number,
  ) {}

  /** One reading: `ok`, `first-over` (warn), `over`, or the error after `samples` in a row. */
  check(usedMb: number): "ok" | "first-over" | "over" | MemoryBudgetError {
    if (usedMb <= this.budgetMb) {
      this.over = 0;
      return "ok";
    }
    this.over++;
    if (this.over >= this.samples) {
      return new MemoryBudgetError(usedMb, this.budgetMb, this.samples * this.intervalS);
    }
    return this.over === 1 ? "first-over" : "over";
  }
}
