/**
 * The steps of the bad-input test of arbitrary bodies (fast-check): one body through the pipeline
 * as the answer of one chunk of its own device, and what must come of it, judged by the test's
 * oracle (./oracle.ts).
 */
import { ApiError } from "../../../src/api/errors.js";
import { runBackfillJob } from "../../../src/pipeline/backfill-job.js";
import { queueJob } from "../../support/backfill-jobs.js";
import { expectedPoints, sortPoints } from "../../support/expected-points.js";
import { testRun } from "../../support/pipeline.js";
import { requestsFor } from "../../support/schema-oracle.js";
import { withDeadline } from "../../support/wait.js";
import { chunkKey, type Harness } from "./fake-api.js";
import { elementTexts, facts, judge, keptRecords, letterKey } from "./oracle.js";
import { at, TO_S } from "./scenario.js";
import { letterOf, storedPointsOf } from "./views.js";

/** How often each branch of the property was taken, and what its bodies held. */
export interface Explored {
  array: number;
  wrote: number;
  notArray: number;
  notJsonFailed: number;
  notJsonDone: number;
  deadLetters: number;
  memberLetters: number;
  droppedInvalid: number;
}

/** One body as the answer of the one chunk of `deviceId`'s all_data over [fromS, TO_S]. */
export interface FuzzAsk {
  readonly deviceId: string;
  readonly body: string;
  readonly valueIds: readonly string[];
  readonly fromS: number;
}

/** Runs the body's backfill job; what it left, or undefined when it threw (failed above). */
async function runBody(h: Harness, { deviceId, body, valueIds, fromS }: FuzzAsk) {
  const { pipeline, planned, failures, db } = h;
  const chunk = requestsFor(valueIds, fromS, TO_S);
  expect(chunk.length).toBe(1);
  const key = chunkKey(deviceId, "all_data", at(chunk, 0));
  planned.set(key, { status: 200, body, contentType: "application/json" });
  const { job } = queueJob(
    pipeline.store.jobs,
    { deviceId, resourceId: "all_data", valueIds, fromS, toS: TO_S, reason: "manual" },
    1,
    pipeline.now(),
  );
  const settled = await withDeadline(
    runBackfillJob(pipeline, testRun(pipeline), job).then(
      (j) => ({ job: j }),
      (error: unknown) => ({ error }),
    ),
    10_000,
    `the backfill of ${JSON.stringify(body).slice(0, 80)}`,
  );
  // never thrown: a refused body is the job's failure, not the caller's
  expect(settled).toEqual({ job: expect.anything() });
  if (!("job" in settled)) return undefined;
  const after = settled.job;
  const done = pipeline.store.jobs.completedChunks(job.id).has(0);
  const points = await storedPointsOf(db, deviceId);
  const letters = pipeline.store.deadLetters.list({ deviceId });
  const endpoint = `GET /data/${deviceId}/all_data`;
  const prefix = `${endpoint} answered HTTP 200 with `;
  const errors = failures
    .filter((e) => e instanceof ApiError && e.endpoint === endpoint)
    .map((e) =>
      e instanceof ApiError
        ? { code: e.code, status: e.status, prefixed: e.message.startsWith(prefix) }
        : e,
    );
  return { after, done, points, letters, prefix, errors };
}
type Ran = NonNullable<Awaited<ReturnType<typeof runBody>>>;

/** What a body left, as compared with what a refused body leaves. */
const outcomeOf = ({ after, done, points, letters, prefix, errors }: Ran) => ({
  status: after.status,
  lastErrorPrefixed: after.lastError?.startsWith(prefix) ?? false,
  done,
  points,
  letters: letters.map(letterOf),
  errors,
});

