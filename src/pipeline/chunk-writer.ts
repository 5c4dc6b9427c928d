import type { Answered } from "../api/api-request.js";
import type { DataAnswer, DataQuery } from "../api/data-stream.js";
import { ApiError } from "../api/errors.js";
import type { PointSink } from "../influx/point-sink.js";
import { answeredWith } from "../records/answer-source.js";
import { isCounter } from "../rollups/counters.js";
import type { RollupStore } from "../state/rollup-store.js";
import { AnswerTranscoder, type TranscodedBatch } from "../transform/answer-transcoder.js";
import { JsonArrayError } from "../transform/json-array-scanner.js";
import type { AnswerScreen, ScreenStats } from "../transform/screen-answer.js";
import type { ValueIdDecoder } from "../transform/value-id.js";
import { isoSeconds } from "../util/utc-time.js";
import { newestWritten } from "./cursor.js";
import { type ChunkTarget, type DeadLetterParts, DeadLetterWriter } from "./dead-letter-writer.js";
import type { Chunk } from "./plan-chunks.js";

export type { ChunkTarget } from "./dead-letter-writer.js";

/** What one fetched and written chunk produced. */
export interface ChunkResult {
  /** Records kept and encoded. */
  readonly records: number;
  /** Lines the sink stored. */
  readonly points: number;
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
  readonly firstDeadLetterError?: string;
}

export interface ChunkWriterParts extends DeadLetterParts {
  readonly sink: Pick<PointSink, "write">;
  readonly decoder: ValueIdDecoder;
  /** Lines per write (INFLUX_BATCH_SIZE). */
  readonly batchLines: number;
  /** Where the ranges whose rollups are due are marked (absent: no rollups, a file sink). */
  readonly rollups?: Pick<RollupStore, "mark">;
}

/** The GET /data request of a chunk (spec 4.4). */
export function dataQuery(
  target: ChunkTarget,
  chunk: Pick<Chunk, "values" | "fromS" | "toS">,
): DataQuery {
  return {
    ...target,
    values: chunk.values,
    from: new Date(chunk.fromS * 1000),
    to: new Date(chunk.toS * 1000),
  };
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
 * What a chunk came to once its last write settled (its rollup range marked even when it failed:
 * what was stored before needs its rollups). Rejects when the chunk must be fetched again.
 */
export async function finishChunk(
  parts: Pick<ChunkWriterParts, "rollups" | "decoder" | "now">,
  target: ChunkTarget,
  chunk: Chunk,
  answered: Omit<Answered<unknown>, "value">,
  written: WrittenAnswer,
): Promise<ChunkResult> {
  try {
    await written.lastWrite;
  } finally {
    markRollups(parts, target, chunk, written);
  }
  const serverTimeS = Math.floor((answered.serverTimeMs ?? parts.now().getTime()) / 1000);
  const newest = newestWritten(
    written.newestS === undefined ? undefined : written.newestS * 1000,
    serverTimeS,
  );
  const { letters } = written;
  return {
    records: written.records,
    points: written.points(),
    requests: answered.requests,
    ...(newest === undefined ? {} : { newestRecordS: newest }),
    serverTimeS,
    deadLetters: letters.count,
    newDeadLetters: letters.added,
    resolvedDeadLetters: letters.resolved,
    dropped: { ...written.screen.stats },
    extraMemberNames: written.screen.extraExamples,
    ...(letters.firstError === undefined ? {} : { firstDeadLetterError: letters.firstError }),
  };
}

/** Marks the range a chunk stored of its counters, before it is recorded done (a crash keeps it). */
function markRollups(
  parts: Pick<ChunkWriterParts, "rollups" | "decoder">,
  target: ChunkTarget,
  chunk: Chunk,
  written: WrittenAnswer,
): void {
  if (!parts.rollups || written.points() === 0) return;
  if (written.oldestS === undefined || written.newestS === undefined) return;
  if (chunk.values.some((id) => isCounter(parts.decoder, id))) {
    parts.rollups.mark(target.deviceId, target.resourceId, written.oldestS, written.newestS);
  }
}

/** What one answer came to once written (its last write may still be running). */
export interface WrittenAnswer {
  readonly records: number;
  /** Lines stored (complete once `lastWrite` settled). */
  readonly points: () => number;
  /** The newest and oldest record times written (epoch s). */
  readonly newestS: number | undefined;
  readonly oldestS: number | undefined;
  readonly screen: AnswerScreen;
  readonly letters: DeadLetterWriter;
  /** The answer's last write, started and not waited for (rejects when it failed). */
  readonly lastWrite: Promise<void>;
}

/** Transcodes and writes a chunk's answer, batch by batch; the last write is left running. */
export async function writeAnswer(
  parts: ChunkWriterParts,
  target: ChunkTarget,
  chunk: Chunk,
  answer: DataAnswer,
): Promise<WrittenAnswer> {
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
  let lastWrite = Promise.resolve();
  try {
    for (const piece of answer.pieces) {
      transcoder.push(piece);
      for (let batch = transcoder.nextBatch(); batch; batch = transcoder.nextBatch())
        await write(batch);
    }
    transcoder.end();
    // the end may leave batches (small pieces it gathered): each written before the next is taken
    // (a batch's bytes are the transcoder's), the last one left running
    for (let batch = transcoder.nextBatch(); batch; batch = transcoder.nextBatch()) {
      if (!transcoder.finished) await write(batch);
      else lastWrite = write(batch);
    }
  } catch (error) {
    throw error instanceof JsonArrayError ? notRecords(error, answer) : error;
  }
  // handled here so that it never counts as unhandled before the chunk's finish awaits it
  lastWrite.catch(() => undefined);
  const { records, newestS, oldestS, screen } = transcoder;
  return { records, points: () => points, newestS, oldestS, screen, letters, lastWrite };
}

/**
 * An answer whose body is not a JSON array of records (or holds a record over its cap), found
 * while it was transcoded: final for this chunk, which fails and is read again next run (a body
 * cut short is retried before any of it is written: data-stream.ts checkEnds; one cut right
 * after a `]` inside its last record only shows here, after writes).
 */
export function notRecords(error: JsonArrayError, answer: DataAnswer): ApiError {
  const { source } = answer;
  const what = error.tooLong
    ? `a record over ${answer.maxRecordBytes} bytes (API_MAX_RECORD_BYTES)`
    : `a body that is not a JSON array of records (${error.message})`;
  return new ApiError(answeredWith(source, what), {
    code: "invalid_response",
    endpoint: source.endpoint,
    status: source.status,
    retryable: false,
  });
}
