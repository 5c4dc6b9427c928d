import { StringDecoder } from "node:string_decoder";
import { scrubSecrets } from "../logger.js";
import { type BadMember, badMemberMessage, keepRequested } from "../transform/screen-answer.js";
import { excerpt } from "../util/text.js";
import type { Answered, ApiRequester, AttemptContext, CallOptions } from "./api-request.js";
import { encodeSegment } from "./endpoints.js";
import { ApiError, classifyTransportError } from "./errors.js";
import type { Exchange } from "./http-transport.js";
import { JsonArrayError, JsonArraySplitter } from "./json-array-splitter.js";
import { MAX_VALUES_PER_REQUEST, MAX_WINDOW_MS, VALUES_ID } from "./limits.js";
import { type AnswerSource, invalidResponse, parseText, unexpected } from "./parse-answer.js";
import { type DataRecord, dataRecordSchema } from "./schemas.js";
import { formatQueryTime } from "./time-format.js";

/** A GET /data request (spec 4.4): at most 20 values over at most 7 days (spec 8). */
export interface DataQuery {
  readonly deviceId: string;
  readonly resourceId: string;
  readonly values: readonly string[];
  /** Start of the interval (inclusive, second precision). */
  readonly from: Date;
  /** End of the interval (inclusive, second precision). */
  readonly to: Date;
}

/** Caps that keep one hostile answer from using gigabytes. */
export interface DataLimits {
  /** Longest record of a GET /data answer, in characters (API_MAX_RECORD_BYTES). */
  readonly maxRecordBytes: number;
  /** Largest GET /data answer in bytes (API_MAX_ANSWER_BYTES). */
  readonly maxAnswerBytes: number;
}

/** 1 MiB per record (a record of 20 values is under 2 KB), 512 MiB per answer. */
export const DEFAULT_DATA_LIMITS: DataLimits = {
  maxRecordBytes: 1024 * 1024,
  maxAnswerBytes: 512 * 1024 * 1024,
};

/** Records handed on at a time. */
export const DATA_PAGE_RECORDS = 2000;

/** An element of a GET /data answer that is not a valid record (a "poison row"). */
export interface InvalidRecord {
  /** The element's JSON text as received. */
  readonly text: string;
  /** What is wrong with it (names the member). */
  readonly error: string;
}

