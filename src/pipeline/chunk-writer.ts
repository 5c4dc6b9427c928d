import type { ApiClient } from "../api/api-client.js";
import type { DataAnswer } from "../api/data-stream.js";
import type { PointSink, RejectedLine } from "../influx/point-sink.js";
import { scrubSecrets } from "../logger.js";
import { isCounter } from "../rollups/counters.js";
import type { DeadLetterStore } from "../state/dead-letter-store.js";
import type { RollupStore } from "../state/rollup-store.js";
import type { DeadLetterKind } from "../state/types.js";
import { AnswerTranscoder, type TranscodedBatch } from "../transform/answer-transcoder.js";
import { type LineBatch, linesOf } from "../transform/line-protocol.js";
import type { AnswerScreen, ScreenStats } from "../transform/screen-answer.js";
import type { ValueIdDecoder } from "../transform/value-id.js";
import { isoSeconds } from "../util/utc-time.js";
import { newestWritten } from "./cursor.js";
import type { Chunk } from "./plan-chunks.js";

/** What one fetched and written chunk produced. */
export interface ChunkResult {
  /** Records kept and encoded. */
  readonly records: number;
  /** Lines the sink stored. */
  readonly points: number;
  /** HTTP attempts the chunk took. */
  readonly requests: number;
  /** The newest record timestamp written, capped at the API's clock. */
  readonly newestRecordS?: number;
  /** The API's clock when it answered (its Date header; the local clock without one). */
  readonly serverTimeS: number;
  /** Rows, members and lines that became dead letters (new or seen before). */
  readonly deadLetters: number;
  /** Of those, the ones seen for the first time. */
  readonly newDeadLetters: number;
  /** Dead letters of refused lines that this chunk wrote after all (forgotten). */
  readonly resolvedDeadLetters: number;
  readonly dropped: ScreenStats;
  /** Up to five names of members dropped because they were not requested. */
  readonly extraMemberNames: readonly string[];
  /** The first dead letter's error, for the log. */
  readonly firstDeadLetterError?: string;
}

/** What writing a chunk needs. */
export interface ChunkWriterParts {
  readonly client: Pick<ApiClient, "data">;
  readonly sink: Pick<PointSink, "write">;
  readonly decoder: ValueIdDecoder;
  /** Lines per write (INFLUX_BATCH_SIZE). */
  readonly batchLines: number;
  /** Where the ranges whose rollups are due are marked (absent: no rollups, a file sink). */
  readonly rollups?: Pick<RollupStore, "mark">;
  readonly deadLetters: Pick<DeadLetterStore, "add" | "lineLetters" | "remove">;
  readonly now: () => Date;
}

/** A device resource whose chunks are fetched. */
export interface ChunkTarget {
  readonly deviceId: string;
  readonly resourceId: string;
}

/** Log context of a chunk: device, resource, window and how many values. */
export function chunkContext(target: ChunkTarget, chunk: Chunk) {
  return {
    device: target.deviceId,
    resource: target.resourceId,
    chunk: chunk.index,
    from: isoSeconds(chunk.fromS),
    to: isoSeconds(chunk.toS),
    values: chunk.values.length,
  };
}

/**
 * Fetches one chunk (one GET /data request) and writes what the answer holds: its records
 * screened (only what was asked for), encoded and written batch by batch; rows and members that
 * fail validation and lines InfluxDB refuses for good become dead letters. An answer retried
 * after a failure midway is written from its start again (points are idempotent), and only the
 * answer that came whole is counted. Resolves once the answer is read (the request is over), with
 * what finishes the chunk: its last write (started, not waited for, so that a request slot is not
 * held while a short write waits to go out with others), then its result. That finish resolves
 * once every line is stored or dead-lettered, so the caller may then record the chunk as done;
 * it (or this) rejects when the chunk must be fetched again.
 */
