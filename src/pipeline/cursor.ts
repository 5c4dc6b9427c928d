/** Every cursor rule (README "Cursors"), pure, in epoch seconds; the database stores the result. */
import { type Config, resolveSyncStart } from "../config.js";
import type { WindowCommit } from "../state/cursor-store.js";
import type { BackfillJob, Cursor, CursorState } from "../state/types.js";
import { type IsoDuration, subtractDuration } from "../util/iso-duration.js";
import { epochSeconds } from "../util/utc-time.js";
import { type Chunk, MAX_WINDOW_S } from "./plan-chunks.js";

/** A duration in seconds, counted back from `nowS` (calendar years and months vary). */
export function secondsBefore(nowS: number, duration: IsoDuration): number {
  return nowS - epochSeconds(subtractDuration(new Date(nowS * 1000), duration));
}

/** The settings the cursor rules use, resolved to seconds at `nowS`. */
export function syncRules(config: Pick<Config, "sync">, nowS: number) {
  const { sync } = config;
  return {
    /** SYNC_START: where a resource without a cursor starts. */
    startS: epochSeconds(resolveSyncStart(sync.start, new Date(nowS * 1000))),
    /** SYNC_LOOKBACK: re-read before the newest record, for corrections. */
    lookbackS: secondsBefore(nowS, sync.lookback),
    /** SYNC_LOOKBACK_EVERY; 0: on every sync. */
    lookbackEveryS: secondsBefore(nowS, sync.lookbackEvery),
    /** LATE_DATA_HORIZON: never read further back than `nowS - horizonS`. */
    horizonS: secondsBefore(nowS, sync.lateDataHorizon),
    silentAfterS: secondsBefore(nowS, sync.silentAfter),
    probeIntervalS: secondsBefore(nowS, sync.probeInterval),
  };
}

export type SyncRules = Readonly<ReturnType<typeof syncRules>>;

/** An inclusive time window. */
export interface Window {
  readonly fromS: number;
  readonly toS: number;
}

/** What to do with a resource now. */
export type SyncPlan =
  /** `beyondHorizonS`: records after the newest one but before the window are too late. */
  | {
      readonly kind: "fetch";
      readonly window: Window;
      readonly beyondHorizonS?: number;
      readonly lookback: boolean;
    }
  /** Silent: read one value group over these windows; if anything new comes, fetch. */
  | { readonly kind: "probe"; readonly silentSinceS: number; readonly windows: readonly Window[] }
  /** Silent and probed recently: nothing until `nextProbeS`. */
  | { readonly kind: "quiet"; readonly silentSinceS: number; readonly nextProbeS: number }
  /** A failure streak: no attempt before `retryAtS`. */
  | { readonly kind: "wait"; readonly retryAtS: number }
  /** Nothing to read (the local clock is behind what was read already). */
  | { readonly kind: "none" };

/** Since when a silent resource has had no new record (its newest, or where its cursor began). */
export function silentSince(
  cursor: Cursor,
  nowS: number,
  rules: Pick<SyncRules, "silentAfterS">,
): number | undefined {
  const last = cursor.newestRecordS ?? cursor.startedS;
  return nowS - last > rules.silentAfterS ? last : undefined;
}

/** The window a fetch reads now (after the newest record, minus the lookback when due). */
export function fetchWindow(
  cursor: Cursor | undefined,
  nowS: number,
  rules: SyncRules,
): { window: Window; beyondHorizonS?: number; lookback: boolean } | undefined {
  if (cursor === undefined) {
    return rules.startS > nowS
      ? undefined
      : { window: { fromS: rules.startS, toS: nowS }, lookback: true };
  }
  const lowest = nowS - rules.horizonS;
  const lookback = lookbackDue(cursor, nowS, rules);
  const wanted =
    cursor.newestRecordS === undefined
      ? cursor.startedS
      : cursor.newestRecordS + 1 - (lookback ? rules.lookbackS : 0);
  // windows parked as jobs after failing on their own are not read again by a sync
  const fromS = Math.max(wanted, lowest, (cursor.parkedUntilS ?? Number.NEGATIVE_INFINITY) + 1);
  if (fromS > nowS) return undefined;
  const window = { fromS, toS: nowS };
  // records after the newest one but before the horizon can no longer be fetched by a sync
  const firstUnseen = (cursor.newestRecordS ?? cursor.startedS - 1) + 1;
  return firstUnseen < lowest
    ? { window, beyondHorizonS: firstUnseen, lookback }
    : { window, lookback };
}

