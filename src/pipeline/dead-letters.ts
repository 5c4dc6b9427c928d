import type { PointSink } from "../influx/point-sink.js";
import { scrubSecrets } from "../logger.js";
import { dataRecordSchema } from "../records/data-record.js";
import { isCounter } from "../rollups/counters.js";
import type { DeadLetterStore } from "../state/dead-letter-store.js";
import type { RollupStore } from "../state/rollup-store.js";
import type { DeadLetter } from "../state/types.js";
import { lineBatch } from "../transform/line-protocol.js";
import { RecordEncoder } from "../transform/record-encoder.js";
import {
  AnswerScreen,
  type BadMember,
  badMemberMessage,
  keepRequested,
} from "../transform/screen-answer.js";
import type { ValueIdDecoder } from "../transform/value-id.js";
import { messageOf } from "../util/errors.js";
import { excerpt } from "../util/text.js";
import { DAY_S } from "../util/utc-time.js";
import { deadLetterTimeS } from "./audit-counts.js";

/** What `dead-letters --retry` did. */
export interface RetryOutcome {
  /** Dead letters written now (and forgotten). */
  written: number;
  /** Still refused (kept, with the new error). */
  refused: number;
  /** Cut when stored, so they cannot be written again. */
  skipped: number;
  /** Members of written rows still not valid, each kept as a dead letter of its own. */
  setAside: number;
  /** Lines InfluxDB stored. */
  lines: number;
  /** Dead letters settled: written, refused or skipped (the others were not tried). */
  tried: number;
  /** Devices whose dead letters were written (their rollups are due). */
  readonly devices: Set<string>;
}

export interface RetryDeps {
  readonly deadLetters: Pick<DeadLetterStore, "add" | "remove" | "recordRetryFailure">;
  /** Where the ranges whose rollups are due are marked (absent: no rollups, a file sink). */
  readonly rollups?: Pick<RollupStore, "mark">;
  /** Runs a batch's bookkeeping (marks, forgotten and kept letters) as one transaction. */
  readonly transaction: (work: () => void) => void;
  readonly sink: Pick<PointSink, "write">;
  readonly decoder: ValueIdDecoder;
  /** Lines per write (INFLUX_BATCH_SIZE). */
  readonly batchLines: number;
  readonly now: () => Date;
  /** True once the retry must take no more batches (SIGINT/SIGTERM). */
  readonly isStopping: () => boolean;
  /** `letters` more were settled (written, refused or skipped). */
  readonly progress?: (letters: number) => void;
}

/** The lines of a dead-lettered row or member, and the members still set aside. */
interface RowLines {
  readonly lines: string[];
  readonly bad: readonly BadMember[];
}

/** A dead letter waiting in a batch, with its lines. */
interface Waiting {
  readonly letter: DeadLetter;
  readonly row: RowLines;
}

/**
 * Writes dead letters again in batches of `batchLines` lines, as a backfill writes (the sink
 * narrows a refused batch down to its refused lines): a letter whose lines are stored is forgotten
 * and its rollup range marked; one with a line refused again is kept with the new error. Stops
 * before the next batch once `isStopping`; a write that fails as a whole rejects with the outcome
 * so far in {@link RetryStopped} (the letters not stored are all kept).
 */
export async function retryDeadLetters(
  deps: RetryDeps,
  pages: Iterable<readonly DeadLetter[]>,
): Promise<RetryOutcome> {
  const outcome: RetryOutcome = {
    written: 0,
    refused: 0,
    skipped: 0,
    setAside: 0,
    lines: 0,
    tried: 0,
    devices: new Set(),
  };
  let batch: Waiting[] = [];
  let lines = 0;
  // one write at a time; the next batch is read and encoded while it runs
  let inFlight: Promise<void> = Promise.resolve();
  const settled = async () => {
    try {
      await inFlight;
    } catch (error) {
      throw new RetryStopped(error, outcome);
    }
  };
  const flush = async () => {
    await settled();
    if (deps.isStopping()) return;
    const waiting = batch;
    batch = [];
    lines = 0;
    inFlight = writeBatch(deps, waiting, outcome);
    // awaited by the next flush or at the end
    inFlight.catch(() => undefined);
  };
  for (const letter of lettersOf(pages)) {
    if (deps.isStopping()) break;
    const row = letter.truncated ? undefined : rowLines(deps.decoder, letter);
    if (typeof row !== "object") {
      if (row === undefined) outcome.skipped++;
      else {
        deps.deadLetters.recordRetryFailure(letter.id, scrubSecrets(row), deps.now());
        outcome.refused++;
      }
      outcome.tried++;
      deps.progress?.(1);
      continue;
    }
    batch.push({ letter, row });
    lines += row.lines.length;
    if (lines >= deps.batchLines) await flush();
  }
  if (batch.length > 0 && !deps.isStopping()) await flush();
  await settled();
  return outcome;
}

