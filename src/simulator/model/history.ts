/**
 * The simulated history of one device: battery state chained day by day from commissioning,
 * recent day frames (least recently used dropped) and per-day counter totals.
 * Histories are pure functions of (seed, device id, kind, resolution), so fleets built with
 * the same seed share them through a small module-level cache.
 */

import { applyAlarms } from "./alarms.js";
import { buildCatalog, type DeviceCatalog } from "./catalog.js";
import { CounterLedger } from "./counters.js";
import { floor, max } from "./num.js";
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

const CACHED_SAMPLES = 30_000;
const CACHED_HISTORIES = 16;

/** Key of a device's noise: seed and device id. */
export function deviceKeyOf(seed: number, deviceId: string): number {
  return hash2(hashString(String(seed)), hashString(deviceId));
}

/** Day frames and counter totals of one device. */
export class DeviceHistory {
  readonly catalog: DeviceCatalog;
  private readonly keys: SiteKeys;
  private readonly alarmKey: number;
  private readonly builtInCounters: readonly CounterValueDef[];
  private readonly startStates: SiteState[];
  private readonly frames = new Map<number, DayFrame>();
  private readonly frameCapacity: number;
  private readonly ledger: CounterLedger;

  constructor(
    readonly kind: DeviceKind,
    readonly deviceKey: number,
    readonly resolutionS: number,
  ) {
    this.catalog = buildCatalog(kind, deviceKey);
    this.keys = siteKeys(deviceKey);
    this.alarmKey = subKey(deviceKey, "alarms");
    this.builtInCounters = this.catalog.defs.filter((d) => d.kind === "counter");
    this.startStates = [initialSiteState(this.catalog.profile)];
    this.frameCapacity = max(2, floor(CACHED_SAMPLES / max(1, DAY_S / resolutionS)));
    this.ledger = new CounterLedger((day) => this.frame(day));
  }

  /** The simulated day `day` (0 = commissioning day). */
  frame(day: number): DayFrame {
    const cached = this.frames.get(day);
    if (cached !== undefined) {
      this.frames.delete(day);
      this.frames.set(day, cached);
      return cached;
    }
    while (this.startStates.length <= day) this.simulate(this.startStates.length - 1);
    return this.simulate(day);
  }

  /** Sum of a counter's increments over the samples of `day`. */
  dayTotal(def: CounterValueDef, day: number): number {
    return this.ledger.dayTotal(def, day);
  }

  /** Sum of a counter's increments over all days before `day`. */
  sumBefore(def: CounterValueDef, day: number): number {
    return this.ledger.sumBefore(def, day);
  }

  private simulate(day: number): DayFrame {
    const profile = this.catalog.profile;
    const start = this.startStates[day] ?? initialSiteState(profile);
    const { frame, end } = simulateDay(profile, this.keys, day, this.resolutionS, start);
    applyAlarms(frame, this.alarmKey, this.kind, profile.grid !== undefined);
    if (this.startStates.length === day + 1) this.startStates.push(end);
    this.frames.set(day, frame);
    if (this.frames.size > this.frameCapacity) {
      const oldest = this.frames.keys().next();
      if (oldest.done !== true) this.frames.delete(oldest.value);
    }
    this.ledger.record(frame, this.builtInCounters);
    return frame;
  }
}

const histories = new Map<string, DeviceHistory>();

/** The (shared) history of device `deviceId` of `kind` in a fleet with `seed`. */
export function historyOf(
  seed: number,
  deviceId: string,
  kind: DeviceKind,
  resolutionS: number,
): DeviceHistory {
  const key = JSON.stringify([String(seed), deviceId, kind, resolutionS]);
  let history = histories.get(key);
  if (history === undefined) {
    history = new DeviceHistory(kind, deviceKeyOf(seed, deviceId), resolutionS);
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

/** Forgets every cached history (tests use it to check that results do not depend on the cache). */
export function clearHistories(): void {
  histories.clear();
}
