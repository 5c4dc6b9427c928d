import type { PointSink } from "../influx/point-sink.js";
import { scrubSecrets } from "../logger.js";
import { dataRecordSchema } from "../records/data-record.js";
import { isCounter } from "../rollups/counters.js";
import { isRollupLine } from "../rollups/rollup-lines.js";
import type { RetryLetter } from "../state/dead-letter-store.js";
import { jsonStringArray } from "../state/rows.js";
import type { NewDeadLetter } from "../state/types.js";
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
import { deadLetterTimeS } from "./audit-counts.js";
import { type LedgerParts, RetryLedger } from "./retry-ledger.js";

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
  /** Rollup points forgotten, their spans marked for the recompute at the end instead. */
  recomputed: number;
  /** Rollup points left as they are: this retry writes no rollups (ROLLUPS=false, a file). */
  rollupsOff: number;
  /** Dead letters settled: written, refused, skipped or recomputed (the others were not tried). */
  tried: number;
  /** Devices whose dead letters were written (their rollups are due). */
  readonly devices: Set<string>;
}

export interface RetryDeps extends LedgerParts {
  readonly sink: Pick<PointSink, "write">;
  readonly decoder: ValueIdDecoder;
  /** Lines per write (INFLUX_BATCH_SIZE). */
  readonly batchLines: number;
  /** True once the retry must take no more batches (SIGINT/SIGTERM). */
  readonly isStopping: () => boolean;
  /** `letters` more were settled (written, refused or skipped). */
  readonly progress?: (letters: number) => void;
  /** Letters settled per transaction (default {@link SETTLE_LETTERS}). */
  readonly settleLetters?: number;
}

/**
 * Letters settled per transaction: a crash re-sends at most these (identical points overwrite),
 * and a commit per write cost more than the writes.
 */
const SETTLE_LETTERS = 50_000;

/** The lines of a dead-lettered row or member, and the members still set aside. */
interface RowLines {
  readonly lines: string[];
  readonly bad: readonly BadMember[];
}

/** A dead letter waiting in a batch, with its lines. */
interface Waiting {
  readonly letter: RetryLetter;
  readonly row: RowLines;
}

/**
 * Writes dead letters again in batches of `batchLines`, as a backfill writes: a letter whose lines
 * are stored is forgotten and its rollup range marked; one refused again is kept with the new
 * error; committed every {@link SETTLE_LETTERS} letters. Stops before a batch once `isStopping`;
 * a write that fails whole rejects with the outcome so far in {@link RetryStopped}.
 */
export async function retryDeadLetters(
  deps: RetryDeps,
  pages: Iterable<readonly RetryLetter[]>,
): Promise<RetryOutcome> {
  const ledger = new RetryLedger(deps);
  const retry = new Retry(deps, ledger);
  try {
    await retry.run(pages);
  } finally {
    // what was stored before a failed write or a stop is forgotten all the same
    ledger.commit();
  }
  return retry.outcome;
}

/** One retry: its batch being filled, its write in flight, what it did. */
class Retry {
  readonly outcome: RetryOutcome = {
    written: 0,
    refused: 0,
    skipped: 0,
    setAside: 0,
    recomputed: 0,
    rollupsOff: 0,
    lines: 0,
    tried: 0,
    devices: new Set(),
  };
  private batch: Waiting[] = [];
  private lines = 0;
  // one write at a time; the next batch is read and encoded while it runs
  private inFlight: Promise<void> = Promise.resolve();
  /** Value ids as stored -> whether one is a counter's (many letters share them). */
  private readonly counters = new Map<string, boolean>();

  constructor(
    private readonly deps: RetryDeps,
    private readonly ledger: RetryLedger,
  ) {}

  async run(pages: Iterable<readonly RetryLetter[]>): Promise<void> {
    const { deps, outcome } = this;
    for (const page of pages) {
      for (const letter of page) {
        if (deps.isStopping()) break;
        if (isRollupLetter(letter)) {
          this.recompute(letter);
          continue;
        }
        const row = letter.truncated ? undefined : rowLines(deps.decoder, letter);
        if (typeof row === "object") {
          this.batch.push({ letter, row });
          this.lines += row.lines.length;
          if (this.lines >= deps.batchLines) await this.flush();
          continue;
        }
        if (row === undefined) outcome.skipped++;
        else {
          this.ledger.refuse(letter.id, scrubSecrets(row));
          outcome.refused++;
        }
        outcome.tried++;
        deps.progress?.(1);
      }
      if (deps.isStopping()) break;
    }
    if (this.batch.length > 0 && !deps.isStopping()) await this.flush();
    await this.settled();
  }

