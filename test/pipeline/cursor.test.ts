import { loadConfig } from "../../src/config.js";
import {
  afterCommit,
  afterLookback,
  afterPark,
  afterRepair,
  backoffS,
  cursorAfterJob,
  FUTURE_SLACK_S,
  failureWaitS,
  fetchWindow,
  futureRepair,
  newestWritten,
  planSync,
  type SyncRules,
  silentSince,
  syncRules,
  WindowCommits,
} from "../../src/pipeline/cursor.js";
import type { Chunk } from "../../src/pipeline/plan-chunks.js";
import type { Cursor } from "../../src/state/types.js";

const H = 3600;
const D = 86_400;
const WEEK = 7 * D;
const NOW = 1_781_524_800; // 2026-06-15T12:00:00Z
const RULES: SyncRules = {
  startS: NOW - 7 * D,
  lookbackS: H,
  lookbackEveryS: H,
  horizonS: 30 * D,
  silentAfterS: 6 * H,
  probeIntervalS: H,
};

function cursor(fields: Partial<Cursor>): Cursor {
  return {
    deviceId: "d",
    resourceId: "r",
    fetchedUntilS: NOW - 300,
    startedS: NOW - 7 * D,
    failures: 0,
    updatedAt: "2026-06-15T11:55:00.000Z",
    ...fields,
  };
}

