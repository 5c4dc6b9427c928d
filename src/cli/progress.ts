import type { SingleBar } from "cli-progress";
import type { Logger } from "pino";
import type { BackfillRunParts, BackfillRunResult } from "../pipeline/backfill.js";
import type { ChunkResult } from "../pipeline/chunk-writer.js";
import type { BackfillJob } from "../state/types.js";
import type { Terminal } from "./terminal.js";

/** Interval of progress log lines when stderr is not a terminal. */
const LOG_EVERY_MS = 10_000;

/** Progress of work in steps: a bar on a terminal, a log line every 10 s otherwise. */
export class StepProgress {
  protected bar: SingleBar | undefined;
  protected total = 0;
  protected done = 0;
  private lastLogMs = Date.now();

  constructor(
    private readonly label: string,
    private readonly unit: string,
    private readonly logger: Logger,
    protected readonly terminal: Terminal,
  ) {}

  start(total: number): void {
    this.total = total;
    if (total > 0) {
      this.bar = this.terminal.bar(
        `${this.label} {bar} {percentage}% | {value}/{total} ${this.unit}`,
        total,
        0,
      );
    }
  }

  /** `count` steps done (default one); a step past the total raises the total (a request retried). */
  step(count = 1): void {
    this.done += count;
    if (this.done > this.total) {
      this.total = this.done;
      this.bar?.setTotal(this.total);
    }
    if (this.bar) {
      this.bar.update(this.done, this.payload());
      return;
    }
    const now = Date.now();
    if (now - this.lastLogMs >= LOG_EVERY_MS || this.done === this.total) {
      this.lastLogMs = now;
      this.logger.info(this.logged(), `${this.label} progress`);
    }
  }

  stop(): void {
    this.terminal.stopBars();
  }

  protected payload(): object {
    return {};
  }

  protected logged(): object {
    return { done: this.done, total: this.total };
  }
}

/** A backfill's chunks, with points, request rate and ETA on the bar and in the log lines. */
export class BackfillProgressReporter extends StepProgress {
  private readonly startedMs = Date.now();
  private points = 0;
  private requests = 0;

  constructor(total: number, alreadyDone: number, logger: Logger, terminal: Terminal) {
    super("backfill", "chunks", logger, terminal);
    this.total = total;
    this.done = alreadyDone;
    // rate and ETA first, and the whole line within 80 columns at its widest (1000.0 req/s,
    // ETA 23h59m, 99999/99999 chunks, 999.9M points)
    this.bar = terminal.bar(
      "backfill {rate} req/s | ETA {etaText} {bar} {percentage}% {value}/{total} | {points} pts",
      total,
      alreadyDone,
      this.payload(),
      { barsize: 14 },
    );
  }

  chunkDone(result: ChunkResult): void {
    this.points += result.points;
    this.requests += result.requests;
    this.step();
  }

  /** Where the backfill stands: chunks, points, requests, request rate and ETA in seconds. */
  snapshot() {
    const elapsedS = Math.max(0.001, (Date.now() - this.startedMs) / 1000);
    const rate = this.requests / elapsedS;
    const left = this.total - this.done;
    return {
      chunksDone: this.done,
      chunksTotal: this.total,
      points: this.points,
      requests: this.requests,
      requestsPerSecond: Number(rate.toFixed(2)),
      etaSeconds: rate > 0 ? Math.round(left / rate) : null,
    };
  }

  protected override payload() {
    const s = this.snapshot();
    // no ETA before a chunk of this run is done: it would be a guess (0 s at 0 %)
    const known = s.etaSeconds !== null && this.requests > 0;
    return {
      points: compactCount(s.points),
      rate: s.requestsPerSecond.toFixed(1),
      etaText: known ? formatSeconds(s.etaSeconds ?? 0) : "-",
    };
  }

  protected override logged() {
    return { progress: this.snapshot() };
  }
}

/** A count in at most 6 characters: `999`, `12.3k`, `4.56M`. */
function compactCount(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toPrecision(3)}k`;
  if (n < 1_000_000_000) return `${(n / 1_000_000).toPrecision(3)}M`;
  return `${(n / 1_000_000_000).toPrecision(3)}G`;
}

/** Runs `jobs` as one backfill run with a progress bar over all their chunks. */
export async function runBackfillWithProgress(
  parts: BackfillRunParts,
  jobs: readonly BackfillJob[],
  out: { readonly logger: Logger; readonly terminal: Terminal },
) {
  const total = jobs.reduce((n, j) => n + j.chunksTotal, 0);
  const already = jobs.reduce((n, j) => n + j.chunksDone, 0);
  // the backfill (p-queue, the rollups' queries) loads when one runs, not with this module
  const { runBackfillJobs } = await import("../pipeline/backfill.js");
  const progress = new BackfillProgressReporter(total, already, out.logger, out.terminal);
  let run: BackfillRunResult;
  try {
    run = await runBackfillJobs(parts, jobs, progress);
  } finally {
    progress.stop();
  }
  return { run, progress: progress.snapshot() };
}

/** 75 -> "1m15s", 3700 -> "1h01m". */
export function formatSeconds(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}
