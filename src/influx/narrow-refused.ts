import { excerpt } from "../util/text.js";
import type { RejectedLine } from "./point-sink.js";
import type { InfluxFailure } from "./write-errors.js";
import { droppedCount, namedRefusals, refusedWhole } from "./write-errors.js";

/**
 * Requests a partial write (`dropped=N`, every other line stored) may take to be narrowed down by
 * its count, per batch: one dropped line in n costs log2(n) requests (13 for 5,000).
 */
export const PARTIAL_NARROW_REQUESTS = 64;

/** A refusal of a batch as a whole: 400 or 422 (narrowed), 413 (split). */
export interface Refusal extends InfluxFailure {
  readonly status: number;
}

/** One batch's bookkeeping while it is written and, if need be, narrowed down. */
export interface BatchWork {
  /** Lines of the batch as first sent (what a refusal of it as a whole names). */
  readonly lines: number;
  /** HTTP requests sent for the batch so far (retries, 413 splits and narrowing included). */
  requests: number;
  /** True once a 400/422 made the writer narrow the batch down. */
  narrowed: boolean;
  readonly rejected: RejectedLine[];
}

export interface NarrowingWrites<W extends BatchWork> {
  /** Writes lines as a batch is written: retried, split on 413, narrowed on 400/422. */
  write(lines: readonly string[], work: W): Promise<void>;
  /** Sends lines once (transient failures retried): undefined when stored, else the refusal. */
  send(lines: readonly string[], work: W): Promise<Refusal | undefined>;
  /** Lines sent and refused (`refusal`), handled as a batch's refusal is: split or narrowed. */
  refused(lines: readonly string[], refusal: Refusal, work: W): Promise<void>;
  /** True once InfluxDB took any line of the write `work` belongs to. */
  stored(work: W): boolean;
}

/**
 * A 400/422 for `lines`: finds the lines at fault (one bad line never fails the others) and writes
 * the others: lines the answer names are taken out, a partial write is narrowed by its count, else
 * both halves are sent and narrowed in turn. Before InfluxDB took any line of the write, a refusal
 * not the lines' own (their time or field type) throws {@link refusedWhole}: every line named or
 * counted as refused, or both halves refused down to two single lines (about 2 log2(n) requests).
 */
export async function narrowRefused<W extends BatchWork>(
  lines: readonly string[],
  failure: Refusal,
  work: W,
  writes: NarrowingWrites<W>,
): Promise<void> {
  const { status } = failure;
  if (lines.length === 1) {
    rejectAll(lines, status, failure.message, work);
    return;
  }
  work.narrowed = true;
  const named = namedRefusals(failure, new Set(lines));
  const none = !writes.stored(work);
  if (none && named.size === lines.length && !linesOwn(failure.message)) {
    throw refusedWhole(failure, work.lines, "InfluxDB named every line as refused");
  }
  if (named.size > 0) {
    const rest: string[] = [];
    for (const line of lines) {
      const error = named.get(line);
      if (error === undefined) rest.push(line);
      else work.rejected.push({ line, status, error: excerpt(error) });
    }
    if (rest.length > 0) await writes.write(rest, work);
    return;
  }
  const dropped = droppedCount(failure);
  if (dropped === lines.length) {
    // dropped for their own time or their own field's type: dead letters still
    if (none && !linesOwn(failure.message)) {
      throw refusedWhole(failure, work.lines, `InfluxDB dropped all ${dropped} lines`);
    }
    rejectAll(lines, status, failure.message, work);
  } else if (dropped !== undefined && dropped > 0 && dropped < lines.length) {
    await narrowPartial(lines, dropped, failure, work, writes);
  } else await bisect(lines, failure, work, writes);
}

/**
 * Both halves of a refused batch are sent, then each refused one narrowed: when both are refused
 * down to two single lines before InfluxDB took a line, the write is refused whole.
 */
async function bisect<W extends BatchWork>(
  lines: readonly string[],
  failure: Refusal,
  work: W,
  writes: NarrowingWrites<W>,
): Promise<void> {
  const half = Math.ceil(lines.length / 2);
  const first = lines.slice(0, half);
  const second = lines.slice(half);
  const firstRefusal = await writes.send(first, work);
  const secondRefusal = await writes.send(second, work);
  const whole = lines.length === 2 && !writes.stored(work) && !linesOwn(failure.message);
  if (firstRefusal && secondRefusal && whole) {
    throw refusedWhole(failure, work.lines, "every line refused, halved down to single lines");
  }
  if (firstRefusal) await writes.refused(first, firstRefusal, work);
  if (secondRefusal) await writes.refused(second, secondRefusal, work);
}

/**
 * A partial write that dropped `dropped` of `lines` without naming them (every other line is
 * stored): the lines in {@link partialOrder}, groups are halved breadth-first, and the first half
 * of each sent again (storing it again changes nothing): its count gives the second half's. Once
 * the requests are spent, a group still mixed is refused whole, saying how many were stored.
 */
