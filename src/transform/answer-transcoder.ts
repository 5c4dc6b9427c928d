import type { AnswerSource } from "../records/answer-source.js";
import { parseRecordTime } from "../records/data-record.js";
import { GrowingBytes } from "../util/growing-bytes.js";
import { type ElementReader, JsonArrayScanner } from "./json-array-scanner.js";
import { LineBuffer, NO_BYTES } from "./line-buffer.js";
import type { LineBatch } from "./line-protocol.js";
import { decodeElement } from "./record-decoder.js";
import { RecordEncoder } from "./record-encoder.js";
import { RecordLines } from "./record-lines.js";
import { RecordScanner } from "./record-scanner.js";
import { AnswerScreen } from "./screen-answer.js";
import type { ValueIdDecoder } from "./value-id.js";

/** A row or a member set aside as a dead letter. */
export interface SetAside {
  readonly kind: "row" | "member";
  readonly text: string;
  readonly error: string;
  /** The member's value id (kind `member`). */
  readonly valueId?: string;
}

/** What to write next: lines, and the rows and members set aside since the last batch. */
export interface TranscodedBatch {
  readonly lines: LineBatch;
  readonly setAside: readonly SetAside[];
}

/** The request an answer is for: value ids, and the window (inclusive, epoch seconds). */
export interface AnswerRequest {
  readonly deviceId: string;
  readonly resourceId: string;
  readonly values: readonly string[];
  readonly fromS: number;
  readonly toS: number;
}

export interface TranscodeOptions {
  readonly source: AnswerSource;
  readonly decoder: ValueIdDecoder;
  /** Lines per batch (INFLUX_BATCH_SIZE). */
  readonly batchLines: number;
  /** Longest record (API_MAX_RECORD_BYTES). */
  readonly maxRecordBytes: number;
  /** Pieces shorter than this are gathered before they are read; default 16 KiB. */
  readonly gatherBytes?: number;
}

/**
 * What reads and writes the records of one answer: the fast path's reader and writer, the
 * reference path's encoder (whose plans RecordLines uses too).
 */
interface RecordParts {
  readonly scanned: RecordScanner;
  readonly encoder: RecordEncoder;
  readonly requested: ReadonlySet<string>;
  readonly lines: RecordLines;
}

/**
 * Rows read between two checks of the schema-drift rule; what is set aside waits for the check
 * (a drifted answer keeps no dead letters).
 */
const DRIFT_CHECK_ROWS = 2000;

/** Pieces shorter than this are gathered before they are read (see AnswerTranscoder.push). */
const GATHER_BYTES = 16 * 1024;

/**
 * One GET /data answer from its bytes to line protocol in one pass: each record read by the fast
 * path (record-scanner.ts) straight into the line buffer, or else by the reference path
 * (JSON.parse, RecordEncoder), both screened by the answer's one AnswerScreen. `push` a piece and
 * take the batches ({@link nextBatch}) until there is none; at the end `end` it and take the last
 * ones. A batch's bytes stay valid until the next call. Throws a JsonArrayError or (most rows
 * invalid) a SchemaDriftError.
 */
export class AnswerTranscoder implements ElementReader {
  readonly screen: AnswerScreen;
  /** Records kept and encoded, and their lines. */
  records = 0;
  points = 0;
  /** The newest and oldest record time kept (epoch s); undefined while none. */
  newestS: number | undefined;
  oldestS: number | undefined;
  /** Rows the fast path read (the others went through JSON.parse). */
  fastRows = 0;

  private readonly scanner: JsonArrayScanner;
  private readonly gatherBytes: number;
  /** What reads and writes records, made for the first one (most steady answers have none). */
  private parts: RecordParts | undefined;
  private readonly out = new LineBuffer();
  /** A batch cut and not taken yet. */
  private ready: TranscodedBatch | undefined;
  /** The piece being read, and how far. */
  private piece: Buffer | undefined;
  private offset = 0;
  /** Small pieces gathered (see {@link push}). */
  private readonly gathered: GrowingBytes;
  /** {@link end} was called; {@link finish} ran. */
  private ending = false;
  private ended = false;
  /** Set aside and checked against the drift rule, to go with the next batch. */
  private released: SetAside[] = [];
  /** Set aside since the last drift check. */
  private pending: SetAside[] = [];
  private rowsSinceCheck = 0;
  private readonly extras: string[] = [];
  // the element the fast path read last
  private element: Buffer = NO_BYTES;
  private elementStart = 0;
  private elementEnd = 0;

  constructor(
    private readonly request: AnswerRequest,
    private readonly options: TranscodeOptions,
  ) {
    this.screen = new AnswerScreen(request.fromS, request.toS);
    this.scanner = new JsonArrayScanner(this, options.maxRecordBytes);
    this.gatherBytes = options.gatherBytes ?? GATHER_BYTES;
    this.gathered = new GrowingBytes(2 * this.gatherBytes);
  }

  private get reading(): RecordParts {
    if (this.parts) return this.parts;
    const { request } = this;
    const encoder = new RecordEncoder(this.options.decoder, request.deviceId, request.resourceId);
    this.parts = {
      scanned: new RecordScanner(request.values),
      encoder,
      requested: new Set(request.values),
      lines: new RecordLines(encoder, request.values, this.out, () => this.lineDone()),
    };
    return this.parts;
  }

