import type { DeadLetterStore } from "../state/dead-letter-store.js";
import type { RollupStore } from "../state/rollup-store.js";
import type { NewDeadLetter } from "../state/types.js";
import { DAY_S } from "../util/utc-time.js";

/** Where a retry settles its dead letters. */
export interface LedgerParts {
  readonly deadLetters: Pick<DeadLetterStore, "add" | "forget" | "recordRetryFailure">;
  /** Where the ranges whose rollups are due are marked (absent: no rollups, a file sink). */
  readonly rollups?: Pick<RollupStore, "mark">;
  readonly transaction: (work: () => void) => void;
  readonly now: () => Date;
}

/** Times of one device resource whose rollups are due. */
interface Due {
  readonly deviceId: string;
  readonly resourceId: string;
  readonly times: number[];
}

/**
 * What a retry settles in SQLite, gathered over several writes and committed as one transaction
 * (a commit per write was most of a retry's time): the letters to forget, with the rollup marks
 * of what they stored, the ones refused again, and members set aside. Only what was stored is
 * entered, so a crash before {@link commit} forgets nothing: those letters are simply sent again.
 */
export class RetryLedger {
  /** Letters entered since the last commit. */
  size = 0;
  private forgotten: number[] = [];
  private refused: { readonly id: number; readonly error: string }[] = [];
  private kept: NewDeadLetter[] = [];
  private due = new Map<string, Due>();

  constructor(private readonly parts: LedgerParts) {}

  /** Letter `id` is settled: forgotten, and `times` of its device resource due for rollups. */
  forget(id: number, due?: { deviceId: string; resourceId: string; times: readonly number[] }) {
    this.forgotten.push(id);
    this.size++;
    if (due === undefined || this.parts.rollups === undefined) return;
    const key = JSON.stringify([due.deviceId, due.resourceId]);
    const entry = this.due.get(key) ?? { ...due, times: [] };
    this.due.set(key, entry);
    for (const atS of due.times) entry.times.push(atS);
  }

  /** Letter `id` is refused again: kept, counted, with its new error. */
  refuse(id: number, error: string): void {
    this.refused.push({ id, error });
    this.size++;
  }

  /** A new dead letter (a member of a written row, still invalid). */
  keep(letter: NewDeadLetter): void {
    this.kept.push(letter);
  }

  /** Writes down what was entered, as one transaction: marks first, then the letters. */
  commit(): void {
    if (this.size === 0 && this.kept.length === 0) return;
    const now = this.parts.now();
    const { deadLetters, rollups } = this.parts;
    this.parts.transaction(() => {
      for (const due of this.due.values()) markRuns(rollups, due);
      for (const letter of this.kept) deadLetters.add(letter, now);
      for (const { id, error } of this.refused) deadLetters.recordRetryFailure(id, error, now);
      deadLetters.forget(this.forgotten);
    });
    this.size = 0;
    this.forgotten = [];
    this.refused = [];
    this.kept = [];
    this.due = new Map();
  }
}

/** Marks a device resource's due times, a range per run of times less than a day apart. */
function markRuns(rollups: LedgerParts["rollups"], { deviceId, resourceId, times }: Due): void {
  const sorted = times.toSorted((a, b) => a - b);
  let [fromS] = sorted;
  for (let i = 0; fromS !== undefined && i < sorted.length; i++) {
    const atS = sorted[i] ?? fromS;
    const next = sorted[i + 1];
    if (next !== undefined && next - atS < DAY_S) continue;
    rollups?.mark(deviceId, resourceId, fromS, atS);
    fromS = next;
  }
}
