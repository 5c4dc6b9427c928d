import type { RejectedLine } from "../influx/point-sink.js";
import { scrubSecrets } from "../logger.js";
import type { DeadLetterStore } from "../state/dead-letter-store.js";
import type { DeadLetterKind } from "../state/types.js";
import { type LineBatch, linesOf } from "../transform/line-protocol.js";
import type { Chunk } from "./plan-chunks.js";

/** A device resource whose chunks are fetched. */
export interface ChunkTarget {
  readonly deviceId: string;
  readonly resourceId: string;
}

/** What the dead letters of a chunk are kept in. */
export interface DeadLetterParts {
  readonly deadLetters: Pick<DeadLetterStore, "add" | "lineLetters" | "remove">;
  readonly now: () => Date;
}

/** Stores a chunk's dead letters, and forgets the refused lines it writes after all. */
export class DeadLetterWriter {
  count = 0;
  added = 0;
  resolved = 0;
  firstError: string | undefined;

  constructor(
    private readonly parts: DeadLetterParts,
    private readonly target: ChunkTarget,
    private readonly chunk: Chunk,
  ) {}

  lines(rejected: readonly RejectedLine[]): void {
    for (const bad of rejected) this.add("line", bad.line, `HTTP ${bad.status}: ${bad.error}`);
  }

  /** The lines of `batch` that were stored: those kept as refused lines before are forgotten. */
  resolve(batch: LineBatch, rejected: readonly RejectedLine[]): void {
    const { deviceId, resourceId } = this.target;
    const letters = this.parts.deadLetters.lineLetters(deviceId, resourceId);
    if (letters.size === 0) return;
    const refused = new Set(rejected.map((r) => r.line));
    for (const line of linesOf(batch)) {
      const id = letters.get(line);
      if (id === undefined || refused.has(line)) continue;
      this.parts.deadLetters.remove(id);
      letters.delete(line);
      this.resolved++;
    }
  }

  add(
    kind: DeadLetterKind,
    payload: string,
    error: string,
    valueIds: readonly string[] = this.chunk.values,
  ): void {
    const message = scrubSecrets(error);
    const isNew = this.parts.deadLetters.add(
      {
        kind,
        ...this.target,
        windowFromS: this.chunk.fromS,
        windowToS: this.chunk.toS,
        valueIds,
        payload: scrubSecrets(payload),
        error: message,
      },
      this.parts.now(),
    );
    this.count++;
    if (isNew) this.added++;
    this.firstError ??= message;
  }
}
