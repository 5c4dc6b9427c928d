import type { Logger } from "pino";
import { type MemoryBudgetError, watchMemory } from "../pipeline/memory-budget.js";

/** What {@link MemoryWatch} works with. */
export interface MemoryWatchParts {
  /** MEMORY_BUDGET_MB. */
  readonly budgetMb: number;
  readonly log: Logger;
  /** The process stayed over the budget: the service cannot go on. */
  readonly onOver: (error: MemoryBudgetError) => void;
}

/**
 * The service's watch on its resident memory against MEMORY_BUDGET_MB (the rule:
 * pipeline/memory-budget.ts), from {@link start} to {@link stop}.
 */
export class MemoryWatch {
  private unwatch: () => void = () => undefined;

  constructor(private readonly parts: MemoryWatchParts) {}

  start(): void {
    const { budgetMb, log, onOver } = this.parts;
    this.unwatch = watchMemory({ budgetMb, logger: log, onOver });
  }

  stop(): void {
    this.unwatch();
  }
}
