/**
 * The simulated history of one device: battery state chained day by day from commissioning,
 * recent day frames (least recently used dropped) and per-day counter totals.
 * Histories are pure functions of (seed, device id, kind, resolution), so fleets built with
 * the same seed share them through a small module-level cache. What a history learnt of the
 * chain (the state at 00:00 every ANCHOR_DAYS days and at the furthest day simulated, the
 * counters' running sums) is kept in a larger cache of small anchors, so a history built again
 * for the same device resumes near the day asked instead of at commissioning: same bytes.
 */

import { applyAlarms } from "./alarms.js";
import { buildCatalog, type DeviceCatalog } from "./catalog.js";
import { ANCHOR_DAYS, CounterLedger, CounterSumStore } from "./counters.js";
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
export const CACHED_SAMPLES = 30_000;
const CACHED_HISTORIES = 16;
/** Devices whose anchors are kept (a few kB each). */
const CACHED_ANCHORS = 20_000;

/** Key of a device's noise: seed and device id. */
export function deviceKeyOf(seed: number, deviceId: string): number {
  return hash2(hashString(String(seed)), hashString(deviceId));
}

/** What survives a history: chained states and counter sums at some days. */
export class HistoryAnchors {
  /** states[k]: the state at 00:00 of day k * ANCHOR_DAYS. */
  readonly states: SiteState[];
  /** The furthest day simulated and its state at 00:00. */
  lastDay = 0;
  lastState: SiteState;
  readonly sums = new CounterSumStore();

  constructor(initial: SiteState) {
    this.states = [initial];
    this.lastState = initial;
  }
}

/** Day frames and counter totals of one device. */
export class DeviceHistory {
  readonly catalog: DeviceCatalog;
  private readonly keys: SiteKeys;
  private readonly alarmKey: number;
  private readonly tracked: CounterValueDef[];
  private readonly trackedIds: Set<string>;
  /** State at 00:00 of the days this history knows. */
  private readonly starts = new Map<number, SiteState>();
  private readonly frames = new Map<number, DayFrame>();
  private readonly frameCapacity: number;
  private readonly ledger: CounterLedger;
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
    this.anchors = anchors ?? new HistoryAnchors(initialSiteState(this.catalog.profile));
    this.keys = siteKeys(deviceKey);
    this.alarmKey = subKey(deviceKey, "alarms");
    this.tracked = this.catalog.defs.filter((d) => d.kind === "counter");
    this.trackedIds = new Set(this.tracked.map((d) => d.id));
    this.frameCapacity = max(2, floor(frameSamples / max(1, DAY_S / resolutionS)));
    this.ledger = new CounterLedger((day) => this.frame(day), this.anchors.sums);
  }

  /**
   * Counters whose day totals are taken while days are simulated (those of the catalog are);
   * totals of other counters are computed when asked.
   */
  track(defs: readonly CounterValueDef[]): void {
    for (const def of defs) {
      if (this.trackedIds.has(def.id)) continue;
      this.trackedIds.add(def.id);
      this.tracked.push(def);
    }
  }

  /** The simulated day `day` (0 = commissioning day). */
  frame(day: number): DayFrame {
    const cached = this.frames.get(day);
    if (cached !== undefined) {
      this.frames.delete(day);
      this.frames.set(day, cached);
      return cached;
    }
    return this.simulate(day, this.startOf(day));
  }

  /** Sum of a counter's increments over the samples of `day`. */
  dayTotal(def: CounterValueDef, day: number): number {
    return this.ledger.dayTotal(def, day);
  }

  /** Sum of a counter's increments over all days before `day`. */
  sumBefore(def: CounterValueDef, day: number): number {
    return this.ledger.sumBefore(def, day);
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
    if (this.frames.size > this.frameCapacity) {
      const oldest = this.frames.keys().next();
      if (oldest.done !== true) this.frames.delete(oldest.value);
    }
    this.ledger.record(frame, this.tracked);
    return frame;
  }
}

const histories = new Map<string, DeviceHistory>();
const anchorsByKey = new Map<string, HistoryAnchors>();

/** Options of historyOf. */
export interface HistoryOptions {
  /** Samples of day frames kept (default CACHED_SAMPLES); a shared history keeps its own. */
  readonly frameSamples?: number;
}

/** The (shared) history of device `deviceId` of `kind` in a fleet with `seed`. */
export function historyOf(
  seed: number,
  deviceId: string,
  kind: DeviceKind,
  resolutionS: number,
  options: HistoryOptions = {},
): DeviceHistory {
  const key = JSON.stringify([String(seed), deviceId, kind, resolutionS]);
  let history = histories.get(key);
  if (history === undefined) {
    const anchors = anchorsByKey.get(key);
    anchorsByKey.delete(key);
    history = new DeviceHistory(
      kind,
      deviceKeyOf(seed, deviceId),
      resolutionS,
      anchors,
      options.frameSamples,
    );
    anchorsByKey.set(key, history.anchors);
    if (anchorsByKey.size > CACHED_ANCHORS) {
      const oldest = anchorsByKey.keys().next();
      if (oldest.done !== true) anchorsByKey.delete(oldest.value);
    }
  } else {
    histories.delete(key);
  }
  histories.set(key, history);
  if (histories.size > CACHED_HISTORIES) {
    const oldest = histories.keys().next();
    if (oldest.done !== true) histories.delete(oldest.value);
  }
  return history;
}

/** Forgets every cached history and anchor (tests check that results do not depend on them). */
export function clearHistories(): void {
  histories.clear();
  anchorsByKey.clear();
}
