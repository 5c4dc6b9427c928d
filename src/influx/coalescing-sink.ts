import type { LineBatch } from "../transform/line-protocol.js";
import { linesOf } from "../transform/line-protocol.js";
import {
  type PointSink,
  type RejectedLine,
  storedOf,
  type WriteOptions,
  type WriteOutcome,
} from "./point-sink.js";

/** A write waiting to go out with others. */
interface Waiting {
  readonly batch: LineBatch;
  resolve(outcome: WriteOutcome): void;
  reject(error: unknown): void;
}

/** How long a write that does not fill a batch waits for others to join it (ms). */
export const COALESCE_MS = 20;

const NEWLINE = Buffer.from("\n");

/**
 * Writes that arrive close together go out as one request (a request per steady tick's chunk cost
 * more than its lines): once they fill a batch or {@link COALESCE_MS} after the first came, each
 * resolving with its own outcome. Full batches go at once, alone.
 */
export class CoalescingSink implements PointSink {
  readonly target: string;
  private waiting: Waiting[] = [];
  private waitingLines = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly sent = new Set<Promise<unknown>>();

  constructor(
    private readonly sink: PointSink,
    private readonly batchLines: number,
    private readonly lingerMs = COALESCE_MS,
  ) {
    this.target = sink.target;
  }

  write(batch: LineBatch, options: WriteOptions = {}): Promise<WriteOutcome> {
    if (batch.lines >= this.batchLines) return this.sink.write(batch);
    return new Promise<WriteOutcome>((resolve, reject) => {
      this.waiting.push({ batch, resolve, reject });
      this.waitingLines += batch.lines;
      if (options.now || this.waitingLines >= this.batchLines) this.send();
      else this.timer ??= setTimeout(() => this.send(), this.lingerMs);
    });
  }

  /** Sends what waits, then waits for every write (the commit point). */
  async flush(): Promise<void> {
    this.send();
    await Promise.allSettled([...this.sent]);
    await this.sink.flush();
  }

  async close(): Promise<void> {
    await this.flush();
    await this.sink.close();
  }

  abort(reason?: string): void {
    this.sink.abort?.(reason);
    this.send();
  }

  check(signal?: AbortSignal): Promise<void> {
    return this.sink.check?.(signal) ?? Promise.resolve();
  }

  private send(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const group = this.waiting;
    if (group.length === 0) return;
    this.waiting = [];
    this.waitingLines = 0;
    const batch = joined(group.map((w) => w.batch));
    const done = this.sink.write(batch).then(
      (outcome) => {
        for (const w of group) w.resolve(shareOf(outcome, w.batch, group.length));
      },
      (error: unknown) => {
        for (const w of group) w.reject(error);
      },
    );
    this.sent.add(done);
    void done.finally(() => this.sent.delete(done));
  }
}

function joined(batches: readonly LineBatch[]): LineBatch {
  const [only] = batches;
  if (batches.length === 1 && only) return only;
  const parts: Buffer[] = [];
  let lines = 0;
  for (const batch of batches) {
    if (batch.lines === 0) continue;
    if (parts.length > 0) parts.push(NEWLINE);
    parts.push(batch.bytes);
    lines += batch.lines;
  }
  return { bytes: Buffer.concat(parts), lines };
}

/** One write's part of a joined write's outcome: its lines, less those of them refused. */
function shareOf(outcome: WriteOutcome, batch: LineBatch, writes: number): WriteOutcome {
  if (outcome.rejected.length === 0 || writes === 1) {
    return writes === 1 ? outcome : { written: batch.lines, rejected: [] };
  }
  const own = new Set(linesOf(batch));
  const rejected: RejectedLine[] = outcome.rejected.filter((r) => own.has(r.line));
  return { written: storedOf(batch.lines, rejected), rejected };
}