describe("planSync: the cursor rules", () => {
  it.each<[string, Cursor | undefined, ReturnType<typeof planSync>]>([
    [
      "no cursor: from SYNC_START to now",
      undefined,
      { kind: "fetch", lookback: true, window: { fromS: NOW - 7 * D, toS: NOW } },
    ],
    [
      "from the newest record minus the lookback, not from the end of the last window",
      cursor({ newestRecordS: NOW - 600, fetchedUntilS: NOW - 300 }),
      { kind: "fetch", lookback: true, window: { fromS: NOW - 600 + 1 - H, toS: NOW } },
    ],
    [
      "a gateway offline 3 h: still read from its newest record (its backlog comes late)",
      cursor({ newestRecordS: NOW - 3 * H, fetchedUntilS: NOW - 300 }),
      { kind: "fetch", lookback: true, window: { fromS: NOW - 3 * H + 1 - H, toS: NOW } },
    ],
    [
      "a cursor that never saw a record reads from where it began",
      cursor({ newestRecordS: undefined, startedS: NOW - 2 * H }),
      { kind: "fetch", lookback: true, window: { fromS: NOW - 2 * H, toS: NOW } },
    ],
    [
      "a local clock behind the data: nothing to read",
      cursor({ newestRecordS: NOW + 2 * H }),
      { kind: "none" },
    ],
    [
      "after a failure: wait until retry_at",
      cursor({ newestRecordS: NOW - 600, failures: 2, retryAtS: NOW + 60 }),
      { kind: "wait", retryAtS: NOW + 60 },
    ],
    [
      "retry_at reached: fetch again",
      cursor({ newestRecordS: NOW - 600, failures: 2, retryAtS: NOW }),
      { kind: "fetch", lookback: true, window: { fromS: NOW - 600 + 1 - H, toS: NOW } },
    ],
    [
      "silent for 2 days: probe the week after the newest record (one window, it reaches now)",
      cursor({ newestRecordS: NOW - 2 * D }),
      {
        kind: "probe",
        silentSinceS: NOW - 2 * D,
        windows: [{ fromS: NOW - 2 * D + 1, toS: NOW }],
      },
    ],
    [
      "silent for 10 days: probe the first week after it and the rest up to now (no overlap)",
      cursor({ newestRecordS: NOW - 10 * D }),
      {
        kind: "probe",
        silentSinceS: NOW - 10 * D,
        windows: [
          { fromS: NOW - 10 * D + 1, toS: NOW - 10 * D + 1 + WEEK },
          { fromS: NOW - 10 * D + 2 + WEEK, toS: NOW },
        ],
      },
    ],
    [
      "silent for 40 days: the probe starts at the horizon",
      cursor({ newestRecordS: NOW - 40 * D }),
      {
        kind: "probe",
        silentSinceS: NOW - 40 * D,
        windows: [
          { fromS: NOW - 30 * D, toS: NOW - 30 * D + WEEK },
          { fromS: NOW - WEEK, toS: NOW },
        ],
      },
    ],
    [
      "silent and probed recently: quiet until the next probe",
      cursor({ newestRecordS: NOW - 10 * D, nextProbeS: NOW + 60 }),
      { kind: "quiet", silentSinceS: NOW - 10 * D, nextProbeS: NOW + 60 },
    ],
    [
      "silent, probe due: probe",
      cursor({ newestRecordS: NOW - 2 * D, nextProbeS: NOW }),
      {
        kind: "probe",
        silentSinceS: NOW - 2 * D,
        windows: [{ fromS: NOW - 2 * D + 1, toS: NOW }],
      },
    ],
    [
      "a resource that keeps failing is fetched (after its wait), not taken for silent",
      cursor({ newestRecordS: NOW - 2 * D, failures: 3, retryAtS: NOW - 1 }),
      { kind: "fetch", lookback: true, window: { fromS: NOW - 2 * D + 1 - H, toS: NOW } },
    ],
    [
      "exactly one failure on a silent resource: fetched after its wait, not only probed",
      cursor({ newestRecordS: NOW - 2 * D, failures: 1, retryAtS: NOW }),
      { kind: "fetch", lookback: true, window: { fromS: NOW - 2 * D + 1 - H, toS: NOW } },
    ],
    [
      "exactly one failure, silent and probed recently: fetched, not quiet",
      cursor({ newestRecordS: NOW - 10 * D, failures: 1, retryAtS: NOW - 1, nextProbeS: NOW + H }),
      { kind: "fetch", lookback: true, window: { fromS: NOW - 10 * D + 1 - H, toS: NOW } },
    ],
    [
      "windows parked as jobs are not read again: the window starts after them",
      cursor({ newestRecordS: NOW - 3 * H, parkedUntilS: NOW - H }),
      { kind: "fetch", lookback: true, window: { fromS: NOW - H + 1, toS: NOW } },
    ],
    [
      "a newer record than the parked windows: the lookback rule again",
      cursor({ newestRecordS: NOW - 600, parkedUntilS: NOW - 2 * H }),
      { kind: "fetch", lookback: true, window: { fromS: NOW - 600 + 1 - H, toS: NOW } },
    ],
    [
      "no record since the cursor began 7 days ago: silent since then",
      cursor({ newestRecordS: undefined, startedS: NOW - 7 * D }),
      {
        kind: "probe",
        silentSinceS: NOW - 7 * D,
        windows: [{ fromS: NOW - 7 * D, toS: NOW }],
      },
    ],
  ])("%s", (_what, given, expected) => {
    expect(planSync(given, NOW, RULES)).toEqual(expected);
  });

  it("silence starts after SILENT_AFTER, not before", () => {
    expect(silentSince(cursor({ newestRecordS: NOW - 6 * H }), NOW, RULES)).toBeUndefined();
    expect(silentSince(cursor({ newestRecordS: NOW - 6 * H - 1 }), NOW, RULES)).toBe(
      NOW - 6 * H - 1,
    );
  });
});