/** A record of a GET /data answer whose requested members were not all valid (see keepRequested). */
export interface RecordWithBadMembers {
  /** The record as handed on in {@link DataPage.records}: its good members only. */
  readonly record: DataRecord;
  /** The element's JSON text as received. */
  readonly text: string;
  /** The members removed from it, in answer order: each names itself and what is wrong. */
  readonly members: readonly { readonly valueId: string; readonly error: string }[];
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

/** One whole answer to a GET /data request, read as it arrives. */
export interface DataAnswer {
  /** The API's clock when it answered (its `Date` header), epoch ms; undefined without one. */
  readonly serverTimeMs?: number;
  /** Its pages, in answer order; a failure of the answer is thrown from here as an ApiError. */
  readonly pages: AsyncIterable<DataPage>;
}

/** Reads one whole answer: what the caller makes of it (what it wrote, counted). */
export type ConsumeAnswer<T> = (answer: DataAnswer) => Promise<T>;

/** Options of {@link fetchData}. */
export interface DataOptions extends CallOptions {
  /** Records per page (default {@link DATA_PAGE_RECORDS}). */
  readonly pageSize?: number;
}

/**
 * GET /data/<device_id>/<resource_id> (spec 4.4), streamed: the body is split into records as it
 * arrives, each element validated on its own, and handed to `consume` in pages while the download
 * waits, so memory does not grow with the answer. An element that is not a valid record goes in
 * `invalid` and the answer goes on. Refuses queries over spec 8's limits; an answer with a record
 * over `maxRecordBytes` or more than `maxAnswerBytes` fails (not retried).
 *
 * `consume` reads one whole answer and returns what it made of it. When an answer fails midway
 * and is retried, `consume` is called again with the new answer from its start: it never sees an
 * attempt, only answers (its writes are idempotent: a point rewritten is the same point). An
 * error `consume` throws itself ends the request at once. Neither API_TIMEOUT_MS nor the deadline
 * counts the time `consume` spends on a page.
 */
export async function fetchData<T>(
  requester: ApiRequester,
  limits: DataLimits,
  query: DataQuery,
  consume: ConsumeAnswer<T>,
  options: DataOptions = {},
): Promise<Answered<T>> {
  const path = `data/${encodeSegment(query.deviceId)}/${encodeSegment(query.resourceId)}`;
  assertWithinLimits(query, path);
  const requested = new Set(query.values);
  const pageSize = options.pageSize ?? DATA_PAGE_RECORDS;
  return requester.run(
    {
      method: "GET",
      path,
      route: "/data/{device}/{resource}",
      auth: "bearer",
      searchParams: {
        values: query.values.join(","),
        from: formatQueryTime(query.from),
        to: formatQueryTime(query.to),
      },
    },
    (exchange, context) =>
      consume({
        serverTimeMs: context.head.serverTimeMs,
        pages: readPages(exchange, context, { requested, limits, pageSize }),
      }),
    options,
  );
}

/** What reading the pages of one answer needs. */
interface PageReading {
  readonly requested: ReadonlySet<string>;
  readonly limits: DataLimits;
  readonly pageSize: number;
}

/** Names of removed members a page carries at most. */
const EXTRA_NAMES = 5;

/** The bad members of a page without any. */
const NO_BAD_MEMBERS: readonly RecordWithBadMembers[] = Object.freeze([]);

/** The pages of one answer as its bytes arrive; its failures thrown as ApiErrors. */
async function* readPages(
  exchange: Exchange,
  context: AttemptContext,
  reading: PageReading,
): AsyncGenerator<DataPage, void, undefined> {
  const { stream, idle } = exchange;
  const { deadline, endpoint } = context;
  const source: AnswerSource = { endpoint, status: context.head.statusCode };
  const { limits, pageSize } = reading;
  const pages = new PageBuilder(reading.requested, source);
  const splitter = new JsonArraySplitter(limits.maxRecordBytes);
  const decoder = new StringDecoder("utf8");
  /** Hands a page to the caller: neither API_TIMEOUT_MS nor the deadline runs meanwhile. */
  const handOn = async function* (page: DataPage) {
    idle.disarm();
    deadline.suspend();
    yield page;
    deadline.resume();
  };
  let bytes = 0;
  idle.arm();
  try {
    for await (const chunk of stream) {
      const buffer = chunk as Buffer;
      bytes += buffer.length;
      if (bytes > limits.maxAnswerBytes) {
        stream.destroy();
        throw invalidResponse(
          `more than ${limits.maxAnswerBytes} bytes (API_MAX_ANSWER_BYTES); ask for shorter windows or raise it`,
          false,
          "",
          source,
        );
      }
      pages.take(splitter.push(decoder.write(buffer)));
      while (pages.full(pageSize)) yield* handOn(pages.next(pageSize));
      idle.arm();
    }
    idle.disarm();
    pages.take(splitter.push(decoder.end()));
    splitter.end();
  } catch (error) {
    idle.disarm();
    throw answerFailure(error, source, limits);
  }
  while (pages.full(pageSize + 1)) yield* handOn(pages.next(pageSize));
  yield* handOn(pages.next());
}

/** A failure while an answer was read, classified: a malformed body, or the transport's. */
function answerFailure(error: unknown, source: AnswerSource, limits: DataLimits): ApiError {
  if (error instanceof ApiError) return error;
  // the stream broke midway (reset, idle timeout)
  if (!(error instanceof JsonArrayError)) return classifyTransportError(source.endpoint, error);
  const what = error.tooLong
    ? `a record over ${limits.maxRecordBytes} characters (API_MAX_RECORD_BYTES)`
    : `a body that is not a JSON array of records (${error.message})`;
  return new ApiError(`${source.endpoint} answered HTTP ${source.status} with ${what}`, {
    code: "invalid_response",
    endpoint: source.endpoint,
    status: source.status,
    retryable: error.truncated,
  });
}

/** Collects an answer's elements into pages: records, invalid ones, bad members, extras. */
class PageBuilder {
  private records: DataRecord[] = [];
  private invalid: InvalidRecord[] = [];
  /** Records with bad members and where each stands in `records`. */
  private withBad: { at: number; row: RecordWithBadMembers }[] = [];
  private readonly bad: BadMember[] = [];
  private extras: string[] = [];
  private extraCount = 0;

