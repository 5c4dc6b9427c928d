import { SingleBar } from "cli-progress";
import type { Logger } from "pino";
import type { ChunkResult } from "../pipeline/fetch-chunk.js";

/** Interval of progress log lines when stderr is not a terminal. */
const LOG_EVERY_MS = 10_000;

/**
 * Progress of a backfill: a bar on a terminal (chunks, points, requests, rate, ETA), progress log
 * lines every 10 s otherwise. Counts what the chunks it is told about did.
 */
export class BackfillProgressReporter {
  private readonly bar: SingleBar | undefined;
  private readonly startedMs = Date.now();
  private done = 0;
  private points = 0;
  private requests = 0;
  private lastLogMs = Date.now();

  constructor(
    private readonly total: number,
    alreadyDone: number,
    private readonly logger: Logger,
    stderr: NodeJS.WritableStream & { isTTY?: boolean },
  ) {
    this.done = alreadyDone;
    if (stderr.isTTY) {
      this.bar = new SingleBar({
        stream: stderr,
        format:
          "backfill {bar} {percentage}% | chunks {value}/{total} | {points} points | {requests} requests | {rate} req/s | ETA {eta_formatted}",
        hideCursor: true,
        etaBuffer: 50,
      });
      this.bar.start(total, alreadyDone, this.payload());
    }
  }

  chunkDone(result: ChunkResult): void {
    this.done++;
    this.points += result.points;
    this.requests += result.requests;
    if (this.bar) {
      this.bar.update(this.done, this.payload());
      return;
    }
    const now = Date.now();
    if (now - this.lastLogMs >= LOG_EVERY_MS || this.done === this.total) {
      this.lastLogMs = now;
      this.logger.info({ progress: this.snapshot() }, "backfill progress");
    }
  }

  stop(): void {
    this.bar?.stop();
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

  private payload() {
    const s = this.snapshot();
    return { points: s.points, requests: s.requests, rate: s.requestsPerSecond };
  }
}

/** Progress of work in steps: a bar on a terminal, a log line every 10 s otherwise. */
export class StepProgress {
  private bar: SingleBar | undefined;
  private total = 0;
  private done = 0;
  private lastLogMs = Date.now();

  constructor(
    private readonly label: string,
    private readonly unit: string,
    private readonly logger: Logger,
    private readonly stderr: NodeJS.WritableStream & { isTTY?: boolean },
  ) {}

  start(total: number): void {
    this.total = total;
    if (this.stderr.isTTY && total > 0) {
      this.bar = new SingleBar({
        stream: this.stderr,
        format: `${this.label} {bar} {percentage}% | {value}/{total} ${this.unit} | ETA {eta_formatted}`,
        hideCursor: true,
      });
      this.bar.start(total, 0);
    }
  }

  step(): void {
    this.done++;
    if (this.bar) {
      this.bar.update(this.done);
      return;
    }
    const now = Date.now();
    if (now - this.lastLogMs >= LOG_EVERY_MS || this.done === this.total) {
      this.lastLogMs = now;
      this.logger.info({ done: this.done, total: this.total }, `${this.label} progress`);
    }
  }

  stop(): void {
    this.bar?.stop();
  }
}
