/**
 * The differential fuzz of the transcoder of GET /data answers: generated answers (odd members,
 * odd timestamps, repeated keys, text with line breaks, quotes, backslashes, emoji and invalid
 * UTF-8, elements that are no records), read by {@link AnswerTranscoder} in generated pieces and
 * batches, against {@link oracleAnswer}. The suite runs it with fixed seeds
 * (test/transform/answer-transcoder.test.ts), the bench longer (bench/run.ts, "fuzz").
 */
import { isUtf8 } from "node:buffer";
import fc from "fast-check";
import { type AnswerRequest, AnswerTranscoder } from "../../src/transform/answer-transcoder.js";
import { ValueIdDecoder } from "../../src/transform/value-id.js";
import { type AnswerOutcome, type BatchView, ID_SHAPES } from "./answer-oracle.js";

export const FROM = Date.UTC(2026, 5, 15, 0) / 1000;
export const TO = Date.UTC(2026, 5, 15, 1) / 1000;
export const IDS: readonly string[] = [...ID_SHAPES.keys()];

/** The request an answer is for, asking for `values`. */
export const requestFor = (values: readonly string[]): AnswerRequest => ({
  deviceId: "site A+1,\\x",
  resourceId: "all_data",
  values,
  fromS: FROM,
  toS: TO,
});

/**
 * Characters standing for bytes that are not UTF-8, replaced by {@link answerBytes}: a lone
 * FF FE, an overlong C0 AF, a surrogate ED A0 80, a truncated E2 82.
 */
const BAD_UTF8: ReadonlyMap<string, Buffer> = new Map([
  ["\uE000", Buffer.from([0xff, 0xfe])],
  ["\uE001", Buffer.from([0xc0, 0xaf])],
  ["\uE002", Buffer.from([0xed, 0xa0, 0x80])],
  ["\uE003", Buffer.from([0xe2, 0x82])],
]);

/** The bytes of one element's text, with the stand-ins of {@link BAD_UTF8} put back. */
export function elementBytes(text: string): Buffer {
  const parts: Buffer[] = [];
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const bad = BAD_UTF8.get(text.charAt(i));
    if (bad === undefined) continue;
    parts.push(Buffer.from(text.slice(start, i), "utf8"), bad);
    start = i + 1;
  }
  parts.push(Buffer.from(text.slice(start), "utf8"));
  return Buffer.concat(parts);
}

/** A body: the elements in an array, with `space` around everything. */
export function answerBytes(elements: readonly Buffer[], space: string): Buffer {
  const gap = Buffer.from(`${space},${space}`);
  const parts: Buffer[] = [Buffer.from(`${space}[${space}`)];
  for (const [i, element] of elements.entries()) parts.push(...(i > 0 ? [gap] : []), element);
  parts.push(Buffer.from(`${space}]${space}`));
  return Buffer.concat(parts);
}

/** Text of any kind: plain, line breaks, quotes, backslashes, control characters, emoji, bad bytes. */
export const hostileText = fc
  .array(
    fc.oneof(
      { weight: 4, arbitrary: fc.string({ maxLength: 4 }) },
      {
        weight: 3,
        arbitrary: fc.constantFrom("\n", "\r\n", '"', "\\", "\t", "\u0000", "\u001b[31m"),
      },
      { weight: 2, arbitrary: fc.constantFrom("😀", "ä", "€", "\u2028", "𝄞") },
      { weight: 2, arbitrary: fc.constantFrom(...BAD_UTF8.keys()) },
      { weight: 1, arbitrary: fc.constantFrom(" 12 ", "+3", ".5", "1e2", "=", ",", " ") },
    ),
    { maxLength: 6 },
  )
  .map((parts) => parts.join(""));

/** A member's JSON text: every kind the fast path reads, and what it leaves to JSON.parse. */
const memberText = fc.oneof(
  { weight: 6, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }).map(String) },
  { weight: 4, arbitrary: fc.integer({ min: -1e6, max: 1e6 }).map(String) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      ...["1.50", "1e3", "-0", "0.0", "0.0000001", "0.000001", "12345678901234567890"],
      ...["1234567890123456", "123456789012345", "1E-7", "-1.5e+2", "1e400", "-1e400", "01", "1."],
    ),
  },
  { weight: 3, arbitrary: fc.constant("null") },
  { weight: 1, arbitrary: fc.constantFrom("true", "false", "tru", "nul") },
  { weight: 4, arbitrary: hostileText.map((s) => JSON.stringify(s)) },
  {
    weight: 2,
    arbitrary: fc.constantFrom('" 12 "', '"+3"', '".5"', '"1e2"', '"x"', '"\\u00e4"', '"a\\"b"'),
  },
  { weight: 1, arbitrary: fc.constantFrom('"\\ud800"', '"a\\nb\\\\c"', '"\\/"', '"\u0001"') },
  { weight: 1, arbitrary: fc.constantFrom("{}", "[1]", '{"a":1}') },
);

const isoText = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 19);

const timestampText = fc.oneof(
  {
    weight: 8,
    arbitrary: fc
      .integer({ min: FROM - 120, max: TO + 120 })
      .map((s) => JSON.stringify(isoText(s))),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      ...['"2026-02-30T00:00:00"', '"2026-06-15 00:00:00"', '"2026-06-15T24:00:00"'],
      ...[
        '"2026-06-15T00:00:60"',
        "12",
        "null",
        '"2026-06-15T00:00:00Z"',
        '"2026-06-15T00:10:00\uE000"',
      ],
    ),
  },
);

