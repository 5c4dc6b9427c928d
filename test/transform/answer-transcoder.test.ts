/**
 * The one-pass transcoder of GET /data answers (src/transform/answer-transcoder.ts) against the
 * reference path it replaces on the hot path: each element read with JSON.parse and
 * keepRequested, screened by an AnswerScreen and encoded by RecordEncoder. For any answer, cut
 * into any pieces and batches, both give the same lines in the same order, the same rows and
 * members set aside, the same counts.
 */
import fc from "fast-check";
import { JsonArrayError } from "../../src/api/json-array-scanner.js";
import { parseRecordTime } from "../../src/api/time-format.js";
import {
  type AnswerRequest,
  AnswerTranscoder,
  type SetAside,
} from "../../src/transform/answer-transcoder.js";
import { linesOf } from "../../src/transform/line-protocol.js";
import { decodeElement } from "../../src/transform/record-decoder.js";
import { RecordEncoder } from "../../src/transform/record-encoder.js";
import {
  AnswerScreen,
  DRIFT_MIN_ROWS,
  SchemaDriftError,
} from "../../src/transform/screen-answer.js";
import { ValueIdDecoder } from "../../src/transform/value-id.js";

const FROM = Date.UTC(2026, 5, 15, 0) / 1000;
const TO = Date.UTC(2026, 5, 15, 1) / 1000;
const SOURCE = { endpoint: "GET /data/d/r", status: 200 };
const A = "e_03_01_00_000_total_solar_power";
const B = "e_03_01_00_000_total_load_power";

/** Ids of every kind: numbers, text, alarms, uncoded, non-ASCII, two readouts of one series. */
const IDS = [
  A,
  B,
  "e_03_07_04_000_total_solar_energy",
  "e_00_00_03_001_operating_mode",
  "e_00_05_00_002_state_of_charge",
  "e_00_20_00_001_temperature_°C",
  "e_03_01_00_001_inverter_power",
  "e_03_01_00_002_inverter_power",
  "alarm_index",
  "alarm_name",
  "protocol_id",
  "Zähler, Nr. 1",
];

interface Result {
  readonly lines: string[];
  readonly setAside: SetAside[];
  readonly records: number;
  readonly points: number;
  readonly newestS: number | undefined;
  readonly stats: unknown;
  readonly fastRows?: number;
}

/** The transcoder over `text` fed in byte pieces of `sizes`, with batches of `batchLines`. */
function transcode(
  text: string,
  request: AnswerRequest,
  sizes: readonly number[] = [],
  batchLines = 5000,
): Result {
  const transcoder = new AnswerTranscoder(request, {
    source: SOURCE,
    decoder: new ValueIdDecoder(),
    batchLines,
    maxRecordBytes: 1024 * 1024,
  });
  const lines: string[] = [];
  const setAside: SetAside[] = [];
  const take = () => {
    for (let batch = transcoder.nextBatch(); batch; batch = transcoder.nextBatch()) {
      // the bytes are valid until the next call: read them now, as a sink would
      lines.push(...linesOf(batch.lines));
      setAside.push(...batch.setAside);
      expect(batch.lines.lines).toBe(linesOf(batch.lines).length);
    }
  };
  const bytes = Buffer.from(text, "utf8");
  let at = 0;
  for (const size of [...sizes, bytes.length]) {
    transcoder.push(bytes.subarray(at, at + size));
    take();
    at += size;
    if (at >= bytes.length) break;
  }
  transcoder.end();
  take();
  return {
    lines,
    setAside,
    records: transcoder.records,
    points: transcoder.points,
    newestS: transcoder.newestS,
    stats: { ...transcoder.screen.stats, extraExamples: transcoder.screen.extraExamples },
    fastRows: transcoder.fastRows,
  };
}

/** The reference path over the same elements: JSON.parse, keepRequested, AnswerScreen, RecordEncoder. */
function reference(elements: readonly string[], request: AnswerRequest): Result {
  const screen = new AnswerScreen(request.fromS, request.toS);
  const encoder = new RecordEncoder(new ValueIdDecoder(), request.deviceId, request.resourceId);
  const requested = new Set(request.values);
  const lines: string[] = [];
  const setAside: SetAside[] = [];
  let records = 0;
  let points = 0;
  let newestS: number | undefined;
  let firstError = "";
  for (const text of elements) {
    const extras: string[] = [];
    const decoded = decodeElement(text, requested, extras, SOURCE);
    screen.noteExtras(extras.length, extras);
    if ("invalid" in decoded) {
      screen.countRows(1, 1);
      firstError ||= decoded.invalid;
      if (screen.keepInvalid(text)) setAside.push({ kind: "row", text, error: decoded.invalid });
      continue;
    }
    const { record, badMembers } = decoded;
    screen.countRows(1, badMembers.length > 0 ? 1 : 0);
    if (screen.keep([record]).length === 0) continue;
    records++;
    const seconds = parseRecordTime(record.timestamp) / 1000;
    newestS = Math.max(newestS ?? seconds, seconds);
    points += encoder.encode([record], lines).points;
    for (const { valueId, error } of badMembers) {
      setAside.push({ kind: "member", text, error, valueId });
    }
  }
  screen.checkDrift(firstError);
  return {
    lines,
    setAside,
    records,
    points,
    newestS,
    stats: { ...screen.stats, extraExamples: screen.extraExamples },
  };
}

