/**
 * One device's history: state chained day by day, recent day frames, counter totals. A pure function
 * of (seed, device, kind, resolution), so fleets share histories and their anchors through caches.
 */
import { applyAlarms } from "./alarms.js";
import { buildCatalog, type DeviceCatalog } from "./catalog.js";
import { ANCHOR_DAYS, CounterLedger, type CounterSumStore } from "./counters.js";
import { LruCache } from "./lru.js";
import { floor, max, min } from "./num.js";
import type { DeviceKind } from "./profiles.js";
import { hash2, hashString, subKey } from "./rng.js";
import {
  type DayFrame,
  initialSiteState,
  type SiteKeys,
  type SiteState,
  simulateDay,
  siteKeys,
} from "./site-physics.js";
import { DAY_S } from "./time.js";
import type { CounterValueDef } from "./values.js";

/** Samples of day frames a history keeps by default (20 days at 60 s). */
const CACHED_SAMPLES = 30_000;
/** Devices whose anchors are kept (a few kB each). */
const CACHED_ANCHORS = 20_000;

interface HistoryAnchors {
  /** states[k]: the state at 00:00 of day k * ANCHOR_DAYS. */
  readonly states: SiteState[];
  /** The furthest day simulated and its state at 00:00. */
  lastDay: number;
  lastState: SiteState;
  readonly sums: CounterSumStore;
}

export class DeviceHistory {
  readonly catalog: DeviceCatalog;
  private readonly keys: SiteKeys;
  private readonly alarmKey: number;
  /** Counters whose day totals are taken while days are simulated, by id. */
  private readonly tracked = new Map<string, CounterValueDef>();
  /** State at 00:00 of the days this history knows. */
  private readonly starts = new Map<number, SiteState>();
  private readonly frames: LruCache<number, DayFrame>;
  readonly ledger: CounterLedger;
  /** What this history learnt of the chain (shared with the histories of the same device). */
  readonly anchors: HistoryAnchors;

  constructor(
    readonly kind: DeviceKind,
    readonly deviceKey: number,
    readonly resolutionS: number,
    anchors?: HistoryAnchors,
    frameSamples: number = CACHED_SAMPLES,
  ) {
    this.catalog = buildCatalog(kind, deviceKey);
    const initial = initialSiteState(this.catalog.profile);
    this.anchors = anchors ?? {
      states: [initial],
      lastDay: 0,
      lastState: initial,
      sums: new Map(),
    };
    this.keys = siteKeys(deviceKey);
    this.alarmKey = subKey(deviceKey, "alarms");
    for (const def of this.catalog.defs) if (def.kind === "counter") this.track(def);
    this.frames = new LruCache(max(2, floor(frameSamples / max(1, DAY_S / resolutionS))));
    this.ledger = new CounterLedger((day) => this.frame(day), this.anchors.sums);
  }

  /** Takes the counter's day totals while days are simulated, as those of the catalog are. */
  track(def: CounterValueDef): void {
    if (!this.tracked.has(def.id)) this.tracked.set(def.id, def);
  }

  /** Day 0: the commissioning day. */
  frame(day: number): DayFrame {
    return this.frames.get(day) ?? this.simulate(day, this.startOf(day));
  }

  /** The state at 00:00 of `day`, chained from the closest known day before it. */
  private startOf(day: number): SiteState {
    const known = this.starts.get(day);
    if (known !== undefined) return known;
    const a = this.anchors;
    const k = min(floor(day / ANCHOR_DAYS), a.states.length - 1);
    let d = k * ANCHOR_DAYS;
    let state = a.states[k] ?? a.lastState;
    if (a.lastDay <= day && a.lastDay > d) {
      d = a.lastDay;
      state = a.lastState;
    }
    for (let x = day - 1; x > d; x--) {
      const s = this.starts.get(x);
      if (s !== undefined) {
        d = x;
        state = s;
        break;
      }
    }
    while (d < day) {
      this.simulate(d, state);
      d++;
      state = this.starts.get(d) ?? state;
    }
    return state;
  }

  private simulate(day: number, start: SiteState): DayFrame {
    const profile = this.catalog.profile;
    const { frame, end } = simulateDay(profile, this.keys, day, this.resolutionS, start);
    applyAlarms(frame, this.alarmKey, this.kind, profile.grid !== undefined);
    this.starts.set(day, start);
    this.starts.set(day + 1, end);
    const a = this.anchors;
    if ((day + 1) % ANCHOR_DAYS === 0 && a.states.length === (day + 1) / ANCHOR_DAYS) {
      a.states.push(end);
    }
    if (day >= a.lastDay) {
      a.lastDay = day;
      a.lastState = start;
    }
    this.frames.set(day, frame);
    this.ledger.record(frame, this.tracked.values());
    return frame;
  }
}

const histories = new LruCache<string, DeviceHistory>(16);
const anchorsByKey = new LruCache<string, HistoryAnchors>(CACHED_ANCHORS);

/** The (shared) history of a device; `frameSamples`: day-frame samples kept (its first user's). */
export function historyOf(
  seed: number,
  deviceId: string,
  kind: DeviceKind,
  resolutionS: number,
  frameSamples?: number,
): DeviceHistory {
  const key = JSON.stringify([String(seed), deviceId, kind, resolutionS]);
  let history = histories.get(key);
  if (history === undefined) {
    const deviceKey = hash2(hashString(String(seed)), hashString(deviceId));
    const anchors = anchorsByKey.get(key);
    history = new DeviceHistory(kind, deviceKey, resolutionS, anchors, frameSamples);
    anchorsByKey.set(key, history.anchors);
    histories.set(key, history);
  }
  return history;
}

/** Forgets every cached history and anchor (tests check that results do not depend on them). */
export function clearHistories(): void {
  histories.clear();
  anchorsByKey.clear();
}