  /**
   * A rollup point set aside beyond the bound is not sent (a finite one would be written as it
   * is): it is forgotten and its span marked, so the recompute at the end writes it from the raw
   * data, or sets it aside again if they are still beyond the bound.
   */
  private recompute(letter: RetryLetter): void {
    const { deviceId, resourceId, windowFromS, windowToS } = letter;
    if (this.deps.rollups === undefined) {
      this.outcome.rollupsOff++;
      return;
    }
    const times = [windowFromS, Math.max(windowFromS, windowToS - 1)];
    this.ledger.forget(letter.id, { deviceId, resourceId, times });
    this.outcome.recomputed++;
    this.outcome.devices.add(deviceId);
    this.outcome.tried++;
    this.deps.progress?.(1);
  }

  private async settled(): Promise<void> {
    try {
      await this.inFlight;
    } catch (error) {
      throw new RetryStopped(error, this.outcome);
    }
  }

  private async flush(): Promise<void> {
    await this.settled();
    if (this.deps.isStopping()) return;
    const waiting = this.batch;
    this.batch = [];
    this.lines = 0;
    this.inFlight = this.write(waiting);
    // awaited by the next flush or at the end
    this.inFlight.catch(() => undefined);
  }

  /** Writes the lines of `waiting` as one batch, then enters each letter in the ledger. */
  private async write(waiting: readonly Waiting[]): Promise<void> {
    const { deps, outcome, ledger } = this;
    const lines: string[] = [];
    for (const { row } of waiting) for (const line of row.lines) lines.push(line);
    const written = await deps.sink.write(lineBatch(lines), { now: true });
    const refused = new Map(written.rejected.map((r) => [r.line, r]));
    for (const { letter, row } of waiting) {
      const bad = refused.size === 0 ? undefined : row.lines.find((line) => refused.has(line));
      const why = bad === undefined ? undefined : refused.get(bad);
      if (why !== undefined) {
        ledger.refuse(letter.id, scrubSecrets(`HTTP ${why.status}: ${why.error}`));
        outcome.refused++;
        continue;
      }
      const { deviceId, resourceId } = letter;
      const counter = deps.rollups !== undefined && this.hasCounter(letter.valueIdsJson);
      const times = counter ? row.lines.flatMap((payload) => lineTimeS(payload) ?? []) : [];
      for (const member of row.bad) ledger.keep(setAside(letter, member));
      ledger.forget(letter.id, { deviceId, resourceId, times });
      outcome.setAside += row.bad.length;
      outcome.written++;
      outcome.lines += row.lines.length;
      outcome.devices.add(deviceId);
    }
    outcome.tried += waiting.length;
    deps.progress?.(waiting.length);
    if (ledger.size >= (deps.settleLetters ?? SETTLE_LETTERS)) ledger.commit();
  }

  /** Whether value ids as stored name a counter (a letter of its raw points marks rollups). */
  private hasCounter(valueIdsJson: string): boolean {
    let counter = this.counters.get(valueIdsJson);
    if (counter === undefined) {
      const ids = jsonStringArray.safeParse(valueIdsJson).data ?? [];
      counter = ids.some((id) => isCounter(this.deps.decoder, id));
      this.counters.set(valueIdsJson, counter);
    }
    return counter;
  }
}

/** A dead letter of a rollup point (rollups set these aside, with no value ids). */
const isRollupLetter = (letter: RetryLetter) =>
  letter.kind === "line" && letter.valueIdsJson === "[]" && isRollupLine(letter.payload);

/** The timestamp of a line (seconds), if it has one. */
const lineTimeS = (payload: string) => deadLetterTimeS({ kind: "line", payload });

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
function rowLines(decoder: ValueIdDecoder, letter: RetryLetter): RowLines | string {
  return letter.kind === "line"
    ? { lines: [letter.payload], bad: [] }
    : linesOfRow(decoder, letter);
}

/** A member of a written row still not valid: a member dead letter of its own. */
function setAside(letter: RetryLetter, member: BadMember): NewDeadLetter {
  const { deviceId, resourceId, windowFromS, windowToS, payload } = letter;
  const error = `an invalid member (${badMemberMessage(member)}); the other members of its row were written by dead-letters --retry`;
  const where = { deviceId, resourceId, windowFromS, windowToS, valueIds: [member.valueId] };
  return { kind: "member", ...where, payload, error: scrubSecrets(error) };
}

/** The lines of a dead-lettered row (its invalid members set aside) or member, or why not. */
function linesOfRow(decoder: ValueIdDecoder, letter: RetryLetter): RowLines | string {
  const valueIds = jsonStringArray.safeParse(letter.valueIdsJson).data;
  if (valueIds === undefined) return `its value ids are not a JSON array of strings`;
  let json: unknown;
  try {
    json = JSON.parse(letter.payload);
  } catch (error) {
    return `not JSON: ${messageOf(error)}`;
  }
  const bad: BadMember[] = [];
  // as the client reads a row now: cut to the requested values first, then judged
  if (!keepRequested(json, new Set(valueIds), [], bad)) {
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