const valuesIdText = fc.constantFrom(
  ...["0", "1", "2", '"1"', '"001"', "null", "true", '"a b"', "1.5", "12", "1e400", '"ä"'],
  ...['"x,y=z"', '" "', '"\uE001"', "{}"],
);

/** A plain record: requested ids, plain values, a real timestamp (what an answer mostly is). */
const plainText = (ids: readonly string[]) =>
  fc
    .record({
      seconds: fc.integer({ min: FROM - 60, max: TO + 60 }),
      valuesId: fc.constantFrom(0, 1, 2, "1"),
      members: fc.dictionary(
        fc.constantFrom(...ids),
        fc.oneof(
          fc.double({ noNaN: true, noDefaultInfinity: true }),
          fc.integer(),
          fc.constant(null),
          fc.boolean(),
          fc.string({ maxLength: 6 }),
          hostileText,
        ),
      ),
    })
    .map(({ seconds, valuesId, members }) =>
      JSON.stringify({ timestamp: isoText(seconds), values_id: valuesId, ...members }),
    );

/** A record written by hand: any member text, keys repeated, spaces anywhere, any order. */
const oddText = fc
  .record({
    timestamp: timestampText,
    valuesId: fc.option(valuesIdText, { nil: undefined }),
    members: fc.array(
      fc.tuple(
        fc.constantFrom(...IDS, "extra_member", "timestamp", "extra\uE002", "__proto__"),
        memberText,
      ),
      { maxLength: 8 },
    ),
    space: fc.constantFrom("", " ", "\n  ", "\t"),
    order: fc.nat(3),
  })
  .map(({ timestamp, valuesId, members, space, order }) => {
    const parts = members.map(([key, value]) => `${JSON.stringify(key)}:${space}${value}`);
    const head = [`"timestamp":${timestamp}`];
    if (valuesId !== undefined) head.push(`"values_id":${valuesId}`);
    const all = order === 0 ? [...parts, ...head] : [...head, ...parts];
    return `{${space}${all.join(`,${space}`)}${space}}`;
  });

/** One element of an answer: mostly records, some of them odd, a few not records at all. */
const elementText = (ids: readonly string[]) =>
  fc.oneof(
    { weight: 20, arbitrary: plainText(ids) },
    { weight: 20, arbitrary: oddText },
    {
      weight: 1,
      arbitrary: fc.constantFrom("1", '"x"', "not json", "[]", "{}", '{"timestamp"}', '"\uE000"'),
    },
  );

/** One case of the fuzz: an answer's elements, what it asks for, how it arrives and is cut. */
export interface FuzzCase {
  readonly elements: readonly Buffer[];
  readonly values: readonly string[];
  readonly space: string;
  /** Sizes of the first pieces (the rest comes in one). */
  readonly sizes: readonly number[];
  readonly batchLines: number;
  readonly gatherBytes: number;
}

export const fuzzCase: fc.Arbitrary<FuzzCase> = fc
  .subarray([...IDS], { minLength: 1 })
  .chain((values) =>
    fc.record({
      elements: fc.array(elementText(values).map(elementBytes), { maxLength: 30 }),
      values: fc.constant(values),
      space: fc.constantFrom("", " ", "\n"),
      sizes: fc.array(fc.integer({ min: 1, max: 200 }), { maxLength: 12 }),
      batchLines: fc.integer({ min: 1, max: 40 }),
      gatherBytes: fc.constantFrom(1, 64, 16 * 1024),
    }),
  );

/** Bytes written as text; bytes that are not UTF-8 are shown as such, never decoded as U+FFFD. */
function textOf(bytes: Buffer): string {
  return isUtf8(bytes) ? bytes.toString("utf8") : `not UTF-8: ${bytes.toString("hex")}`;
}

/** What the transcoder gives (and how many rows its fast path read), in the oracle's terms. */
export function transcodeAnswer(
  body: Buffer,
  request: AnswerRequest,
  cut: {
    readonly sizes?: readonly number[];
    readonly batchLines: number;
    readonly gatherBytes?: number;
  },
): AnswerOutcome & { readonly fastRows: number } {
  const transcoder = new AnswerTranscoder(request, {
    source: { endpoint: "GET /data/d/r", status: 200 },
    decoder: new ValueIdDecoder(),
    batchLines: cut.batchLines,
    maxRecordBytes: 1024 * 1024,
    gatherBytes: cut.gatherBytes ?? 1,
  });
  const batches: BatchView[] = [];
  const take = () => {
    for (let batch = transcoder.nextBatch(); batch; batch = transcoder.nextBatch()) {
      // the bytes are valid until the next call: read them now, as a sink would
      const setAside = batch.setAside.map(({ kind, text, valueId, error }) => {
        if (error === "") throw new Error(`a ${kind} set aside without a reason`);
        return valueId === undefined ? ([kind, text] as const) : ([kind, text, valueId] as const);
      });
      batches.push({ text: textOf(batch.lines.bytes), lines: batch.lines.lines, setAside });
    }
  };
  let at = 0;
  for (const size of [...(cut.sizes ?? []), body.length]) {
    transcoder.push(body.subarray(at, at + size));
    take();
    at += size;
    if (at >= body.length) break;
  }
  transcoder.end();
  take();
  const { stats, extraExamples } = transcoder.screen;
  return {
    batches,
    records: transcoder.records,
    points: transcoder.points,
    oldestS: transcoder.oldestS,
    newestS: transcoder.newestS,
    ...stats,
    extraExamples: [...extraExamples],
    fastRows: transcoder.fastRows,
  };
}
