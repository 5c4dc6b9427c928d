import type { AnswerSource } from "../records/answer-source.js";
import type { DataRecord } from "../records/data-record.js";
import { AS_TEXT, type ElementReader, JsonArrayScanner } from "./json-array-scanner.js";
import { decodeElement, type SetAsideMember } from "./record-decoder.js";

/** Records handed on at a time. */
export const DATA_PAGE_RECORDS = 2000;

/** An element of a GET /data answer that is not a valid record (a "poison row"). */
export interface InvalidRecord {
  readonly text: string;
  /** What is wrong with it (names the member). */
  readonly error: string;
}

/** A record of a GET /data answer whose requested members were not all valid (see keepRequested). */
export interface RecordWithBadMembers {
  /** The record as handed on in {@link DataPage.records}: its good members only. */
  readonly record: DataRecord;
  readonly text: string;
  /** The members removed from it, in answer order: each names itself and what is wrong. */
  readonly members: readonly SetAsideMember[];
}

/** A piece of a GET /data answer: plain records, and what was set aside or cut from them. */
export interface DataPage {
  /** Valid records (with their good members), in answer order. */
  readonly records: DataRecord[];
  /** Elements that are not valid records, in answer order. */
  readonly invalid: readonly InvalidRecord[];
  /** The records of `records` that lost members that were not valid, in answer order. */
  readonly badMembers: readonly RecordWithBadMembers[];
  /** Members that were not requested, removed from this page's rows (counted, not judged). */
  readonly extraMembers: number;
  /** The first few names of them. */
  readonly extraMemberNames: readonly string[];
}

/** A GET /data answer's body, whole: its pieces in order, and what reading it needs. */
export interface AnswerBody {
  readonly pieces: Iterable<Buffer>;
  /** Longest element to accept (API_MAX_RECORD_BYTES). */
  readonly maxRecordBytes: number;
  /** The request and its status, for messages. */
  readonly source: AnswerSource;
}

/** Pages of <= `pageSize` records by the reference path (`audit`, tests); a non-array throws. */
export async function* recordPages(
  answer: AnswerBody,
  requested: readonly string[],
  pageSize = DATA_PAGE_RECORDS,
): AsyncGenerator<DataPage, void, undefined> {
  const pages = new PageBuilder(new Set(requested), answer.source);
  const scanner = new JsonArrayScanner(pages, answer.maxRecordBytes);
  for (const piece of answer.pieces) {
    scanner.push(piece);
    while (pages.full(pageSize)) yield pages.next(pageSize);
  }
  scanner.end();
  while (pages.full(pageSize + 1)) yield pages.next(pageSize);
  yield pages.next();
}

/** Names of removed members a page carries at most. */
const EXTRA_NAMES = 5;

/** The bad members of a page without any. */
const NO_BAD_MEMBERS: readonly RecordWithBadMembers[] = Object.freeze([]);

/** Collects an answer's elements into pages: records, invalid ones, bad members, extras. */
class PageBuilder implements ElementReader {
  private records: DataRecord[] = [];
  private invalid: InvalidRecord[] = [];
  /** Records with bad members and where each stands in `records`. */
  private withBad: { at: number; row: RecordWithBadMembers }[] = [];
  private extras: string[] = [];
  private extraCount = 0;

  constructor(
    private readonly requested: ReadonlySet<string>,
    private readonly source: AnswerSource,
  ) {}

  /** Every element is read as text, with JSON.parse. */
  read(): number {
    return AS_TEXT;
  }

  accept(): void {}

  paused(): boolean {
    return false;
  }

  text(text: string): void {
    const decoded = decodeElement(text, this.requested, this.extras, this.source);
    if ("invalid" in decoded) this.invalid.push({ text, error: decoded.invalid });
    else {
      const { record, badMembers } = decoded;
      if (badMembers.length > 0) {
        this.withBad.push({ at: this.records.length, row: { record, text, members: badMembers } });
      }
      this.records.push(record);
    }
    if (this.extras.length > EXTRA_NAMES) {
      this.extraCount += this.extras.length - EXTRA_NAMES;
      this.extras.length = EXTRA_NAMES;
    }
  }

  /** True when a page of `size` records (or as many invalid ones) is ready. */
  full(size: number): boolean {
    return this.records.length >= size || this.invalid.length >= size;
  }

  /** The next page: up to `size` records (all of them by default) and the invalid ones. */
  next(size = this.records.length): DataPage {
    const { records, withBad } = this;
    // a record's bad members go with it
    const following = withBad.findIndex((b) => b.at >= size);
    const cut = following < 0 ? withBad.length : following;
    const page = {
      records: records.slice(0, size),
      invalid: this.invalid,
      badMembers: cut === 0 ? NO_BAD_MEMBERS : withBad.slice(0, cut).map((b) => b.row),
      extraMembers: this.extraCount + this.extras.length,
      extraMemberNames: this.extras,
    };
    this.records = size >= records.length ? [] : records.slice(size);
    if (cut > 0) this.withBad = withBad.slice(cut);
    for (const b of this.withBad) b.at -= size;
    this.invalid = [];
    this.extras = [];
    this.extraCount = 0;
    return page;
  }
}
