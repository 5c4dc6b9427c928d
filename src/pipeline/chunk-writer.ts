import type { ApiClient } from "../api/api-client.js";
import type { DataAnswer } from "../api/data-stream.js";
import { parseRecordTime } from "../api/time-format.js";
import type { PointSink, RejectedLine } from "../influx/point-sink.js";
import { scrubSecrets } from "../logger.js";
import type { DeadLetterStore } from "../state/dead-letter-store.js";
import type { DeadLetterKind } from "../state/types.js";
import { RecordEncoder } from "../transform/record-encoder.js";
import { AnswerScreen, type ScreenStats } from "../transform/screen-answer.js";
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
  readonly deadLetters: Pick<DeadLetterStore, "add">;
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
 * screened (only what was asked for), encoded and written page by page; rows and members that
 * fail validation and lines InfluxDB refuses for good become dead letters. Resolves once every
 * line is stored or dead-lettered, so the caller may then record the chunk as done; rejects when
 * the chunk must be fetched again. An answer retried after a failure midway is written from its
 * start again (points are idempotent), and only the answer that came whole is counted.
 */
export async function writeChunk(
  parts: ChunkWriterParts,
  target: ChunkTarget,
  chunk: Chunk,
): Promise<ChunkResult> {
  const query = {
    ...target,
    values: chunk.values,
    from: new Date(chunk.fromS * 1000),
    to: new Date(chunk.toS * 1000),
  };
  const answered = await parts.client.data(query, (answer) =>
    writeAnswer(parts, target, chunk, answer),
  );
  const { value: tally } = answered;
  const serverTimeS = Math.floor((answered.serverTimeMs ?? parts.now().getTime()) / 1000);
  const newest = newestWritten(
    tally.newest === "" ? undefined : parseRecordTime(tally.newest),
    serverTimeS,
  );
  return {
    records: tally.records,
    points: tally.points,
    requests: answered.requests,
    ...(newest === undefined ? {} : { newestRecordS: newest }),
    serverTimeS,
    deadLetters: tally.letters.count,
    newDeadLetters: tally.letters.added,
    dropped: { ...tally.screen.stats },
    extraMemberNames: tally.screen.extraExamples,
    ...(tally.letters.firstError === undefined
      ? {}
      : { firstDeadLetterError: tally.letters.firstError }),
  };
}

/** What one answer came to. */
interface AnswerTally {
  records: number;
  points: number;
  /** The newest record timestamp written (`YYYY-MM-DDTHH:MM:SS`; "" for none). */
  newest: string;
  readonly screen: AnswerScreen;
  readonly letters: DeadLetterWriter;
}

/** Reads one whole answer: screens, sets aside, encodes and writes it page by page. */
async function writeAnswer(
  parts: ChunkWriterParts,
  target: ChunkTarget,
  chunk: Chunk,
  answer: DataAnswer,
): Promise<AnswerTally> {
  const tally: AnswerTally = {
    records: 0,
    points: 0,
    newest: "",
    screen: new AnswerScreen(chunk.fromS, chunk.toS),
    letters: new DeadLetterWriter(parts, target, chunk),
  };
  const encoder = new RecordEncoder(parts.decoder, target.deviceId, target.resourceId);
  for await (const page of answer.pages) {
    const { kept, invalidRows, badMembers } = tally.screen.screen(page);
    for (const bad of invalidRows) tally.letters.add("row", bad.text, bad.error);
    for (const bad of badMembers) tally.letters.add("member", bad.text, bad.error, [bad.valueId]);
    tally.records += kept.length;
    for (const record of kept) if (record.timestamp > tally.newest) tally.newest = record.timestamp;
    const lines: string[] = [];
    encoder.encode(kept, lines);
    const outcome = await parts.sink.write(lines);
    tally.points += outcome.written;
    tally.letters.lines(outcome.rejected);
  }
  return tally;
}

/** Stores a chunk's bad rows, bad members and refused lines as dead letters. */
class DeadLetterWriter {
  count = 0;
  added = 0;
  firstError: string | undefined;

  constructor(
    private readonly parts: Pick<ChunkWriterParts, "deadLetters" | "now">,
    private readonly target: ChunkTarget,
    private readonly chunk: Chunk,
  ) {}

  lines(rejected: readonly RejectedLine[]): void {
    for (const bad of rejected) this.add("line", bad.line, `HTTP ${bad.status}: ${bad.error}`);
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