const request = (values: readonly string[]): AnswerRequest => ({
  deviceId: "site A+1",
  resourceId: "all_data",
  values,
  fromS: FROM,
  toS: TO,
});

/** A member's JSON text: every kind the fast path reads, and what it leaves to JSON.parse. */
const memberText = fc.oneof(
  { weight: 6, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }).map(String) },
  { weight: 4, arbitrary: fc.integer({ min: -1e6, max: 1e6 }).map(String) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      "1.50",
      "1e3",
      "-0",
      "0.0",
      "0.0000001",
      "0.000001",
      "12345678901234567890",
      "1234567890123456",
      "123456789012345",
      "1E-7",
      "-1.5e+2",
      "1e400",
      "-1e400",
      "01",
      "1.",
    ),
  },
  { weight: 3, arbitrary: fc.constant("null") },
  { weight: 1, arbitrary: fc.constantFrom("true", "false", "tru", "nul") },
  {
    weight: 2,
    arbitrary: fc.string({ unit: "binary", maxLength: 8 }).map((s) => JSON.stringify(s)),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom('" 12 "', '"+3"', '".5"', '"1e2"', '"x"', '"\\u00e4"', '"a\\"b"'),
  },
  { weight: 1, arbitrary: fc.constantFrom("{}", "[1]", '{"a":1}', '"\u0001"') },
);

const timestampText = fc.oneof(
  {
    weight: 8,
    arbitrary: fc
      .integer({ min: FROM - 120, max: TO + 120 })
      .map((s) => JSON.stringify(new Date(s * 1000).toISOString().slice(0, 19))),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '"2026-02-30T00:00:00"',
      '"2026-06-15 00:00:00"',
      '"2026-06-15T24:00:00"',
      '"2026-06-15T00:00:60"',
      "12",
      "null",
      '"2026-06-15T00:00:00Z"',
    ),
  },
);

const valuesIdText = fc.constantFrom(
  "0",
  "1",
  "2",
  '"1"',
  '"001"',
  "null",
  "true",
  '"a b"',
  "1.5",
  "12",
  "1e400",
  '"ä"',
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
        ),
      ),
    })
    .map(({ seconds, valuesId, members }) =>
      JSON.stringify({
        timestamp: new Date(seconds * 1000).toISOString().slice(0, 19),
        values_id: valuesId,
        ...members,
      }),
    );

/** One element of an answer: mostly records, some of them odd, a few not records at all. */
const elementText = (ids: readonly string[]) =>
  fc.oneof(
    { weight: 20, arbitrary: plainText(ids) },
    {
      weight: 20,
      arbitrary: fc
        .record({
          timestamp: timestampText,
          valuesId: fc.option(valuesIdText, { nil: undefined }),
          members: fc.array(
            fc.tuple(fc.constantFrom(...IDS, "extra_member", "timestamp"), memberText),
            {
              maxLength: 8,
            },
          ),
          space: fc.constantFrom("", " ", "\n  "),
          order: fc.nat(3),
        })
        .map(({ timestamp, valuesId, members, space, order }) => {
          const parts = members.map(([key, value]) => `${JSON.stringify(key)}:${space}${value}`);
          const head = [`"timestamp":${timestamp}`];
          if (valuesId !== undefined) head.push(`"values_id":${valuesId}`);
          const all = order === 0 ? [...parts, ...head] : [...head, ...parts];
          return `{${space}${all.join(`,${space}`)}${space}}`;
        }),
    },
    { weight: 1, arbitrary: fc.constantFrom("1", '"x"', "not json", "[]", "{}", '{"timestamp"}') },
  );