describe("fetchWindow", () => {
  it("never reads before the horizon, and says what lies beyond it", () => {
    expect(fetchWindow(cursor({ newestRecordS: NOW - 40 * D }), NOW, RULES)).toEqual({
      window: { fromS: NOW - 30 * D, toS: NOW },
      beyondHorizonS: NOW - 40 * D + 1,
      lookback: true,
    });
  });

  it("a lookback that reaches past the horizon alone is no loss", () => {
    const rules = { ...RULES, lookbackS: 40 * D };
    expect(fetchWindow(cursor({ newestRecordS: NOW - D }), NOW, rules)).toEqual({
      window: { fromS: NOW - 30 * D, toS: NOW },
      lookback: true,
    });
  });

  it.each<[string, Partial<Cursor>, Partial<SyncRules>, number, boolean]>([
    ["never looked back: the lookback", {}, {}, NOW - 600 + 1 - H, true],
    [
      "looked back 10 min ago: only after the newest record",
      { lookedBackS: NOW - 600 },
      {},
      NOW - 600 + 1,
      false,
    ],
    [
      "looked back an hour ago: the lookback again",
      { lookedBackS: NOW - H },
      {},
      NOW - 600 + 1 - H,
      true,
    ],
    [
      "a clock that went back: the lookback",
      { lookedBackS: NOW + 60 },
      {},
      NOW - 600 + 1 - H,
      true,
    ],
    [
      "SYNC_LOOKBACK_EVERY 0: on every sync",
      { lookedBackS: NOW - 60 },
      { lookbackEveryS: 0 },
      NOW - 600 + 1 - H,
      true,
    ],
  ])("the lookback once per SYNC_LOOKBACK_EVERY: %s", (_what, fields, rules, fromS, lookback) => {
    const c = cursor({ newestRecordS: NOW - 600, ...fields });
    expect(fetchWindow(c, NOW, { ...RULES, ...rules })).toEqual({
      window: { fromS, toS: NOW },
      lookback,
    });
  });

  it("a lookback committed is remembered, and commits keep it", () => {
    const c = cursor({ newestRecordS: NOW - 600 });
    const looked = afterLookback(c, NOW);
    expect(looked.lookedBackS).toBe(NOW);
    const committed = afterCommit(
      { ...c, ...looked },
      { fetchedUntilS: NOW, newestRecordS: NOW - 60 },
    );
    expect(committed.lookedBackS).toBe(NOW);
  });

  it("SYNC_START in the future: nothing yet", () => {
    expect(fetchWindow(undefined, NOW, { ...RULES, startS: NOW + 1 })).toBeUndefined();
  });

  it("SYNC_START at now exactly: the one second of now is read", () => {
    expect(fetchWindow(undefined, NOW, { ...RULES, startS: NOW })).toEqual({
      window: { fromS: NOW, toS: NOW },
      lookback: true,
    });
  });

  it("the newest record one second before now, no lookback due: the window of now alone", () => {
    const c = cursor({ newestRecordS: NOW - 1, lookedBackS: NOW - 60 });
    expect(fetchWindow(c, NOW, RULES)).toEqual({
      window: { fromS: NOW, toS: NOW },
      lookback: false,
    });
  });

  it("looked back at now exactly: not due again (SYNC_LOOKBACK_EVERY has not passed)", () => {
    const c = cursor({ newestRecordS: NOW - 600, lookedBackS: NOW });
    expect(fetchWindow(c, NOW, RULES)).toEqual({
      window: { fromS: NOW - 600 + 1, toS: NOW },
      lookback: false,
    });
  });

  it("a cursor that never saw a record and began beyond the horizon: lost from where it began", () => {
    const c = cursor({ newestRecordS: undefined, startedS: NOW - 40 * D });
    expect(fetchWindow(c, NOW, RULES)).toEqual({
      window: { fromS: NOW - 30 * D, toS: NOW },
      beyondHorizonS: NOW - 40 * D,
      lookback: true,
    });
  });

  it("the first unseen second at the horizon exactly: nothing lies beyond it", () => {
    const c = cursor({ newestRecordS: NOW - 30 * D - 1, lookedBackS: NOW - 60 });
    expect(fetchWindow(c, NOW, RULES)).toStrictEqual({
      window: { fromS: NOW - 30 * D, toS: NOW },
      lookback: false,
    });
  });
});

