/**
 * The one-pass transcoder of GET /data answers (src/transform/answer-transcoder.ts) against an
 * oracle that shares no code with it (test/support/answer-oracle.ts: JSON.parse, the rules of
 * README "What is dropped", a line-protocol encoder of its own): for any answer, cut into any
 * pieces and batches, with invalid UTF-8 and text of every kind, the same batches (lines, where
 * they are cut, what goes with them), the same rows and members set aside, the same counts.
 */
import fc from "fast-check";
import { JsonArrayError } from "../../src/transform/json-array-scanner.js";
import { DRIFT_MIN_ROWS, SchemaDriftError } from "../../src/transform/screen-answer.js";
import {
  answerBytes,
  elementBytes,
  FROM,
  fuzzCase,
  requestFor,
  transcodeAnswer,
} from "../support/answer-fuzz.js";
import { DRIFT, oracleAnswer } from "../support/answer-oracle.js";
import { propertyRuns } from "../support/property-runs.js";

const A = "e_03_01_00_000_total_solar_power";
const B = "e_03_01_00_000_total_load_power";
const MODE = "e_00_00_03_001_operating_mode";

/** The transcoder's outcome for an answer of `elements` (texts), whole, in batches of 5000. */
function transcode(elements: readonly string[], values: readonly string[]) {
  const body = answerBytes(elements.map(elementBytes), "");
  const { fastRows: _, ...got } = transcodeAnswer(body, requestFor(values), { batchLines: 5000 });
  return got;
}

