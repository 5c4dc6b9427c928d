import type { AnswerSource } from "../records/answer-source.js";
import type { DataRecord } from "../records/data-record.js";
import { AS_TEXT, type ElementReader, JsonArrayScanner } from "./json-array-scanner.js";
import { decodeElement } from "./record-decoder.js";

/** Records handed on at a time. */
export const DATA_PAGE_RECORDS = 2000;

/** A piece of a GET /data answer: its valid records (their good members), in answer order. */
export interface DataPage {
  readonly records: DataRecord[];
}

/** A GET /data answer's body, whole: its pieces in order, and what reading it needs. */
export interface AnswerBody {
  readonly pieces: Iterable<Buffer>;
  /** Longest element to accept (API_MAX_RECORD_BYTES). */
  readonly maxRecordBytes: number;
  /** The request and its status, for messages. */
  readonly source: AnswerSource;
}

/**
 * Pages of <= `pageSize` records by the reference path (`audit`, tests); a non-array throws. Invalid
 * rows and members are left out: the audit counts what a sync writes, and the sync sets them aside.
 */
export async function* recordPages(
  answer: AnswerBody,
  requested: readonly string[],
  pageSize = DATA_PAGE_RECORDS,
): AsyncGenerator<DataPage, void, undefined> {
  const pages = new PageBuilder(new Set(requested), answer.source);
  const scanner = new JsonArrayScanner(pages, answer.maxRecordBytes);
  for (const piece of answer.pieces) {
    scanner.push(piece);
    while (pages.records.length >= pageSize) yield pages.next(pageSize);
  }
  scanner.end();
  while (pages.records.length > pageSize) yield pages.next(pageSize);
  yield pages.next(pageSize);
}

/** Collects an answer's valid records, every element read as text, with JSON.parse. */
class PageBuilder implements ElementReader {
  records: DataRecord[] = [];
  private readonly extras: string[] = [];

  constructor(
    private readonly requested: ReadonlySet<string>,
    private readonly source: AnswerSource,
  ) {}

  read(): number {
    return AS_TEXT;
  }

  accept(): void {}

  paused(): boolean {
    return false;
  }

  text(text: string): void {
    const decoded = decodeElement(text, this.requested, this.extras, this.source);
    if ("record" in decoded) this.records.push(decoded.record);
    this.extras.length = 0;
  }

  /** The next page: up to `size` records. */
  next(size: number): DataPage {
    const records = this.records.splice(0, size);
    return { records };
  }
}