async function narrowPartial<W extends BatchWork>(
  lines: readonly string[],
  dropped: number,
  failure: Refusal,
  work: W,
  writes: NarrowingWrites<W>,
): Promise<void> {
  const { status } = failure;
  const ordered = partialOrder(lines, failure.message);
  // groups of lines, and how many of them InfluxDB dropped (undefined: not known yet)
  const queue: { lines: readonly string[]; dropped?: number }[] = [
    { lines: ordered.lines, dropped },
  ];
  let split = ordered.split;
  let budget = PARTIAL_NARROW_REQUESTS;
  const countOf = async (group: readonly string[]): Promise<number | undefined> => {
    budget--;
    const refusal = await writes.send(group, work);
    if (refusal === undefined) return 0;
    // a 413 counts nothing; lines named are narrowed as any batch's are
    if (refusal.status === 413 || namedRefusals(refusal, new Set(group)).size > 0) return undefined;
    return droppedCount(refusal);
  };
  for (let group = queue.shift(); group; group = queue.shift()) {
    let count = group.dropped;
    if (count === undefined && budget > 0) count = await countOf(group.lines);
    // an answer of another kind, or no requests left to ask: written as any batch is
    if (count === undefined || count > group.lines.length) {
      await writes.write(group.lines, work);
      continue;
    }
    if (count === 0) continue;
    if (count === group.lines.length) {
      rejectAll(group.lines, status, failure.message, work);
      continue;
    }
    if (budget === 0) {
      rejectMixed(group.lines, count, failure, work);
      continue;
    }
    const half = split ?? Math.ceil(group.lines.length / 2);
    split = undefined;
    const first = group.lines.slice(0, half);
    const second = group.lines.slice(half);
    const inFirst = await countOf(first);
    if (inFirst === undefined || inFirst > first.length) {
      await writes.write(first, work);
      queue.push({ lines: second, dropped: undefined });
      continue;
    }
    const inSecond = count - inFirst;
    const known = inSecond >= 0 && inSecond <= second.length;
    queue.push(
      { lines: first, dropped: inFirst },
      { lines: second, dropped: known ? inSecond : undefined },
    );
  }
}

/** A group still mixed when the requests are spent: kept whole, saying how many were stored. */
function rejectMixed(lines: readonly string[], dropped: number, failure: Refusal, work: BatchWork) {
  const error =
    `${excerpt(failure.message)} (InfluxDB dropped ${dropped} of these ${lines.length} lines ` +
    `without naming them; narrowing stops after ${PARTIAL_NARROW_REQUESTS} requests, so all are ` +
    `kept here, though ${lines.length - dropped} of them were stored)`;
  const droppedShare = dropped / lines.length;
  for (const line of lines)
    work.rejected.push({ line, status: failure.status, error, droppedShare });
}

/**
 * The order in which a partial write's lines are halved, so that the dropped ones stand together:
 * points beyond the retention policy by time (the oldest); a field type conflict's measurement
 * first, and the first halving between its lines and the others (`split`).
 */
function partialOrder(
  lines: readonly string[],
  message: string,
): { readonly lines: readonly string[]; readonly split?: number } {
  if (beyondRetention(message)) {
    const timed = lines.map((line) => ({
      line,
      time: Number(line.slice(line.lastIndexOf(" ") + 1)),
    }));
    return { lines: timed.sort((a, b) => a.time - b.time).map((t) => t.line) };
  }
  // no measurement named: no line is a suspect
  const named = /on measurement "([^"]*)"/.exec(message)?.[1];
  const suspects: string[] = [];
  const others: string[] = [];
  for (const line of lines) (measurementOf(line) === named ? suspects : others).push(line);
  if (suspects.length === 0 || others.length === 0) return { lines };
  return { lines: [...suspects, ...others], split: suspects.length };
}

/** The measurement of a line as InfluxDB names it (escapes taken out). */
function measurementOf(line: string): string {
  let name = "";
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === "\\" && i + 1 < line.length) name += line[++i];
    else if (c === "," || c === " ") break;
    else name += c;
  }
  return name;
}

/** A partial write's message that its points were dropped for their age. */
function beyondRetention(message: string): boolean {
  return /beyond retention policy/i.test(message);
}

/**
 * A partial write's message that its points were dropped for what they are: their age, or a
 * field whose type the series already has otherwise (a type conflict on one measurement must not
 * stop a resource whose batch holds only that measurement's lines).
 */
function linesOwn(message: string): boolean {
  return beyondRetention(message) || /field type conflict/i.test(message);
}

/** Every line refused, with the answer's message. */
function rejectAll(
  lines: readonly string[],
  status: number,
  message: string,
  work: BatchWork,
): void {
  const error = excerpt(message);
  for (const line of lines) work.rejected.push({ line, status, error });
}