/** Checks what came of one body: refused, or its array judged by the oracle. */
export async function checkBody(h: Harness, ask: FuzzAsk, seen: Explored): Promise<void> {
  const { body } = ask;
  const ran = await runBody(h, ask);
  if (ran === undefined) return;
  /** What a refused body leaves: a failed job, nothing stored, no dead letter. */
  const refused = {
    status: "failed",
    lastErrorPrefixed: true,
    done: false,
    points: [],
    letters: [],
    errors: [{ code: "invalid_response", status: 200, prefixed: true }],
  };
  const outcome = outcomeOf(ran);

  let json: { readonly value: unknown } | undefined;
  try {
    json = { value: JSON.parse(body) };
  } catch {
    json = undefined;
  }
  if (json !== undefined && !Array.isArray(json.value)) {
    // JSON of another shape
    seen.notArray++;
    expect(outcome).toEqual(refused);
    return;
  }
  if (json !== undefined && Array.isArray(json.value)) {
    checkArray(ask, ran, outcome, json.value, seen);
    return;
  }
  checkNotJson(ask, ran, seen, outcome, refused);
}

/**
 * An array: its valid rows kept as the documented contract says, every distinct bad element a
 * dead letter, the chunk done.
 */
function checkArray(
  { deviceId, body, valueIds, fromS }: FuzzAsk,
  { after, points, letters }: Ran,
  outcome: ReturnType<typeof outcomeOf>,
  elements: readonly unknown[],
  seen: Explored,
): void {
  seen.array++;
  const texts = elementTexts(body) ?? [];
  expect(texts.length).toBe(elements.length);
  expect(texts.length).toBeLessThan(20);
  const judged = judge(texts, valueIds, fromS, TO_S);
  seen.deadLetters += judged.letters.length;
  seen.memberLetters += judged.letters.filter((k) => k.startsWith('["member"')).length;
  seen.droppedInvalid += judged.dropped;
  const expected = expectedPoints(
    deviceId,
    "all_data",
    keptRecords(judged.valid, valueIds, fromS, TO_S),
  );
  if (expected.length > 0) seen.wrote++;
  expect({
    ...outcome,
    points: sortPoints(points),
    letters: outcome.letters.length,
  }).toEqual({
    status: "done",
    lastErrorPrefixed: false,
    done: true,
    points: sortPoints(expected),
    letters: judged.letters.length,
    errors: [],
  });
  expect(letters.map((l) => letterKey(l.kind, l.payload, l.valueIds)).sort()).toEqual(
    judged.letters,
  );
  expect(after.lastError).toBeNull();
}

/**
 * Not JSON: refused, or an intact array with a malformed element (done, with dead letters);
 * either way every stored field comes from a valid element of the body.
 */
function checkNotJson(
  { deviceId, body, valueIds, fromS }: FuzzAsk,
  { after, done, points, letters, errors }: Ran,
  seen: Explored,
  outcome: unknown,
  refused: unknown,
): void {
  const pieces = elementTexts(body) ?? [];
  expect(pieces.length).toBeLessThan(20);
  const judged = judge(pieces, valueIds, fromS, TO_S);
  const allowed = new Set(
    judged.valid.flatMap((record) =>
      facts(expectedPoints(deviceId, "all_data", keptRecords([record], valueIds, fromS, TO_S))),
    ),
  );
  expect(facts(points).filter((f) => !allowed.has(f))).toEqual([]);
  if (after.status === "done") {
    seen.notJsonDone++;
    // the array was intact: its pieces are its elements, the malformed one a dead letter
    seen.deadLetters += judged.letters.length;
    seen.droppedInvalid += judged.dropped;
    expect({
      done,
      letters: letters.map((l) => letterKey(l.kind, l.payload, l.valueIds)).sort(),
      nonEmpty: letters.length > 0,
      errors,
    }).toEqual({
      done: true,
      letters: judged.letters,
      nonEmpty: true,
      errors: [],
    });
    return;
  }
  seen.notJsonFailed++;
  // (a body here is far smaller than a page: nothing is handed on before the failure)
  expect(outcome).toEqual(refused);
}