/** True when a sync re-reads the lookback now (SYNC_LOOKBACK_EVERY passed; 0: always). */
function lookbackDue(
  cursor: Cursor,
  nowS: number,
  rules: Pick<SyncRules, "lookbackEveryS">,
): boolean {
  const at = cursor.lookedBackS;
  return at === undefined || at > nowS || nowS - at >= rules.lookbackEveryS;
}

/** A cursor whose lookback was re-read and committed at `atS`. */
export function afterLookback(cursor: Cursor, atS: number): CursorState {
  return { ...stateOf(cursor), lookedBackS: atS };
}

/**
 * What to do with a resource at `nowS`. A silent one is probed instead of fetched (the first week
 * after its newest record and the last week before now), at most once per probe interval.
 */
export function planSync(cursor: Cursor | undefined, nowS: number, rules: SyncRules): SyncPlan {
  if (cursor?.retryAtS !== undefined && cursor.retryAtS > nowS) {
    return { kind: "wait", retryAtS: cursor.retryAtS };
  }
  // a resource that fails is not silent: it is fetched (after its wait), never only probed
  const since =
    cursor === undefined || cursor.failures > 0 ? undefined : silentSince(cursor, nowS, rules);
  if (cursor !== undefined && since !== undefined) {
    if (cursor.nextProbeS !== undefined && nowS < cursor.nextProbeS) {
      return { kind: "quiet", silentSinceS: since, nextProbeS: cursor.nextProbeS };
    }
    const first = Math.max(
      (cursor.newestRecordS ?? cursor.startedS - 1) + 1,
      nowS - rules.horizonS,
    );
    const firstWindow = { fromS: first, toS: Math.min(first + MAX_WINDOW_S, nowS) };
    const windows: Window[] = [firstWindow];
    if (firstWindow.toS < nowS) {
      windows.push({ fromS: Math.max(nowS - MAX_WINDOW_S, firstWindow.toS + 1), toS: nowS });
    }
    return { kind: "probe", silentSinceS: since, windows };
  }
  const fetch = fetchWindow(cursor, nowS, rules);
  return fetch === undefined ? { kind: "none" } : { kind: "fetch", ...fetch };
}

/** The wait after failure number `failures` (1-based): base doubled per failure, capped. */
export function backoffS(failures: number, baseS: number, maxS: number): number {
  return Math.min(maxS, baseS * 2 ** Math.max(0, Math.min(30, failures - 1)));
}

/** {@link backoffS} by FAILURE_BACKOFF and FAILURE_BACKOFF_MAX at `nowS`. */
export function failureWaitS(config: Pick<Config, "failures">, nowS: number, failures: number) {
  const { backoff, backoffMax } = config.failures;
  return backoffS(failures, secondsBefore(nowS, backoff), secondsBefore(nowS, backoffMax));
}

/** Slack before a cursor counts as ahead of the API's clock (clocks disagree by seconds). */
export const FUTURE_SLACK_S = 300;

/**
 * Where to set the newest record of a cursor found ahead of the API's clock (a local clock ran
 * ahead before migration 002): the horizon, so nothing is skipped.
 */
export function futureRepair(
  cursor: Cursor | undefined,
  nowS: number,
  horizonS: number,
): number | undefined {
  if (cursor?.newestRecordS === undefined || cursor.newestRecordS <= nowS + FUTURE_SLACK_S) {
    return undefined;
  }
  return nowS - horizonS;
}

/** The newest record a chunk wrote, as a cursor position: never beyond the API's clock. */
export function newestWritten(newestRecordMs: number | undefined, serverTimeS: number) {
  return newestRecordMs === undefined
    ? undefined
    : Math.min(Math.floor(newestRecordMs / 1000), serverTimeS);
}

/** What one fetched chunk tells its window. */
export interface ChunkSaid {
  readonly newestRecordS?: number;
  /** The API's clock when it answered. */
  readonly serverTimeS: number;
}

/**
 * The windows of one fetch: each commits once all its chunks are written, in window order, up to
 * the API's clock at most; a failed chunk holds its window back unless the window is parked.
 */
export class WindowCommits {
  private readonly windows: {
    readonly toS: number;
    remaining: number;
    failed: Chunk[];
    newestS?: number;
    serverTimeS: number;
  }[];
  private committed = 0;