describe("syncRules", () => {
  it("resolves the settings at now (calendar months of a horizon count as they fall)", () => {
    const config = loadConfig({
      env: { SYNC_START: "P2D", LATE_DATA_HORIZON: "P1M", SILENT_AFTER: "PT30M" },
    });
    // 2026-03-31 minus one month is 2026-02-28 (clamped): 31 days
    const march31 = Date.UTC(2026, 2, 31) / 1000;
    expect(syncRules(config, march31)).toEqual({
      startS: march31 - 2 * D,
      lookbackS: H,
      lookbackEveryS: H,
      horizonS: 31 * D,
      silentAfterS: 1800,
      probeIntervalS: H,
    });
  });
});

describe("backoffS", () => {
  it.each([
    [1, 60],
    [2, 120],
    [3, 240],
    [5, 960],
    [6, 1800],
    [40, 1800],
  ])("failure %i waits %i s (base 60 s, max 30 min)", (failures, expected) => {
    expect(backoffS(failures, 60, 1800)).toBe(expected);
  });

  it("failureWaitS reads FAILURE_BACKOFF and FAILURE_BACKOFF_MAX", () => {
    const config = loadConfig({ env: { FAILURE_BACKOFF: "PT2M", FAILURE_BACKOFF_MAX: "PT1H" } });
    expect(failureWaitS(config, NOW, 3)).toBe(4 * 120);
    expect(failureWaitS(config, NOW, 9)).toBe(3600);
  });
});

describe("futureRepair: a cursor ahead of the API's clock", () => {
  it.each<[string, Cursor | undefined, number | undefined]>([
    ["no cursor", undefined, undefined],
    ["no record yet", cursor({}), undefined],
    ["at the clock", cursor({ newestRecordS: NOW }), undefined],
    ["within the slack", cursor({ newestRecordS: NOW + FUTURE_SLACK_S }), undefined],
    [
      "beyond the slack: back to the horizon",
      cursor({ newestRecordS: NOW + FUTURE_SLACK_S + 1 }),
      NOW - 30 * D,
    ],
  ])("%s", (_name, c, repairTo) => {
    expect(futureRepair(c, NOW, RULES.horizonS)).toBe(repairTo);
  });
});

describe("newestWritten: never beyond the API's clock", () => {
  it.each<[number | undefined, number, number | undefined]>([
    [undefined, NOW, undefined],
    [(NOW - 60) * 1000, NOW, NOW - 60],
    [(NOW + 3600) * 1000, NOW, NOW],
  ])("newest %j at clock %i -> %j", (newestMs, serverS, position) => {
    expect(newestWritten(newestMs, serverS)).toBe(position);
  });
});

describe("WindowCommits: windows commit in order, once, when all their chunks are written", () => {
  // two windows of two value groups each: chunks 0,1 in the first, 2,3 in the second
  const spans = [{ toS: NOW - WEEK }, { toS: NOW }];
  const chunk = (index: number): Chunk => ({ index, values: ["v"], fromS: 0, toS: 0 });

  it("a later window waits for an earlier one; each commits once, capped at the API's clock", () => {
    const windows = new WindowCommits(spans, 2);
    windows.done(chunk(2), { newestRecordS: NOW - 10, serverTimeS: NOW - 5 });
    windows.done(chunk(3), { newestRecordS: NOW - 20, serverTimeS: NOW });
    expect(windows.due()).toEqual([]);
    windows.done(chunk(0), { newestRecordS: NOW - WEEK - 60, serverTimeS: NOW });
    expect(windows.due()).toEqual([]);
    windows.done(chunk(1), { serverTimeS: NOW });
    expect(windows.due()).toEqual([
      { fetchedUntilS: NOW - WEEK, newestRecordS: NOW - WEEK - 60 },
      { fetchedUntilS: NOW - 5, newestRecordS: NOW - 10 },
    ]);
    expect(windows.due()).toEqual([]);
  });

  it("a failed chunk holds its window (and the later ones) back unless it is parked", () => {
    const windows = new WindowCommits(spans, 2);
    windows.done(chunk(0), { serverTimeS: NOW });
    windows.failed(chunk(1));
    windows.done(chunk(2), { newestRecordS: NOW - 30, serverTimeS: NOW });
    windows.done(chunk(3), { serverTimeS: NOW });
    expect(windows.due()).toEqual([]);
    expect(windows.failedChunks.map((c) => c.index)).toEqual([1]);
    expect(windows.due(true)).toEqual([
      { fetchedUntilS: NOW - WEEK },
      { fetchedUntilS: NOW, newestRecordS: NOW - 30 },
    ]);
  });

  it("a window that wrote no record commits its end only, and that commit is accepted", () => {
    const windows = new WindowCommits([{ toS: NOW }], 1);
    windows.done(chunk(0), { serverTimeS: NOW });
    const [commit, ...rest] = windows.due();
    expect(rest).toEqual([]);
    expect(commit).toStrictEqual({ fetchedUntilS: NOW });
    if (commit === undefined) throw new Error("no commit");
    expect(afterCommit(cursor({ newestRecordS: NOW - 600 }), commit).newestRecordS).toBe(NOW - 600);
  });
});

