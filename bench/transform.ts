import { isDeepStrictEqual } from "node:util";
import { InfluxDB, Point } from "@influxdata/influxdb-client";
import fc from "fast-check";
import type { DataRecord } from "../src/records/data-record.js";
import { createFleet } from "../src/simulator/model/fleet.js";
import { AnswerTranscoder } from "../src/transform/answer-transcoder.js";
import { valuesIdTag } from "../src/transform/record-encoder.js";
import { SchemaDriftError } from "../src/transform/screen-answer.js";
import { decodeValueId, ValueIdDecoder } from "../src/transform/value-id.js";
import {
  answerBytes as fuzzAnswerBytes,
  fuzzCase,
  requestFor,
  transcodeAnswer,
} from "../test/support/answer-fuzz.js";
import { DRIFT, oracleAnswer } from "../test/support/answer-oracle.js";

const SOURCE = { endpoint: "GET /data/hybrid-site-01/all_data", status: 200 };

/** Records of the simulator holding at least `values` non-null values (one device, 20 values a request). */
export function sampleRecords(values: number): {
  records: DataRecord[];
  values: number;
  ids: string[];
} {
  const fleet = createFleet({ seed: 1, resolutionS: 60 });
  const device = "hybrid-site-01";
  const ids = (fleet.valueIds(device, "all_data") ?? [])
    .filter((v) => v !== "values_id")
    .slice(0, 20);
  const records: DataRecord[] = [];
  let count = 0;
  let fromS = Date.UTC(2026, 0, 1) / 1000;
  while (count < values) {
    const batch = fleet.records(device, "all_data", ids, fromS, fromS + 7 * 86_400);
    for (const r of batch) {
      records.push(r);
      for (const [k, v] of Object.entries(r))
        if (k !== "timestamp" && k !== "values_id" && v !== null) count++;
      if (count >= values) break;
    }
    fromS += 7 * 86_400 + 1;
  }
  return { records, values: count, ids };
}

/** An answer as the API sends it: a week of records as a JSON array, as bytes, and its window. */
export interface AnswerBytes {
  readonly bytes: Buffer;
  readonly fromS: number;
  readonly toS: number;
}

/** The answers of `records` (a week each, as the backfill asks for them). */
export function answerBytes(records: readonly DataRecord[]): AnswerBytes[] {
  const answers: AnswerBytes[] = [];
  const weekS = 7 * 86_400;
  let week: DataRecord[] = [];
  let fromS = Number.NaN;
  for (const record of records) {
    const s = Date.parse(`${record.timestamp}Z`) / 1000;
    if (week.length > 0 && s > fromS + weekS) {
      answers.push({ bytes: Buffer.from(JSON.stringify(week)), fromS, toS: fromS + weekS });
      week = [];
    }
    if (week.length === 0) fromS = s;
    week.push(record);
  }
  if (week.length > 0) {
    answers.push({ bytes: Buffer.from(JSON.stringify(week)), fromS, toS: fromS + weekS });
  }
  return answers;
}

/**
 * Our path, as a backfill runs it: each answer's bytes, in 64 KiB pieces, through the
 * AnswerTranscoder into batches of 5000 lines. Returns points.
 */
export function ourPath(answers: readonly AnswerBytes[], values: readonly string[]): number {
  let points = 0;
  for (const { bytes, fromS, toS } of answers) {
    const transcoder = new AnswerTranscoder(
      { deviceId: "hybrid-site-01", resourceId: "all_data", values, fromS, toS },
      { source: SOURCE, decoder: new ValueIdDecoder(), batchLines: 5000, maxRecordBytes: 2 ** 20 },
    );
    for (let at = 0; at < bytes.length; at += 65_536) {
      transcoder.push(bytes.subarray(at, at + 65_536));
      while (transcoder.nextBatch());
    }
    transcoder.end();
    while (transcoder.nextBatch());
    points += transcoder.points;
  }
  return points;
}

/**
 * The naive path from the same bytes: JSON.parse, then a Point per value written with writePoint
 * (serialised into its buffer).
 */
