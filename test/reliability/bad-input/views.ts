/**
 * How the bad-input tests read what was stored and show it in assertions: a device's points, a
 * text (short, or its start, length and digest), a dead letter.
 */
import { createHash } from "node:crypto";
import type { DeadLetter } from "../../../src/state/types.js";
import { rawPoints, type StoredPoint } from "../../support/expected-points.js";
import type { TestInfluxDb } from "../../support/influx-db.js";

/** The points of one device (etl_* and rollup_* left out). */
export const storedPointsOf = async (db: TestInfluxDb, deviceId: string): Promise<StoredPoint[]> =>
  rawPoints(db, `"device_id" = '${deviceId}'`);

/** A text as compared in an assertion: whole when short, else its start, length and digest. */
export const shown = (text: string): string =>
  text.length <= 300
    ? text
    : `${text.slice(0, 80)}… (${text.length} chars, sha256 ${createHash("sha256").update(text).digest("hex").slice(0, 16)})`;

/** A dead letter as compared in an assertion. */
export const letterOf = (l: DeadLetter) => ({
  kind: l.kind,
  payload: shown(l.payload),
  truncated: l.truncated,
  error: l.error,
});

export const sameIds = (a: readonly string[], b: readonly string[]): boolean =>
  JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());
