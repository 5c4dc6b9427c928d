/** What the value definitions of every readout use: the device's context and frame readers. */
import type { DeviceKind, SiteProfile } from "../profiles.js";
import type { DayFrame } from "../site-physics.js";

export interface ReadoutContext {
  readonly kind: DeviceKind;
  readonly deviceKey: number;
  readonly profile: SiteProfile;
  /** The noise key of a value id on this device. */
  key(id: string): number;
}

/** Sample `i` of a channel (0 past its end). */
export function at(channel: ArrayLike<number>, i: number): number {
  return channel[i] ?? 0;
}

export function dtH(f: DayFrame): number {
  return f.resolutionS / 3600;
}

export function sampleTime(f: DayFrame, i: number): number {
  return f.firstS + i * f.resolutionS;
}