export async function readChunk(
  parts: ChunkWriterParts,
  target: ChunkTarget,
  chunk: Chunk,
): Promise<() => Promise<ChunkResult>> {
  const query = {
    ...target,
    values: chunk.values,
    from: new Date(chunk.fromS * 1000),
    to: new Date(chunk.toS * 1000),
  };
  const answered = await parts.client.data(query, (answer) =>
    writeAnswer(parts, target, chunk, answer),
  );
  return async () => {
    const tally = answered.value;
    // before the chunk is recorded done (a crash after it leaves the mark), and also when a
    // later write failed: what was stored before it needs its rollups all the same
    const markRollups = () => {
      if (!parts.rollups || tally.points() === 0) return;
      if (tally.oldestS === undefined || tally.newestS === undefined) return;
      if (chunk.values.some((id) => isCounter(parts.decoder, id))) {
        parts.rollups.mark(target.deviceId, target.resourceId, tally.oldestS, tally.newestS);
      }
    };
    try {
      await tally.lastWrite;
    } finally {
      markRollups();
    }
    const serverTimeS = Math.floor((answered.serverTimeMs ?? parts.now().getTime()) / 1000);
    const newest = newestWritten(
      tally.newestS === undefined ? undefined : tally.newestS * 1000,
      serverTimeS,
    );
    return {
      records: tally.records,
      points: tally.points(),
      requests: answered.requests,
      ...(newest === undefined ? {} : { newestRecordS: newest }),
      serverTimeS,
      deadLetters: tally.letters.count,
      newDeadLetters: tally.letters.added,
      resolvedDeadLetters: tally.letters.resolved,
      dropped: { ...tally.screen.stats },
      extraMemberNames: tally.screen.extraExamples,
      ...(tally.letters.firstError === undefined
        ? {}
        : { firstDeadLetterError: tally.letters.firstError }),
    };
  };
}

/** What one answer came to. */
interface AnswerTally {
  readonly records: number;
  /** Lines stored (complete once `lastWrite` settled). */
  readonly points: () => number;
  /** The newest record time written (epoch s); undefined for none. */
  readonly newestS: number | undefined;
  /** The oldest record time written (epoch s); undefined for none. */
  readonly oldestS: number | undefined;
  readonly screen: AnswerScreen;
  readonly letters: DeadLetterWriter;
  /** The answer's last write, started and not waited for (rejects when it failed). */
  readonly lastWrite: Promise<void>;
}

/**
 * Reads one whole answer: transcodes it to line protocol as its bytes arrive, and writes each
 * batch (and stores what was set aside with it) before reading on, so the writes pace the reads;
 * the last batch's write is left running (see {@link readChunk}).
 */
async function writeAnswer(
  parts: ChunkWriterParts,
  target: ChunkTarget,
  chunk: Chunk,
  answer: DataAnswer,
): Promise<AnswerTally> {
  const transcoder = new AnswerTranscoder(
    { ...target, values: chunk.values, fromS: chunk.fromS, toS: chunk.toS },
    {
      source: answer.source,
      decoder: parts.decoder,
      batchLines: parts.batchLines,
      maxRecordBytes: answer.maxRecordBytes,
    },
  );
  const letters = new DeadLetterWriter(parts, target, chunk);
  let points = 0;
  const write = async (batch: TranscodedBatch) => {
    for (const bad of batch.setAside) {
      letters.add(
        bad.kind,
        bad.text,
        bad.error,
        bad.valueId === undefined ? undefined : [bad.valueId],
      );
    }
    if (batch.lines.lines === 0) return;
    const outcome = await parts.sink.write(batch.lines);
    points += outcome.written;
    letters.lines(outcome.rejected);
    letters.resolve(batch.lines, outcome.rejected);
  };
  for await (const piece of answer.bytes) {
    transcoder.push(piece);
    for (let batch = transcoder.nextBatch(); batch; batch = transcoder.nextBatch())
      await write(batch);
  }
  transcoder.end();
  // the end may leave batches (small pieces it gathered): each written before the next is taken
  // (a batch's bytes are the transcoder's), the last one left running
  let lastWrite = Promise.resolve();
  for (let batch = transcoder.nextBatch(); batch; batch = transcoder.nextBatch()) {
    if (!transcoder.finished) await write(batch);
    else lastWrite = write(batch);
  }
  // handled here so that it never counts as unhandled before the chunk's finish awaits it
  lastWrite.catch(() => undefined);
  const { records, newestS, oldestS, screen } = transcoder;
  return { records, points: () => points, newestS, oldestS, screen, letters, lastWrite };
}

/**
 * Stores a chunk's bad rows, bad members and refused lines as dead letters, and forgets the
 * refused lines it writes after all (as `dead-letters --retry` does).
 */
class DeadLetterWriter {
  count = 0;
  added = 0;
  resolved = 0;
  firstError: string | undefined;

  constructor(
    private readonly parts: Pick<ChunkWriterParts, "deadLetters" | "now">,
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