  /** `spans`: the fetch's time windows, in order, of `groups` chunks each (by chunk index). */
  constructor(
    spans: readonly { readonly toS: number }[],
    private readonly groups: number,
  ) {
    this.windows = spans.map((w) => ({
      toS: w.toS,
      remaining: groups,
      failed: [],
      serverTimeS: w.toS,
    }));
  }

  /** A chunk was written; what it said joins its window. */
  done(chunk: Chunk, said: ChunkSaid): void {
    const w = this.windows[Math.floor(chunk.index / this.groups)];
    if (w === undefined) return;
    w.remaining--;
    w.serverTimeS = Math.min(w.serverTimeS, said.serverTimeS);
    if (said.newestRecordS !== undefined) {
      w.newestS = Math.max(w.newestS ?? said.newestRecordS, said.newestRecordS);
    }
  }

  /** A chunk failed: its window is held back. */
  failed(chunk: Chunk): void {
    const w = this.windows[Math.floor(chunk.index / this.groups)];
    if (w === undefined) return;
    w.remaining--;
    w.failed.push(chunk);
  }

  /** The chunks that failed, in window order. */
  get failedChunks(): Chunk[] {
    return this.windows.flatMap((w) => w.failed);
  }

  /** The commits now due, in order, each once: windows all written (or failed and `parked`). */
  due(parked = false): WindowCommit[] {
    const due: WindowCommit[] = [];
    for (const w of this.windows.slice(this.committed)) {
      if (w.remaining > 0 || (w.failed.length > 0 && !parked)) break;
      due.push({
        fetchedUntilS: Math.min(w.toS, w.serverTimeS),
        ...(w.newestS === undefined ? {} : { newestRecordS: w.newestS }),
      });
      this.committed++;
    }
    return due;
  }
}

/**
 * Where a finished backfill job moves its resource's cursor: only a manual or audit job of every
 * value, reaching back to where the cursor stands, moves it (capped at the API's clock).
 */
export function cursorAfterJob(
  job: Pick<BackfillJob, "reason" | "valueIds" | "fromS" | "toS" | "newestRecordS">,
  cursor: Cursor | undefined,
  resourceValues: readonly string[],
  apiNowS: number,
): WindowCommit | undefined {
  if (job.reason !== "manual" && job.reason !== "audit") return undefined;
  if (!resourceValues.every((v) => job.valueIds.includes(v))) return undefined;
  const reached = cursor === undefined ? undefined : (cursor.newestRecordS ?? cursor.startedS - 1);
  if (reached !== undefined && job.fromS > reached + 1) return undefined;
  return {
    fetchedUntilS: Math.min(job.toS, apiNowS),
    ...(job.newestRecordS === undefined ? {} : { newestRecordS: job.newestRecordS }),
  };
}

/** The movable part of a cursor as it stands. */
function stateOf(cursor: Cursor): CursorState {
  const { deviceId, resourceId, startedS, updatedAt, ...state } = cursor;
  return state;
}

/**
 * A cursor after a fully fetched (and written) window: both positions move forward only, the
 * failure streak ends, a newer record ends the silence. RangeError unless whole seconds >= 0.
 */
export function afterCommit(cursor: Cursor, commit: WindowCommit): CursorState {
  for (const [name, value] of Object.entries(commit)) {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RangeError(`${name} must be an integer >= 0, got ${value}`);
    }
  }
  const newest = commit.newestRecordS;
  const newer = newest !== undefined && newest > (cursor.newestRecordS ?? -1);
  return {
    ...stateOf(cursor),
    fetchedUntilS: Math.max(cursor.fetchedUntilS, commit.fetchedUntilS),
    newestRecordS: newer ? newest : cursor.newestRecordS,
    nextProbeS: newer ? undefined : cursor.nextProbeS,
    failures: 0,
    retryAtS: undefined,
    lastError: undefined,
  };
}

/** A cursor after windows up to `untilS` were parked as jobs: syncs read on after them. */
export function afterPark(cursor: Cursor, untilS: number): CursorState {
  return { ...stateOf(cursor), parkedUntilS: Math.max(cursor.parkedUntilS ?? untilS, untilS) };
}

/** A cursor found ahead of the API's clock, set back to `newestS`: the one move backwards. */
export function afterRepair(cursor: Cursor, newestS: number): CursorState {
  return {
    ...stateOf(cursor),
    newestRecordS: newestS,
    fetchedUntilS: Math.min(cursor.fetchedUntilS, newestS),
  };
}