export function naivePath(answers: readonly AnswerBytes[], expectedPoints: number): number {
  // one batch that is never sent: what is measured is Point building and writePoint's serialising
  const api = new InfluxDB({ url: "http://127.0.0.1:9" }).getWriteApi("o", "b", "s", {
    batchSize: expectedPoints + 1,
    maxBatchBytes: Number.MAX_SAFE_INTEGER,
    flushInterval: 0,
  });
  let points = 0;
  const records = answers.flatMap(
    (answer) => JSON.parse(answer.bytes.toString("utf8")) as DataRecord[],
  );
  for (const record of records) {
    const seconds = Date.parse(`${record.timestamp}Z`) / 1000;
    for (const [id, member] of Object.entries(record)) {
      if (id === "timestamp" || id === "values_id" || member === null) continue;
      const d = decodeValueId(id);
      const point = new Point(d.measurement || "_")
        .tag("device_id", "hybrid-site-01")
        .tag("resource_id", "all_data")
        .tag("type", d.type)
        .tag("unit", d.unit)
        .tag("values_id", valuesIdTag(record.values_id))
        .timestamp(seconds);
      if (typeof member === "number") point.floatField("value", member);
      else point.stringField("text", String(member));
      api.writePoint(point);
      points++;
    }
  }
  void api.dispose();
  return points;
}

/** How the big record arrives: its pieces' size, and the transcoder's gathering (undefined: default). */
export interface BigRecordWay {
  readonly pieceBytes: number;
  readonly gatherBytes?: number;
}

/**
 * Median time (ms) the AnswerTranscoder takes for one answer holding a 1 MB record, for each way
 * it may arrive. The ways take turns within each round (after a warm-up round), so the machine's
 * drift touches them alike.
 */
export function bigRecordMs(ways: readonly BigRecordWay[], rounds: number): number[] {
  const id = "e_00_00_06_000_note";
  const record = { timestamp: "2026-01-01T00:00:00", values_id: 0, [id]: "x".repeat(1 << 20) };
  const bytes = Buffer.from(JSON.stringify([record]));
  // the pieces as a socket hands them over (their making is not the transcoder's time)
  const pieced = ways.map((way) => {
    const pieces: Buffer[] = [];
    for (let at = 0; at < bytes.length; at += way.pieceBytes)
      pieces.push(bytes.subarray(at, at + way.pieceBytes));
    return pieces;
  });
  const times: number[][] = ways.map(() => []);
  for (let round = 0; round <= rounds; round++) {
    ways.forEach((way, w) => {
      const ms = readBigRecord(pieced[w] ?? [], id, way.gatherBytes);
      if (round > 0) times[w]?.push(ms);
    });
  }
  return times.map((t) => {
    t.sort((a, b) => a - b);
    return t[Math.floor(t.length / 2)] ?? Number.NaN;
  });
}

/** One read of the big record's pieces, in ms. */
function readBigRecord(pieces: readonly Buffer[], id: string, gatherBytes?: number): number {
  const started = performance.now();
  const transcoder = new AnswerTranscoder(
    {
      deviceId: "d",
      resourceId: "all_data",
      values: [id],
      fromS: Date.UTC(2025, 11, 31) / 1000,
      toS: Date.UTC(2026, 0, 2) / 1000,
    },
    {
      source: SOURCE,
      decoder: new ValueIdDecoder(),
      batchLines: 5000,
      maxRecordBytes: 2 ** 22,
      ...(gatherBytes === undefined ? {} : { gatherBytes }),
    },
  );
  let lines = 0;
  for (const piece of pieces) {
    transcoder.push(piece);
    for (let b = transcoder.nextBatch(); b; b = transcoder.nextBatch()) lines += b.lines.lines;
  }
  transcoder.end();
  for (let b = transcoder.nextBatch(); b; b = transcoder.nextBatch()) lines += b.lines.lines;
  if (lines !== 1) throw new Error(`the big record made ${lines} lines`);
  return performance.now() - started;
}

/** The differential fuzz of the transcoder (test/support/answer-fuzz.ts), longer than the suite's. */
export function fuzzTranscoder(
  runs: number,
  seed: number,
): { readonly ms: number; readonly failure?: string } {
  const started = performance.now();
  const details = fc.check(
    fc.property(fuzzCase, (c) => {
      const request = requestFor(c.values);
      const body = fuzzAnswerBytes(c.elements, c.space);
      const expected = oracleAnswer(c.elements, request, c.batchLines);
      if (expected === DRIFT) {
        try {
          transcodeAnswer(body, request, c);
        } catch (error) {
          return error instanceof SchemaDriftError;
        }
        return false;
      }
      const { fastRows: _, ...got } = transcodeAnswer(body, request, c);
      return isDeepStrictEqual(got, expected);
    }),
    { seed, numRuns: runs },
  );
  const ms = performance.now() - started;
  return details.failed
    ? { ms, failure: `seed ${seed}: ${fc.stringify(details.counterexample)}` }
    : { ms };
}
