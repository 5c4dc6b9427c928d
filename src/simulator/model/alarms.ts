/** Alarm schedule: grid failures while the grid is down plus a few short seeded alarms per day. */
import { ceil, floor, max, min } from "./num.js";
import type { DeviceKind } from "./profiles.js";
import { unit3 } from "./rng.js";
import type { DayFrame } from "./site-physics.js";

const NAMES = new Map<number, string>([
  [101, "Grid overvoltage"],
  [102, "Grid undervoltage"],
  [103, "Grid frequency out of range"],
  [104, "Grid failure"],
  [201, "Battery low"],
  [202, "Battery overtemperature"],
  [301, "Inverter overtemperature"],
  [302, "Insulation fault"],
  [401, "Genset start failure"],
  [402, "Low fuel"],
  [501, "Communication lost"],
  [601, "Tank level low"],
  [602, "Pump dry run"],
  [701, "Monitoring credit low"],
]);

const SCHEDULED: Record<DeviceKind, readonly number[]> = {
  hybrid: [101, 102, 103, 201, 202, 301, 302, 401, 501],
  offgrid: [201, 202, 301, 401, 402, 501, 601, 602],
  auditbox: [101, 102, 103, 302, 401, 501, 701],
  gridtied: [101, 102, 103, 301, 302, 501],
};

const GRID_FAILURE_CODE = 104;

/** Name of an alarm code; null for 0 (no alarm). */
export function alarmName(code: number): string | null {
  return code === 0 ? null : (NAMES.get(code) ?? `Alarm ${code}`);
}

/** Fills `frame.alarm`: 0-3 seeded short alarms (3-30 min) a day, grid failure over them. */
export function applyAlarms(
  frame: DayFrame,
  key: number,
  kind: DeviceKind,
  hasGrid: boolean,
): void {
  const codes = SCHEDULED[kind];
  const day = frame.day;
  const n = floor(unit3(key, day, 0) ** 1.5 * 4);
  for (let a = 0; a < n; a++) {
    const code = codes[floor(unit3(key, day, 10 + a) * codes.length)] ?? codes[0] ?? 0;
    const startS = frame.dayStartS + floor(unit3(key, day, 20 + a) * 86_000);
    const endS = startS + 180 + floor(unit3(key, day, 30 + a) * 1620);
    const i0 = max(0, ceil((startS - frame.firstS) / frame.resolutionS));
    const i1 = min(frame.count, ceil((endS - frame.firstS) / frame.resolutionS));
    frame.alarm.fill(code, i0, max(i0, i1));
  }
  if (!hasGrid) return;
  for (let i = 0; i < frame.count; i++) {
    if (frame.gridUp[i] === 0) frame.alarm[i] = GRID_FAILURE_CODE;
  }
}