describe("AnswerTranscoder: the fast path reads what the reference path reads", () => {
  it("same lines, dead letters and counts for any answer, pieces and batch size (property)", () => {
    let fast = 0;
    let rows = 0;
    fc.assert(
      fc.property(
        fc
          .subarray(IDS, { minLength: 1 })
          .chain((ids) =>
            fc.tuple(fc.array(elementText(ids), { maxLength: 30 }), fc.constant(ids)),
          ),
        fc.array(fc.integer({ min: 1, max: 200 }), { maxLength: 12 }),
        fc.integer({ min: 1, max: 40 }),
        fc.constantFrom("", " ", "\n"),
        ([elements, values], sizes, batchLines, space) => {
          const text = `${space}[${space}${elements.join(`${space},${space}`)}${space}]${space}`;
          const req = request(values);
          let expected: Result | SchemaDriftError;
          try {
            expected = reference(elements, req);
          } catch (error) {
            if (!(error instanceof SchemaDriftError)) throw error;
            expected = error;
          }
          if (expected instanceof SchemaDriftError) {
            expect(() => transcode(text, req, sizes, batchLines)).toThrow(SchemaDriftError);
            return;
          }
          const { fastRows = 0, ...got } = transcode(text, req, sizes, batchLines);
          expect(got).toEqual(expected);
          fast += fastRows;
          rows += elements.length;
        },
      ),
      { seed: 20, numRuns: 1500 },
    );
    // the property says something about the fast path only if it read a good share of the rows
    expect(fast).toBeGreaterThan(rows / 5);
  });

  it("reads plain records on the fast path, cut anywhere", () => {
    const records = Array.from({ length: 50 }, (_, i) => ({
      timestamp: new Date((FROM + i * 60) * 1000).toISOString().slice(0, 19),
      values_id: i % 3,
      [A]: i * 1.25,
      [B]: i % 2 ? null : -i,
      e_00_00_03_001_operating_mode: i % 5 ? "Standby" : "Ladung läuft",
    }));
    const elements = records.map((r) => JSON.stringify(r));
    const req = request([A, B, "e_00_00_03_001_operating_mode"]);
    const expected = reference(elements, req);
    for (const sizes of [[], [1, 1, 1, 7, 13], Array.from({ length: 400 }, () => 7)]) {
      const { fastRows, ...got } = transcode(`[${elements.join(",")}]`, req, sizes, 7);
      expect(got).toEqual(expected);
      expect(fastRows).toBe(50);
    }
    expect(expected.points).toBe(50 + 25 + 50);
  });

  it("invalid rows outside the window are dropped, the others set aside; bad members go with their row", () => {
    const elements = [
      `{"timestamp":"2026-06-15T00:30:00","values_id":0,"${A}":1,"${B}":1e400}`,
      `{"timestamp":"2026-06-16T00:30:00","values_id":0,"${A}":2,"${B}":{}}`,
      '{"timestamp":"2026-06-15T00:40:00","values_id":{}}',
      '{"timestamp":"2026-06-14T00:40:00","values_id":{}}',
      "not json",
    ];
    const got = transcode(`[${elements.join(",")}]`, request([A, B]));
    expect(got.setAside.map((s) => [s.kind, s.text, s.valueId])).toEqual([
      ["member", elements[0], B],
      ["row", elements[2], undefined],
      ["row", elements[4], undefined],
    ]);
    expect(got.lines).toHaveLength(1);
    expect(got.stats).toMatchObject({ outOfWindow: 2 });
  });

  it("an answer made mostly of invalid rows is a change of format (SchemaDriftError)", () => {
    const good = Array.from(
      { length: 21 },
      (_, i) => `{"timestamp":"2026-06-15T00:${String(i).padStart(2, "0")}:00","${A}":${i}}`,
    );
    const invalid = (n: number) =>
      Array.from(
        { length: n },
        (_, i) => `{"timestamp":"2026-06-15T00:${String(i).padStart(2, "0")}:30","${A}":{}`,
      );
    const answer = (n: number) => `[${[...good, ...invalid(n).map((t) => `${t}}`)].join(",")}]`;
    const req = request([A]);
    // 19 invalid of 40, 20 of 41: not more than half; 22 of 43: drift, and nothing set aside
    expect(transcode(answer(19), req).setAside).toHaveLength(19);
    expect(transcode(answer(DRIFT_MIN_ROWS), req).setAside).toHaveLength(20);
    expect(() => transcode(answer(22), req)).toThrow(/^22 of 43 rows of the answer/);
  });

  it("a body that is not a JSON array, or is cut off, throws a JsonArrayError", () => {
    const req = request([A]);
    expect(() => transcode('{"a":1}', req)).toThrow(JsonArrayError);
    expect(() => transcode(`[{"timestamp":"2026-06-15T00:00:00","${A}":1}`, req)).toThrow(
      /not closed/,
    );
  });
});