describe("cursorAfterJob: when a finished backfill moves the cursor", () => {
  const all = ["a", "b"];
  const job = (fields: Partial<Parameters<typeof cursorAfterJob>[0]>) => ({
    reason: "manual" as const,
    valueIds: all,
    fromS: NOW - 10 * D,
    toS: NOW,
    newestRecordS: NOW - 60,
    ...fields,
  });
  it.each<[string, Parameters<typeof cursorAfterJob>[0], Cursor | undefined, unknown]>([
    [
      "no cursor yet: to what the job read",
      job({}),
      undefined,
      { fetchedUntilS: NOW, newestRecordS: NOW - 60 },
    ],
    [
      "reaching back to the cursor's newest record",
      job({ fromS: NOW - 2 * D }),
      cursor({ newestRecordS: NOW - 2 * D - 1 }),
      { fetchedUntilS: NOW, newestRecordS: NOW - 60 },
    ],
    [
      "a gap before the job: no move",
      job({ fromS: NOW - 2 * D }),
      cursor({ newestRecordS: NOW - 3 * D }),
      undefined,
    ],
    ["not every value of the resource: no move", job({ valueIds: ["a"] }), undefined, undefined],
    ["a new value's history: no move", job({ reason: "new_value" }), undefined, undefined],
    ["a parked window: no move", job({ reason: "parked" }), undefined, undefined],
    [
      "an audit job moves it",
      job({ reason: "audit" }),
      undefined,
      { fetchedUntilS: NOW, newestRecordS: NOW - 60 },
    ],
    [
      "never beyond the API's clock",
      job({ toS: NOW + H }),
      undefined,
      { fetchedUntilS: NOW, newestRecordS: NOW - 60 },
    ],
  ])("%s", (_name, finished, c, commit) => {
    expect(cursorAfterJob(finished, c, all, NOW)).toEqual(commit);
  });

  it("a cursor that never saw a record: a job from where it began moves it, one a second later not", () => {
    const began = cursor({ newestRecordS: undefined, startedS: NOW - 2 * D });
    expect(cursorAfterJob(job({ fromS: NOW - 2 * D }), began, all, NOW)).toEqual({
      fetchedUntilS: NOW,
      newestRecordS: NOW - 60,
    });
    expect(cursorAfterJob(job({ fromS: NOW - 2 * D + 1 }), began, all, NOW)).toBeUndefined();
  });

  it("a job that found no record moves fetched only, and that commit is accepted", () => {
    const commit = cursorAfterJob(job({ newestRecordS: undefined }), undefined, all, NOW);
    expect(commit).toStrictEqual({ fetchedUntilS: NOW });
    if (commit === undefined) throw new Error("no commit");
    expect(afterCommit(cursor({ newestRecordS: NOW - 600 }), commit).fetchedUntilS).toBe(NOW);
  });
});

