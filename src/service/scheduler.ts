import cron, { type ScheduledTask } from "node-cron";

/** Outcome of a health check: "ok" or the reason it failed. */
export type CheckOutcome = "ok" | string;

/**
 * The SYNC_CRON schedule (node-cron): calls `tick` on every match; says whether it still ticks.
 */
export class Scheduler {
  private task: ScheduledTask | undefined;

  constructor(
    private readonly expression: string,
    private readonly tick: () => void,
  ) {}

  start(): void {
    this.task = cron.schedule(this.expression, () => this.tick(), { name: "sync" });
  }

  async stop(): Promise<void> {
    await this.task?.stop();
    this.task = undefined;
  }

  /** "ok" while it ticks on time, or why not. */
  state(nowMs: number): CheckOutcome {
    const task = this.task;
    if (!task) return "not running";
    const status = task.getStatus();
    if (status === "stopped" || status === "destroyed") return `scheduler ${status}`;
    const next = task.getNextRun();
    if (next && next.getTime() < nowMs - 60_000) return "scheduler missed its ticks";
    return "ok";
  }
}
