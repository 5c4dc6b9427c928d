import type { ApiClient, DataPage } from "../api/client.js";
import type { DataRecord } from "../api/schemas.js";
import { parseRecordTime } from "../api/time-format.js";
import type { PointSink, RejectedLine } from "../influx/point-sink.js";
import { scrubSecrets } from "../logger.js";
import type { DeadLetterStore } from "../state/dead-letter-store.js";
import type { DeadLetterKind } from "../state/types.js";
import { RecordEncoder } from "../transform/record-encoder.js";
import type { ValueIdDecoder } from "../transform/value-id.js";
import type { Chunk } from "./plan-chunks.js";
import type { RunContext } from "./run-context.js";
import { AnswerScreen, type ScreenStats } from "./screen-records.js";

/** What one fetched and written chunk produced. */
export interface ChunkResult {
  /** Records kept and encoded (of the last attempt). */
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
  readonly dropped: ScreenStats;
}

/** What fetching a chunk needs. */
export interface ChunkDeps {
  readonly client: Pick<ApiClient, "data">;
  readonly sink: Pick<PointSink, "write">;
  readonly decoder: ValueIdDecoder;
  readonly deadLetters: DeadLetterStore;
  readonly now: () => Date;
}

/** Log context of a chunk: device, resource, window and how many values. */
export function chunkContext(deviceId: string, resourceId: string, chunk: Chunk) {
  return {
    device: deviceId,
    resource: resourceId,
    chunk: chunk.index,
    from: new Date(chunk.fromS * 1000).toISOString(),
    to: new Date(chunk.toS * 1000).toISOString(),
    values: chunk.values.length,
  };
}

/**
 * Fetches one chunk (one GET /data request), keeps only what was asked for, encodes the records
 * and writes them; rows that fail validation, members that fail it (their record's other members
 * are written) and lines InfluxDB refuses for good become dead letters and every good row is
 * written. Resolves once every line is stored or dead-lettered, so the caller may then record the
 * chunk as done; rejects when the chunk must be tried again.
 */
export async function fetchChunk(
  deps: ChunkDeps,
  run: RunContext,
  deviceId: string,
  resourceId: string,
  chunk: Chunk,
): Promise<ChunkResult> {
  const query = {
    deviceId,
    resourceId,
    values: chunk.values,
    from: new Date(chunk.fromS * 1000),
    to: new Date(chunk.toS * 1000),
  };
  const screen = new AnswerScreen(chunk.fromS, chunk.toS);
  const encoder = new RecordEncoder(deps.decoder, deviceId, resourceId);
  const letters = new DeadLetterWriter(deps, run, deviceId, resourceId, chunk);
  let requests = 0;
  let attempt = 0;
  let records = 0;
  let points = 0;
  let newest = "";
  let serverTimeMs = deps.now().getTime();
  const calls = {
    onAttempt: () => {
      requests++;
      run.counters.requests++;
    },
  };
  for await (const page of deps.client.data(query, calls)) {
    if (page.attempt !== attempt) {
      // a retry after a failure midway starts the answer over
      attempt = page.attempt;
      screen.restart();
      letters.restart();
      records = 0;
      points = 0;
      newest = "";
    }
    serverTimeMs = page.serverTimeMs ?? deps.now().getTime();
    letters.rows(page, screen);
    screen.noteExtras(page.extraMembers, page.extraMemberNames);
    const kept = screen.keep(page.records);
    letters.members(page.badMembers, kept);
    records += kept.length;
    for (const record of kept) if (record.timestamp > newest) newest = record.timestamp;
    const lines: string[] = [];
    encoder.encode(kept, lines);
    const outcome = await deps.sink.write(lines);
    points += outcome.written;
    letters.lines(outcome.rejected);
  }
  const serverTimeS = Math.floor(serverTimeMs / 1000);
  const newestS = newest === "" ? undefined : Math.min(parseRecordTime(newest) / 1000, serverTimeS);
  const counters = run.counters;
  counters.dataRequests++;
  counters.chunks++;
  counters.points += points;
  counters.droppedMembers += screen.stats.extraMembers;
  counters.droppedRows += screen.stats.outOfWindow;
  counters.duplicateRows += screen.stats.duplicates;
  if (screen.dropped) {
    run.logger.warn(
      {
        ...chunkContext(deviceId, resourceId, chunk),
        ...screen.stats,
        ...(screen.extraExamples.length > 0 ? { extraMemberNames: screen.extraExamples } : {}),
      },
      "answer held more than was asked for: dropped",
    );
  }
  letters.report();
  return {
    records,
    points,
    requests,
    ...(newestS === undefined ? {} : { newestRecordS: newestS }),
    serverTimeS,
    deadLetters: letters.count,
    dropped: { ...screen.stats },
  };
}