describe("afterPark and afterRepair: how a cursor moves besides a commit", () => {
  it.each<[string, number | undefined, number, number]>([
    ["a first park", undefined, NOW - D, NOW - D],
    ["a later park moves it on", NOW - 2 * D, NOW - D, NOW - D],
    ["an earlier park moves nothing back", NOW - D, NOW - 2 * D, NOW - D],
  ])("park: %s", (_name, before, untilS, after) => {
    expect(afterPark(cursor({ parkedUntilS: before }), untilS).parkedUntilS).toBe(after);
  });

  it("repair: the one move backwards, fetched capped there too, the rest kept", () => {
    const ahead = cursor({ newestRecordS: NOW + D, fetchedUntilS: NOW + D, failures: 2 });
    expect(afterRepair(ahead, NOW - 30 * D)).toMatchObject({
      newestRecordS: NOW - 30 * D,
      fetchedUntilS: NOW - 30 * D,
      failures: 2,
    });
    expect(afterRepair(cursor({ fetchedUntilS: NOW - 40 * D }), NOW - 30 * D).fetchedUntilS).toBe(
      NOW - 40 * D,
    );
  });

  it("commit: forward only, a streak ended, a silence ended only by a newer record", () => {
    const failing = cursor({
      newestRecordS: NOW - H,
      fetchedUntilS: NOW - 60,
      failures: 3,
      retryAtS: NOW + H,
      lastError: "503",
      nextProbeS: NOW + H,
    });
    expect(afterCommit(failing, { fetchedUntilS: NOW - 600, newestRecordS: NOW - 2 * H })).toEqual({
      fetchedUntilS: NOW - 60,
      newestRecordS: NOW - H,
      nextProbeS: NOW + H,
      parkedUntilS: undefined,
      failures: 0,
      retryAtS: undefined,
      lastError: undefined,
    });
    expect(afterCommit(failing, { fetchedUntilS: NOW, newestRecordS: NOW - 1 })).toMatchObject({
      fetchedUntilS: NOW,
      newestRecordS: NOW - 1,
      nextProbeS: undefined,
    });
  });

  // only a record newer than the cursor's ends the silence; one equal to it is no news
  it.each<[string, number | undefined, number | undefined, number | undefined, number | undefined]>(
    [
      ["an older record: silence kept", NOW - H, NOW - 2 * H, NOW - H, NOW + H],
      ["the same record again: silence kept", NOW - H, NOW - H, NOW - H, NOW + H],
      ["a record one second newer: silence ended", NOW - H, NOW - H + 1, NOW - H + 1, undefined],
      ["no record in the window: silence kept", NOW - H, undefined, NOW - H, NOW + H],
      ["a first record, at 0: silence ended", undefined, 0, 0, undefined],
    ],
  )("commit on a silent cursor: %s", (_name, before, committed, newestAfter, probeAfter) => {
    const silent = cursor({ newestRecordS: before, fetchedUntilS: NOW - 60, nextProbeS: NOW + H });
    const commit = {
      fetchedUntilS: NOW,
      ...(committed === undefined ? {} : { newestRecordS: committed }),
    };
    expect(afterCommit(silent, commit)).toEqual({
      fetchedUntilS: NOW,
      newestRecordS: newestAfter,
      nextProbeS: probeAfter,
      parkedUntilS: undefined,
      failures: 0,
      retryAtS: undefined,
      lastError: undefined,
      lookedBackS: undefined,
    });
  });
});

describe("afterCommit: a commit of whole seconds >= 0 only", () => {
  it.each<[string, number, string]>([
    ["negative", -1, "fetchedUntilS must be an integer >= 0, got -1"],
    ["fractional", 1.5, "fetchedUntilS must be an integer >= 0, got 1.5"],
    ["not a number", Number.NaN, "fetchedUntilS must be an integer >= 0, got NaN"],
  ])("%s: a RangeError naming the field and the value", (_what, value, message) => {
    const c = cursor({ newestRecordS: NOW - 600 });
    expect(() => afterCommit(c, { fetchedUntilS: value })).toThrow(new RangeError(message));
    expect(() => afterCommit(c, { fetchedUntilS: NOW, newestRecordS: -2 })).toThrow(
      "newestRecordS must be an integer >= 0, got -2",
    );
  });
});