describe("AnswerTranscoder against its oracle", () => {
  it("same batches, dead letters and counts for any answer, pieces and batch size (property)", () => {
    let fast = 0;
    let rows = 0;
    fc.assert(
      fc.property(fuzzCase, (c) => {
        const request = requestFor(c.values);
        const body = answerBytes(c.elements, c.space);
        const expected = oracleAnswer(c.elements, request, c.batchLines);
        if (expected === DRIFT) {
          expect(() => transcodeAnswer(body, request, c)).toThrow(SchemaDriftError);
          return;
        }
        const { fastRows, ...got } = transcodeAnswer(body, request, c);
        expect(got).toEqual(expected);
        fast += fastRows;
        rows += c.elements.length;
      }),
      { seed: 33, numRuns: propertyRuns(1500) },
    );
    // the property says something about the fast path only if it read a good share of the rows
    expect(fast).toBeGreaterThan(rows / 5);
  });

  it("an answer with text of every kind and invalid UTF-8, cut at every byte", () => {
    const at = (minute: number) => `2026-06-15T00:${String(minute).padStart(2, "0")}:00`;
    const elements = [
      JSON.stringify({ timestamp: at(0), values_id: 1, [A]: 1.5, [MODE]: 'a\nb "q" \\ 😀' }),
      JSON.stringify({ timestamp: at(1), [MODE]: "first\nsecond\r\n", [B]: "12" }),
      `{"timestamp":"${at(2)}","${MODE}":"bad \uE000 \uE001 \uE002 \uE003 end","${A}":2}`,
      `{"timestamp":"${at(3)}","${A}":{},"${B}":-0}`,
      `{"timestamp":"${at(4)}\uE003","${A}":3}`,
      JSON.stringify({ timestamp: at(5), values_id: "x,y=z", alarm_index: 4, alarm_name: 'E"4"' }),
      `{ "timestamp" : "${at(6)}" , "${A}" : 1e3 , "${A}" : 7 , "extra" : "\uE000" }`,
      JSON.stringify({ timestamp: at(6), values_id: "001", [A]: 8 }),
      "not json",
      JSON.stringify({ timestamp: at(7), [MODE]: "\u0000\u001b[31m", [B]: true }),
    ].map(elementBytes);
    const request = requestFor([A, B, MODE, "alarm_index", "alarm_name"]);
    const body = answerBytes(elements, " ");
    const expected = oracleAnswer(elements, request, 2);
    if (expected === DRIFT) throw new Error("the fixed answer is not meant to drift");
    expect(expected.records).toBe(8);
    // the alarm point carries the alarm's name as its first tag (issue #35)
    expect(expected.batches.map((b) => b.text).join("\n")).toContain('alarm,alarm=E"4",device_id=');
    for (let cut = 1; cut < body.length; cut++) {
      const { fastRows: _, ...got } = transcodeAnswer(body, request, {
        sizes: [cut],
        batchLines: 2,
      });
      expect(got).toEqual(expected);
    }
    const bytes = Array.from({ length: body.length }, () => 1);
    const { fastRows: _, ...oneByOne } = transcodeAnswer(body, request, {
      sizes: bytes,
      batchLines: 2,
    });
    expect(oneByOne).toEqual(expected);
  });

  it("reads plain records on the fast path, cut anywhere, batches cut after the row that fills them", () => {
    const records = Array.from({ length: 50 }, (_, i) => ({
      timestamp: new Date((FROM + i * 60) * 1000).toISOString().slice(0, 19),
      values_id: i % 3,
      [A]: i * 1.25,
      [B]: i % 2 ? null : -i,
      [MODE]: i % 5 ? "Standby" : "Ladung läuft",
    }));
    const elements = records.map((r) => elementBytes(JSON.stringify(r)));
    const request = requestFor([A, B, MODE]);
    const body = answerBytes(elements, "");
    const expected = oracleAnswer(elements, request, 7);
    if (expected === DRIFT) throw new Error("plain records do not drift");
    for (const sizes of [[], [1, 1, 1, 7, 13], Array.from({ length: 400 }, () => 7)]) {
      const { fastRows, ...got } = transcodeAnswer(body, request, { sizes, batchLines: 7 });
      expect(got).toEqual(expected);
      expect(fastRows).toBe(50);
    }
    expect(expected.points).toBe(50 + 25 + 50);
    // a batch ends after its 7th line; the rest of that row's lines begin the next one
    expect(expected.batches.map((b) => b.lines)).toEqual([...Array(17).fill(7), 6]);
  });

  it("a key that differs from the one its place predicts in a word or in the tail is read as itself, cut at every byte", () => {
    // keys are compared four bytes at a time, then the bytes after the last whole word: each
    // record below has a key that its place does not predict, differing in a word or the tail
    const [inv1, inv2] = ["e_03_01_00_001_inverter_power", "e_03_01_00_002_inverter_power"];
    const record = (minute: number, keys: readonly string[]) =>
      JSON.stringify({
        timestamp: new Date((FROM + minute * 60) * 1000).toISOString().slice(0, 19),
        ...Object.fromEntries(keys.map((key, k) => [key, minute * 10 + k])),
      });
    const elements = [
      record(0, [A, B, inv1]),
      record(1, [A, B, inv2]), // inv1 predicted: a middle word differs (the same line, though)
      record(2, [B, A, inv1]), // keys of other lengths swapped
      record(3, [A, B, inv1]),
      record(4, [`x${A.slice(1)}`, B, inv1]), // not requested: the first word differs from A's
      record(5, [A, B, `${inv1.slice(0, -1)}x`]), // not requested: the tail differs from inv1's
      record(6, [`${A.slice(0, -1)}R`, B, inv2]), // not requested: A's last word differs
      record(7, [A, B, inv1]),
      record(8, [`${A.slice(0, 13)}X${A.slice(14)}`, B, inv1]), // not requested: a middle word
    ].map(elementBytes);
    const request = requestFor([A, B, inv1, inv2]);
    const body = answerBytes(elements, "");
    const expected = oracleAnswer(elements, request, 5);
    if (expected === DRIFT) throw new Error("plain records do not drift");
    expect(expected.points).toBe(23);
    for (let cut = 1; cut < body.length; cut++) {
      const { fastRows, ...got } = transcodeAnswer(body, request, { sizes: [cut], batchLines: 5 });
      expect(got).toEqual(expected);
      // the records with a key not requested go to the reference path, which drops that key
      expect(fastRows).toBe(5);
    }
  });

  it("invalid rows outside the window are dropped, the others set aside; bad members go with their row", () => {
    const elements = [
      `{"timestamp":"2026-06-15T00:30:00","values_id":0,"${A}":1,"${B}":1e400}`,
      `{"timestamp":"2026-06-16T00:30:00","values_id":0,"${A}":2,"${B}":{}}`,
      '{"timestamp":"2026-06-15T00:40:00","values_id":{}}',
      '{"timestamp":"2026-06-14T00:40:00","values_id":{}}',
      "not json",
    ];
    const got = transcode(elements, [A, B]);
    expect(got.batches.flatMap((b) => b.setAside)).toEqual([
      ["member", elements[0], B],
      ["row", elements[2]],
      ["row", elements[4]],
    ]);
    expect(got.points).toBe(1);
    expect(got.outOfWindow).toBe(2);
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
    const answer = (n: number) => [...good, ...invalid(n).map((t) => `${t}}`)];
    const setAside = (n: number) => transcode(answer(n), [A]).batches.flatMap((b) => b.setAside);
    // 19 invalid of 40, 20 of 41: not more than half; 22 of 43: drift, and nothing set aside
    expect(setAside(19)).toHaveLength(19);
    expect(setAside(DRIFT_MIN_ROWS)).toHaveLength(20);
    expect(() => transcode(answer(22), [A])).toThrow(/^22 of 43 rows of the answer/);
  });

  it("a body that is not a JSON array, or is cut off, throws a JsonArrayError", () => {
    const request = requestFor([A]);
    const read = (text: string) => transcodeAnswer(Buffer.from(text), request, { batchLines: 10 });
    expect(() => read('{"a":1}')).toThrow(JsonArrayError);
    expect(() => read(`[{"timestamp":"2026-06-15T00:00:00","${A}":1}`)).toThrow(/not closed/);
  });
});
