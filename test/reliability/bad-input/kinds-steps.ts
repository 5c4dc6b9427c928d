/**
 * The steps of the bad-input test of the bad kinds ("a bad row becomes a dead letter, a bad body
 * fails its chunk, extras are dropped, odd data is written"): a bad kind on seeded chunks of a
 * backfill, the run, and what must come of each chunk, of the counters and of InfluxDB.
 */
import { ApiError } from "../../../src/api/errors.js";
import { type BackfillRunResult, runBackfillJobs } from "../../../src/pipeline/backfill.js";
import { type PlannedBackfill, planBackfill } from "../../../src/pipeline/backfill-plan.js";
import type { Chunk } from "../../../src/pipeline/plan-chunks.js";
import type { DataRecord } from "../../../src/records/data-record.js";
import type { SimulatedFleet } from "../../../src/simulator/model/fleet.js";
import { type DeadLetter, MAX_DEAD_LETTER_CHARS } from "../../../src/state/types.js";
import { queueJob } from "../../support/backfill-jobs.js";
import { expectedPoints, sortPoints } from "../../support/expected-points.js";
import { seededRandom } from "../../support/reliability-bounds.js";
import { requestsFor } from "../../support/schema-oracle.js";
import { withDeadline } from "../../support/wait.js";
import {
  BAD_KINDS,
  type BadKind,
  DEAD_LETTER_KINDS,
  FAILING,
  FAILING_KINDS,
  fails,
  MEMBER_LETTER_KINDS,
  madeAsDeclared,
  type Outcome,
} from "./bad-kinds.js";
import { type Made, MEGABYTE_TEXT } from "./bad-makers.js";
import { chunkKey, type Harness } from "./fake-api.js";
import { at, CHUNKS, DEVICE, FROM_S, RETRIES, RUN_DEADLINE_MS, SEED, TO_S } from "./scenario.js";
import { letterOf, sameIds, shown, storedPointsOf } from "./views.js";

/** A chunk of the backfill: its kind (undefined = good records) and what its body must give. */
export interface Assigned {
  readonly resourceId: string;
  readonly chunk: Chunk;
  readonly kind: BadKind | undefined;
  readonly made: Made;
}

/** A "chunk failed" log line. */
interface FailedLog {
  readonly resource: string;
  readonly chunk: number;
  readonly error: string;
}

/**
 * Plans the backfill, lands the bad kinds on seeded chunks and plans each chunk's body in
 * `h.planned`, recording it in `assigned`. Returns the planned jobs.
 */