  /**
   * The next piece of the body, read by {@link nextBatch}. Pieces shorter than `gatherBytes` are
   * gathered first (a socket may hand over a few bytes at a time, and each piece read costs calls).
   */
  push(bytes: Buffer): void {
    if (this.piece !== undefined) throw new Error("a piece pushed before the last one was read");
    const gathered = this.gathered;
    if (gathered.length === 0 && bytes.length >= this.gatherBytes) {
      this.piece = bytes;
      this.offset = 0;
      return;
    }
    gathered.append(bytes);
    if (gathered.length >= this.gatherBytes) this.release();
  }

  /** The body ended: take the last batches with {@link nextBatch} (which throws if cut off). */
  end(): void {
    if (this.gathered.length > 0) this.release();
    this.ending = true;
  }

  /** True once the body was read to its end and every batch taken. */
  get finished(): boolean {
    return this.ended && this.piece === undefined && this.ready === undefined;
  }

  /** The body read to its end: the framing closed, the drift rule once more, the last batch cut. */
  private finish(): void {
    this.scanner.end();
    this.checkDrift();
    if (this.out.pendingLines > 0 || this.released.length > 0) this.cut();
  }

  /** What was gathered becomes the piece to read (its buffer gathers again once it is read). */
  private release(): void {
    this.piece = this.gathered.view();
    this.offset = 0;
    this.gathered.clear();
  }

  /** The next full batch; undefined once the piece is read. After {@link end}, the last ones. */
  nextBatch(): TranscodedBatch | undefined {
    for (;;) {
      const ready = this.ready;
      if (ready) {
        this.ready = undefined;
        return ready;
      }
      const piece = this.piece;
      if (piece === undefined) {
        if (!this.ending || this.ended) return undefined;
        this.ended = true;
        this.finish();
        continue;
      }
      this.offset = this.scanner.push(piece, this.offset);
      if (this.offset >= piece.length && !this.ready) this.piece = undefined;
    }
  }

  /** {@link ElementReader.paused}: a full batch waits to be taken. */
  paused(): boolean {
    return this.ready !== undefined;
  }

  /** {@link ElementReader.read}: the fast path. */
  read(bytes: Buffer, start: number, limit: number): number {
    const end = this.reading.scanned.read(bytes, start, limit);
    if (end >= 0) {
      this.element = bytes;
      this.elementStart = start;
      this.elementEnd = end;
    }
    return end;
  }

  /** {@link ElementReader.accept}: the record the fast path read, screened and encoded. */
  accept(): void {
    const { scanned: r, lines } = this.reading;
    if (!lines.fits(r)) {
      this.text(this.element.toString("utf8", this.elementStart, this.elementEnd));
      return;
    }
    this.fastRows++;
    this.screen.countRows(1, 0);
    const tag = lines.tagOf(r.valuesId);
    if (this.screen.keepTime(r.timestampS) && this.screen.isFirst(r.timestampS, tag.text)) {
      this.kept(r.timestampS);
      lines.write(r, this.element, tag);
      this.points += r.members;
    }
    this.rowDone();
  }

  /** {@link ElementReader.text}: the reference path, for any element the fast path left. */
  text(text: string): void {
    const { requested, encoder } = this.reading;
    const decoded = decodeElement(text, requested, this.extras, this.options.source);
    if (this.extras.length > 0) {
      this.screen.noteExtras(this.extras.length, this.extras);
      this.extras.length = 0;
    }
    if ("invalid" in decoded) {
      this.screen.countRows(1, 1);
      if (this.screen.keepInvalid(text)) {
        this.pending.push({ kind: "row", text, error: decoded.invalid });
      }
    } else {
      const { record, badMembers } = decoded;
      this.screen.countRows(1, badMembers.length > 0 ? 1 : 0);
      if (this.screen.keep([record]).length > 0) {
        this.kept(Math.floor(parseRecordTime(record.timestamp) / 1000));
        const lines: string[] = [];
        this.points += encoder.encode([record], lines).points;
        for (const line of lines) {
          this.out.appendLine(line);
          this.lineDone();
        }
        for (const { valueId, error } of badMembers) {
          this.pending.push({ kind: "member", text, error, valueId });
        }
      }
    }
    this.rowDone();
  }

  private kept(seconds: number): void {
    this.records++;
    if (this.newestS === undefined || seconds > this.newestS) this.newestS = seconds;
    if (this.oldestS === undefined || seconds < this.oldestS) this.oldestS = seconds;
  }

  /** After each element: the drift rule now and then, and a batch cut once one is full. */
  private rowDone(): void {
    if (++this.rowsSinceCheck >= DRIFT_CHECK_ROWS) this.checkDrift();
    if (this.out.marked) this.cut();
  }

  /** After each line: a full batch ends here (the rest of its record goes into the next). */
  private lineDone(): void {
    if (!this.out.marked && this.out.pendingLines >= this.options.batchLines) this.out.mark();
  }

  /** The drift rule over the rows so far; what was set aside meanwhile may then be written. */
  private checkDrift(): void {
    this.rowsSinceCheck = 0;
    const first = this.pending.find((p) => p.kind === "row") ?? this.pending[0];
    this.screen.checkDrift(first?.error ?? "");
    for (const letter of this.pending) this.released.push(letter);
    this.pending = [];
  }

  /** The lines up to the mark (or all), with what was released, as the ready batch. */
  private cut(): void {
    this.ready = { lines: this.out.take(), setAside: this.released };
    this.released = [];
  }
}