/** The letters of pages read one after the other (a page read once the one before is done). */
function* lettersOf(pages: Iterable<readonly DeadLetter[]>): Generator<DeadLetter> {
  for (const page of pages) yield* page;
}

/** A retry ended by a write that failed as a whole: what it did before, and why it stopped. */
export class RetryStopped extends Error {
  constructor(
    readonly reason: unknown,
    readonly outcome: RetryOutcome,
  ) {
    super(messageOf(reason));
    this.name = "RetryStopped";
  }
}

/** The lines of a letter, or why it is still refused. */
function rowLines(decoder: ValueIdDecoder, letter: DeadLetter): RowLines | string {
  return letter.kind === "line"
    ? { lines: [letter.payload], bad: [] }
    : linesOfRow(decoder, letter);
}

/** Writes the lines of `waiting` as one batch, then settles each letter in one transaction. */
async function writeBatch(
  deps: RetryDeps,
  waiting: readonly Waiting[],
  outcome: RetryOutcome,
): Promise<void> {
  const written = await deps.sink.write(lineBatch(waiting.flatMap((w) => w.row.lines)), {
    now: true,
  });
  const refused = new Map(written.rejected.map((r) => [r.line, r]));
  const stored = new Map<string, { letter: DeadLetter; times: number[] }>();
  deps.transaction(() => {
    for (const { letter, row } of waiting) {
      const bad = row.lines.flatMap((line) => refused.get(line) ?? [])[0];
      if (bad !== undefined) {
        const error = `HTTP ${bad.status}: ${bad.error}`;
        deps.deadLetters.recordRetryFailure(letter.id, scrubSecrets(error), deps.now());
        outcome.refused++;
        continue;
      }
      if (deps.rollups && letter.valueIds.some((id) => isCounter(deps.decoder, id))) {
        const key = JSON.stringify([letter.deviceId, letter.resourceId]);
        const times = stored.get(key)?.times ?? [];
        stored.set(key, { letter, times });
        times.push(
          ...row.lines.flatMap((payload) => deadLetterTimeS({ kind: "line", payload }) ?? []),
        );
      }
      setAside(deps, letter, row.bad);
      deps.deadLetters.remove(letter.id);
      outcome.setAside += row.bad.length;
      outcome.written++;
      outcome.lines += row.lines.length;
      outcome.devices.add(letter.deviceId);
    }
    for (const { letter, times } of stored.values()) markRollups(deps, letter, times);
  });
  outcome.tried += waiting.length;
  deps.progress?.(waiting.length);
}

/** Members of a written row still not valid: each kept as a member dead letter of its own. */
function setAside(deps: RetryDeps, letter: DeadLetter, bad: readonly BadMember[]): void {
  const { deviceId, resourceId, windowFromS, windowToS, payload } = letter;
  for (const member of bad) {
    const error = `an invalid member (${badMemberMessage(member)}); the other members of its row were written by dead-letters --retry`;
    const where = { deviceId, resourceId, windowFromS, windowToS, valueIds: [member.valueId] };
    const kept = { kind: "member" as const, ...where, payload, error: scrubSecrets(error) };
    deps.deadLetters.add(kept, deps.now());
  }
}

/**
 * Marks the times a batch stored of a device resource's counters due for rollups (as a chunk's
 * write does): a range per run of times less than a day apart.
 */
function markRollups(
  deps: RetryDeps,
  { deviceId, resourceId }: DeadLetter,
  unsorted: readonly number[],
): void {
  const times = unsorted.toSorted((a, b) => a - b);
  let [fromS] = times;
  for (let i = 0; fromS !== undefined && i < times.length; i++) {
    const atS = times[i] ?? fromS;
    const next = times[i + 1];
    if (next !== undefined && next - atS < DAY_S) continue;
    deps.rollups?.mark(deviceId, resourceId, fromS, atS);
    fromS = next;
  }
}

/** The lines of a dead-lettered row (its invalid members set aside) or member, or why not. */
function linesOfRow(decoder: ValueIdDecoder, letter: DeadLetter): RowLines | string {
  let json: unknown;
  try {
    json = JSON.parse(letter.payload);
  } catch (error) {
    return `not JSON: ${messageOf(error)}`;
  }
  const bad: BadMember[] = [];
  // as the client reads a row now: cut to the requested values first, then judged
  if (!keepRequested(json, new Set(letter.valueIds), [], bad)) {
    const issue = dataRecordSchema.safeParse(json).error?.issues[0];
    const where = issue ? `${issue.path.join(".") || "(record)"}: ${issue.message}` : "invalid";
    return `still not a valid record (${where}); record starts: ${excerpt(letter.payload)}`;
  }
  const [member] = bad;
  if (letter.kind === "member" && member !== undefined) {
    return `still not a valid member (${badMemberMessage(member)})`;
  }
  const screen = new AnswerScreen(letter.windowFromS, letter.windowToS);
  const kept = screen.keep([json]);
  const lines: string[] = [];
  new RecordEncoder(decoder, letter.deviceId, letter.resourceId).encode(kept, lines);
  return { lines, bad };
}