/**
 * An answer whose rows are mostly invalid (or carry invalid members) is not bad rows but an API
 * that changed its format.
 */
const DRIFT_MIN_ROWS = 20;
const DRIFT_SHARE = 0.5;

/** The API's answers no longer match what energy-etl understands: the chunk fails, loudly. */
export class SchemaDriftError extends Error {
  constructor(invalid: number, rows: number, firstError: string) {
    super(
      `${invalid} of ${rows} rows of the answer are not valid records (or carry invalid members), ` +
        `so the API's format changed rather than a few rows being bad; not kept as dead letters. ` +
        `First: ${firstError}`,
    );
    this.name = "SchemaDriftError";
  }
}

const TIMESTAMP_TEXT = /"timestamp"\s*:\s*"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)"/;

/** Stores a chunk's bad rows, bad members and refused lines as dead letters; one log line per chunk. */
class DeadLetterWriter {
  count = 0;
  private added = 0;
  private firstError = "";
  private rowsSeen = 0;
  private invalidRows = 0;

  constructor(
    private readonly deps: ChunkDeps,
    private readonly run: RunContext,
    private readonly deviceId: string,
    private readonly resourceId: string,
    private readonly chunk: Chunk,
  ) {}

  /**
   * The invalid rows of a page: dropped when their timestamp lies outside the window (as valid
   * ones are), else kept as dead letters; an answer mostly made of them, or of records with
   * invalid members, fails the chunk.
   */
  rows(page: DataPage, screen: AnswerScreen): void {
    this.rowsSeen += page.records.length + page.invalid.length;
    this.invalidRows += page.invalid.length + page.badMembers.length;
    if (this.invalidRows >= DRIFT_MIN_ROWS && this.invalidRows > this.rowsSeen * DRIFT_SHARE) {
      const first = page.invalid[0]?.error ?? page.badMembers[0]?.members[0]?.error ?? "";
      throw new SchemaDriftError(this.invalidRows, this.rowsSeen, first);
    }
    for (const bad of page.invalid) {
      const timestamp = TIMESTAMP_TEXT.exec(bad.text)?.[1];
      if (timestamp !== undefined && !screen.inWindow(timestamp)) {
        screen.stats.outOfWindow++;
        continue;
      }
      this.add("row", bad.text, bad.error);
    }
  }

  /**
   * The bad members of a page's records that were kept (a record dropped as outside the window or
   * repeated is dropped whole): one dead letter each, naming it, with its whole row.
   */
  members(rows: DataPage["badMembers"], kept: readonly DataRecord[]): void {
    if (rows.length === 0) return;
    const keptSet = new Set(kept);
    for (const { record, text, members } of rows) {
      if (!keptSet.has(record)) continue;
      for (const member of members) this.add("member", text, member.error, [member.valueId]);
    }
  }

  /** A retry starts the answer over. */
  restart(): void {
    this.count = 0;
    this.rowsSeen = 0;
    this.invalidRows = 0;
  }

  lines(rejected: readonly RejectedLine[]): void {
    for (const bad of rejected) this.add("line", bad.line, `HTTP ${bad.status}: ${bad.error}`);
  }

  report(): void {
    if (this.count === 0) return;
    const context = {
      ...chunkContext(this.deviceId, this.resourceId, this.chunk),
      deadLetters: this.count,
      new: this.added,
      error: this.firstError,
    };
    // a known bad row read again by the lookback is no news
    if (this.added > 0) {
      this.run.logger.warn(context, "bad rows, members or lines kept as dead letters");
    } else this.run.logger.debug(context, "known dead letters read again");
  }

  private add(
    kind: DeadLetterKind,
    payload: string,
    error: string,
    valueIds: readonly string[] = this.chunk.values,
  ): void {
    const message = scrubSecrets(error);
    const isNew = this.deps.deadLetters.add(
      {
        kind,
        deviceId: this.deviceId,
        resourceId: this.resourceId,
        windowFromS: this.chunk.fromS,
        windowToS: this.chunk.toS,
        valueIds,
        payload: scrubSecrets(payload),
        error: message,
      },
      this.deps.now(),
    );
    this.count++;
    if (isNew) {
      this.added++;
      this.run.counters.deadLetters++;
    }
    if (this.firstError === "") this.firstError = message;
  }
}