export async function assignKinds(
  h: Harness,
  fleet: SimulatedFleet,
  assigned: Map<string, Assigned>,
): Promise<readonly PlannedBackfill[]> {
  const { pipeline, planned } = h;
  const { jobs: plan } = await planBackfill(pipeline, {
    devices: [DEVICE],
    fromS: FROM_S,
    toS: TO_S,
  });
  const chunks = plan.flatMap((p) =>
    requestsFor(p.spec.valueIds, p.spec.fromS, p.spec.toS).map((chunk) => ({
      resourceId: p.spec.resourceId,
      chunk,
    })),
  );
  expect(chunks.length).toBe(CHUNKS);
  expect(chunks.length).toBeGreaterThan(BAD_KINDS.length + 5);
  // the bad kinds land on seeded chunks; the first (failing) kind on a battery_bank chunk and
  // the second (failing) on an all_data chunk, so that both jobs fail
  const random = seededRandom(SEED);
  const order = chunks.map((_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = random.int(0, i);
    [order[i], order[j]] = [at(order, j), at(order, i)];
  }
  const firstOf = (resourceId: string): number => {
    const found = order.find((i) => chunks[i]?.resourceId === resourceId);
    if (found === undefined) throw new Error(`no chunk of ${resourceId}`);
    return found;
  };
  const pinned = [firstOf("battery_bank"), firstOf("all_data")];
  const slots = [...pinned, ...order.filter((i) => !pinned.includes(i))];
  const kindOf = new Map(BAD_KINDS.map((kind, k) => [at(slots, k), kind]));
  chunks.forEach(({ resourceId, chunk }, i) => {
    const records = fleet.records(DEVICE, resourceId, chunk.values, chunk.fromS, chunk.toS);
    expect(records.length).toBeGreaterThan(2);
    const kind = kindOf.get(i);
    const made: Made = kind?.make(records, chunk) ?? {
      text: JSON.stringify(records),
      written: records,
    };
    // a kind decides per chunk window, as the pipeline does; here it must come out as declared
    const name = kind?.name ?? "good records";
    expect({ name, asDeclared: madeAsDeclared(kind?.outcome ?? "accepted", made) }).toEqual({
      name,
      asDeclared: true,
    });
    const key = chunkKey(DEVICE, resourceId, chunk);
    planned.set(key, {
      status: 200,
      body: made.text,
      contentType: made.contentType ?? "application/json",
    });
    assigned.set(key, { resourceId, chunk, kind, made });
  });
  expect(kindOf.size).toBe(BAD_KINDS.length);
  const failingResources = new Set(
    [...assigned.values()].filter((a) => fails(a.kind)).map((a) => a.resourceId),
  );
  expect(failingResources).toEqual(new Set(["all_data", "battery_bank"]));
  return plan;
}

/** Runs the planned jobs: each job has a failed chunk, so both end 'failed'. */
export async function runKinds(
  h: Harness,
  plan: readonly PlannedBackfill[],
): Promise<{
  result: BackfillRunResult;
  doneOf: Map<string, Set<number>>;
  failedLogs: FailedLog[];
}> {
  const { pipeline, logLines } = h;
  const jobs = plan.map((p) => queueJob(pipeline.store.jobs, p.spec, p.chunks, pipeline.now()).job);
  const result = await withDeadline(
    runBackfillJobs(pipeline, jobs),
    RUN_DEADLINE_MS,
    "the backfill of fuzzed responses",
  );

  // each job has a failed chunk: it ends 'failed' (not thrown) and never moves the cursor
  expect(result.status).toBe("failed");
  expect(result.jobs.map((j) => j.resourceId).sort()).toEqual(["all_data", "battery_bank"]);
  for (const job of result.jobs) {
    expect(job.status).toBe("failed");
    expect(job.lastError).toEqual(expect.any(String));
    expect(job.nextAttemptS).toBeGreaterThan(TO_S);
    expect(pipeline.store.cursors.get(DEVICE, job.resourceId)).toBeUndefined();
  }
  const doneOf = new Map(
    result.jobs.map((j) => [j.resourceId, pipeline.store.jobs.completedChunks(j.id)]),
  );
  const failedLogs = logLines
    .filter((l) => l.includes('"msg":"chunk failed"'))
    .map((l) => JSON.parse(l) as FailedLog);
  // each job's lastError is one of its chunks' errors
  for (const job of result.jobs) {
    expect(failedLogs.some((f) => f.resource === job.resourceId && f.error === job.lastError)).toBe(
      true,
    );
  }
  return { result, doneOf, failedLogs };
}

/** What the checks of one chunk know of it. */
interface ChunkSeen {
  readonly what: string;
  readonly outcome: Outcome;
  readonly endpoint: string;
  readonly prefix: string;
  readonly says: string;
  readonly done: boolean;
  readonly failedLog: FailedLog | undefined;
  readonly requests: number;
}

/**
 * Checks what came of each chunk (its dead letters, done or failed, its requests) and that every
 * dead letter belongs to a chunk's bad row or member.
 */
export function checkChunks(
  h: Harness,
  assigned: ReadonlyMap<string, Assigned>,
  { doneOf, failedLogs }: Pick<Awaited<ReturnType<typeof runKinds>>, "doneOf" | "failedLogs">,
): void {
  const { pipeline, api } = h;
  const letters = pipeline.store.deadLetters.list({ deviceId: DEVICE });

  let checked = 0;
  let lettersMatched = 0;
  for (const [key, a] of assigned) {
    const { resourceId, chunk, kind } = a;
    checked++;
    const outcome: Outcome = kind?.outcome ?? "accepted";
    const what = `${kind?.name ?? "good records"} (${resourceId} chunk ${chunk.index})`;
    const endpoint = `GET /data/${DEVICE}/${resourceId}`;
    const prefix = `${endpoint} answered HTTP 200 with `;
    const says = kind?.says?.(chunk) ?? "";
    const done = doneOf.get(resourceId)?.has(chunk.index) ?? false;
    const failedLog = failedLogs.find((f) => f.resource === resourceId && f.chunk === chunk.index);
    const requests = api.dataRequests.get(key) ?? 0;
    const seen = { what, outcome, endpoint, prefix, says, done, failedLog, requests };
    lettersMatched += checkChunkLetters(letters, a, seen);
    checkChunkEnd(h.failures, seen);
  }
  expect(checked).toBe(CHUNKS);
  // every dead letter belongs to a chunk's bad row or member; InfluxDB refused no line
  expect({
    matched: lettersMatched,
    rows: letters.filter((l) => l.kind === "row").length,
    members: letters.filter((l) => l.kind === "member").length,
  }).toEqual({ matched: letters.length, rows: DEAD_LETTER_KINDS, members: MEMBER_LETTER_KINDS });
}

/** Checks the dead letters of one chunk; returns how many there are. */
function checkChunkLetters(
  letters: readonly DeadLetter[],
  { resourceId, chunk, made }: Assigned,
  { what, prefix, says }: ChunkSeen,
): number {
  // the dead letters of this chunk: one per bad row or member, its (row's) text as received
  // (cut), its error naming what is wrong, short even for a megabyte of row
  const mine = letters.filter(
    (l) =>
      l.resourceId === resourceId &&
      l.windowFromS === chunk.fromS &&
      l.windowToS === chunk.toS &&
      (l.kind === "member"
        ? l.valueIds.length === 1 && chunk.values.includes(l.valueIds[0] ?? "")
        : sameIds(l.valueIds, chunk.values)),
  );
  const expectedLetter = (kind: string, text: string, valueIds?: readonly string[]) => ({
    kind,
    payload: shown(text.slice(0, MAX_DEAD_LETTER_CHARS)),
    truncated: text.length > MAX_DEAD_LETTER_CHARS,
    error: expect.stringContaining(says),
    ...(valueIds ? { valueIds } : {}),
  });
  expect({
    what,
    letters: mine.map((l) => ({
      ...letterOf(l),
      ...(l.kind === "member" ? { valueIds: l.valueIds } : {}),
    })),
  }).toEqual({
    what,
    letters: [
      ...(made.deadLetters ?? []).map((text) => expectedLetter("row", text)),
      ...(made.memberLetters ?? []).map((m) => expectedLetter("member", m.text, [m.valueId])),
    ],
  });
  for (const l of mine) {
    expect({ what, prefixed: l.error.startsWith(prefix), short: l.error.length < 600 }).toEqual({
      what,
      prefixed: true,
      short: true,
    });
  }
  return mine.length;
}

/** Checks that one chunk is done in one request, or failed as its outcome says. */
function checkChunkEnd(
  failures: readonly unknown[],
  { what, outcome, endpoint, prefix, says, done, failedLog, requests }: ChunkSeen,
): void {
  if (!FAILING.has(outcome)) {
    // written (but for its bad row and what was dropped), done, in one request
    expect({ what, done, failedLog, requests }).toEqual({
      what,
      done: true,
      failedLog: undefined,
      requests: 1,
    });
    return;
  }
  // a body that is not a JSON array: the chunk fails with invalid_response and stays undone
  expect({ what, done, failed: typeof failedLog?.error }).toEqual({
    what,
    done: false,
    failed: "string",
  });
  // the error itself, as the pipeline's observer was told (the log holds its message)
  const error = failures.find((e) => e instanceof ApiError && e.message === failedLog?.error);
  expect({ what, error }).toEqual({ what, error: expect.any(ApiError) });
  if (!(error instanceof ApiError)) return;
  expect({
    what,
    code: error.code,
    endpoint: error.endpoint,
    status: error.status,
    prefixed: error.message.startsWith(prefix),
    says: error.message.includes(says),
    // clear, even for a megabyte of body: the message quotes at most the body's start
    short: error.message.length < 600,
    attempts: error.attempts,
  }).toEqual({
    what,
    code: "invalid_response",
    endpoint,
    status: 200,
    prefixed: true,
    says: true,
    short: true,
    attempts: requests,
  });
  // not JSON may be a cut transfer: retried; JSON of another shape is not
  const [least, most] =
    outcome === "chunk-fails-retried"
      ? [1 + RETRIES, 1 + RETRIES]
      : outcome === "chunk-fails-final"
        ? [1, 1]
        : [1, 1 + RETRIES];
  expect({ what, requests, within: requests >= least && requests <= most }).toEqual({
    what,
    requests,
    within: true,
  });
}

/** Checks the run's counters. */
export function checkCounters(
  result: BackfillRunResult,
  assigned: ReadonlyMap<string, Assigned>,
): void {
  // what was dropped is counted, and nothing else
  const sum = (count: (made: Made) => number | undefined): number =>
    [...assigned.values()].reduce((n, a) => n + (count(a.made) ?? 0), 0);
  expect({
    chunks: result.counters.chunks,
    chunkErrors: result.counters.chunkErrors,
    deadLetters: result.counters.deadLetters,
    droppedRows: result.counters.droppedRows,
    duplicateRows: result.counters.duplicateRows,
    droppedMembers: result.counters.droppedMembers,
  }).toEqual({
    chunks: CHUNKS - FAILING_KINDS,
    chunkErrors: FAILING_KINDS,
    deadLetters: DEAD_LETTER_KINDS + MEMBER_LETTER_KINDS,
    droppedRows: sum((m) => m.outOfWindow),
    duplicateRows: sum((m) => m.duplicates),
    droppedMembers: sum((m) => m.extraMembers),
  });
  // 1500-01-01, a second before and after the window, and the invalid row at 2026-13-45
  expect(sum((m) => m.outOfWindow)).toBe(4);
  expect(sum((m) => m.duplicates)).toBe(2);
  expect(sum((m) => m.extraMembers)).toBeGreaterThan(0);
}

/** Checks that InfluxDB holds exactly the good rows of the done chunks. */
export async function checkStored(
  h: Harness,
  assigned: ReadonlyMap<string, Assigned>,
): Promise<void> {
  // InfluxDB holds exactly the good rows of the done chunks: nothing of a dead-lettered row, of
  // a dropped row or member, of a later duplicate. (A streaming client may write a failed
  // chunk's first pages; these bodies are far smaller than a page, so it writes none.)
  const writtenOf = new Map<string, DataRecord[]>();
  for (const { resourceId, kind, made } of assigned.values()) {
    if (fails(kind)) continue;
    writtenOf.set(resourceId, [...(writtenOf.get(resourceId) ?? []), ...made.written]);
  }
  const expected = sortPoints(
    [...writtenOf].flatMap(([resourceId, records]) => expectedPoints(DEVICE, resourceId, records)),
  );
  const points = await storedPointsOf(h.db, DEVICE);
  const stored = sortPoints(points);
  const storedSet = new Set(stored);
  const expectedSet = new Set(expected);
  expect({
    missing: expected.filter((p) => !storedSet.has(p)).map(shown),
    extra: stored.filter((p) => !expectedSet.has(p)).map(shown),
  }).toEqual({ missing: [], extra: [] });
  expect(stored.length).toBe(expected.length);
  // the odd ones are there: a megabyte of text, "NaN" and "Infinity" as text; the unknown
  // members are not
  expect(points.some((p) => p.fields.text === MEGABYTE_TEXT)).toBe(true);
  expect(points.some((p) => p.fields.text === "NaN")).toBe(true);
  expect(points.some((p) => p.fields.text === "Infinity")).toBe(true);
  expect(points.some((p) => p.measurement === "mystery_power")).toBe(false);
  expect(points.filter((p) => /mystery|unknown_codes|surprise/.test(p.measurement))).toEqual([]);
}