  constructor(
    private readonly requested: ReadonlySet<string>,
    private readonly source: AnswerSource,
  ) {}

  /** True when a page of `size` records (or as many invalid ones) is ready. */
  full(size: number): boolean {
    return this.records.length >= size || this.invalid.length >= size;
  }

  take(texts: readonly string[]): void {
    for (const text of texts) {
      const record = parseRecord(text, this.requested, this.extras, this.bad, this.source);
      if (record instanceof ApiError) this.invalid.push({ text, error: record.message });
      else {
        if (this.bad.length > 0) {
          const members = this.bad.map((member) => ({
            valueId: member.valueId,
            error: badMemberError(member, text, this.source),
          }));
          this.withBad.push({ at: this.records.length, row: { record, text, members } });
          this.bad.length = 0;
        }
        this.records.push(record);
      }
      if (this.extras.length > EXTRA_NAMES) {
        this.extraCount += this.extras.length - EXTRA_NAMES;
        this.extras.length = EXTRA_NAMES;
      }
    }
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

/**
 * One element of a GET /data answer, cut to what was requested (see {@link keepRequested}): the
 * record (its bad members appended to `bad`), or why it is not one.
 */
function parseRecord(
  text: string,
  requested: ReadonlySet<string>,
  extras: string[],
  bad: BadMember[],
  source: AnswerSource,
): DataRecord | ApiError {
  const json = parseText(text, "record", source);
  if (json instanceof ApiError) return json;
  if (keepRequested(json, requested, extras, bad)) return json;
  return unexpected(dataRecordSchema.safeParse(json).error?.issues[0], "record", text, source);
}

/** Why a member of a record was set aside, in the words of an invalid record's error. */
function badMemberError(member: BadMember, text: string, source: AnswerSource): string {
  const message = `an invalid member (${badMemberMessage(member)}); record starts: ${excerpt(text)}`;
  return scrubSecrets(`${source.endpoint} answered HTTP ${source.status} with ${message}`);
}

/** Refuses a data query that the API would reject (spec 8): a programming error upstream. */
function assertWithinLimits(query: DataQuery, path: string): void {
  const endpoint = `GET /${path}`;
  const refuse = (why: string): never => {
    throw new ApiError(`refusing to send ${endpoint}: ${why}`, {
      code: "request_over_limit",
      endpoint,
      retryable: false,
    });
  };
  if (query.values.length === 0) refuse("no values requested");
  if (query.values.length > MAX_VALUES_PER_REQUEST) {
    refuse(`${query.values.length} values requested, the API allows ${MAX_VALUES_PER_REQUEST}`);
  }
  if (query.values.includes(VALUES_ID)) refuse(`${VALUES_ID} must not be requested (spec 4.4)`);
  const fromS = Math.floor(query.from.getTime() / 1000);
  const toS = Math.floor(query.to.getTime() / 1000);
  if (Number.isNaN(fromS) || Number.isNaN(toS)) refuse("from/to is not a valid date");
  if (toS < fromS) refuse("to is before from");
  if ((toS - fromS) * 1000 > MAX_WINDOW_MS) {
    refuse(`the window is ${((toS - fromS) / 86400).toFixed(2)} days, the API allows 7`);
  }
}
