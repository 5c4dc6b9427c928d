/**
 * The ids of the API's lists (devices, resources, value ids) a run can use (docs/design.md,
 * "Catalog ids"): one that cannot be addressed, listed twice, or stored as another's series is
 * skipped, and each catalog read says so once.
 */
import type { Logger } from "pino";
import { unaddressable } from "../api/path-segment.js";
import { storedMeasurement, storedName } from "../transform/line-protocol.js";
import { decodeValueId } from "../transform/value-id.js";

/** An id of a list left out, and why. */
export interface SkippedId {
  readonly list: string;
  readonly id: string;
  readonly reason: string;
}

/** What InfluxDB stores of an id (`stored`), and what it is before escaping (`raw`). */
export interface SeriesKey {
  readonly stored: string;
  readonly raw: string;
}

/** A device or resource id as its tag stores it. */
export const tagKey = (id: string): SeriesKey => ({ stored: storedName(id), raw: id });

/**
 * A value id as its points' measurement, unit, type and field: two with one `raw` key (the same
 * name under another values-id segment) share a series by design (docs/schema.md, "Points").
 */
export function valueKey(id: string): SeriesKey {
  const d = decodeValueId(id);
  const raw = [d.measurement, d.unit, d.type, d.field ?? ""];
  const stored = [storedMeasurement(d.measurement), storedName(d.unit), storedName(d.type)];
  // values_id is a tag, never a point of its own
  if (d.kind === "values_id") return { stored: id, raw: id };
  return { stored: JSON.stringify([...stored, d.field ?? ""]), raw: JSON.stringify(raw) };
}

export interface IdRules {
  /** The list's name in the warning: "device", "resource of <device>". */
  readonly list: string;
  /** Ids that are path segments (devices, resources): one that cannot be one is skipped. */
  readonly path: boolean;
  readonly key: (id: string) => SeriesKey;
  /** Ids stored before: of two ids on one series, the known one is kept. */
  readonly known?: ReadonlySet<string>;
}

/**
 * The ids of a list a run uses, in the list's order, and those skipped: an id that cannot be
 * addressed, a repeat, and of two ids InfluxDB would store as one series the second (the one not
 * known before; else the later in code unit order).
 */
export function usableIds(
  ids: readonly string[],
  rules: IdRules,
): { kept: string[]; skipped: SkippedId[] } {
  const skipped: SkippedId[] = [];
  const skip = (id: string, reason: string) => skipped.push({ list: rules.list, id, reason });
  const seen = new Set<string>();
  const candidates: string[] = [];
  for (const id of ids) {
    const reason = rules.path ? unaddressable(id) : undefined;
    if (reason !== undefined) skip(id, reason);
    else if (seen.has(id)) skip(id, "listed twice: used once");
    else candidates.push(id);
    seen.add(id);
  }
  const known = rules.known ?? new Set<string>();
  const rank = (id: string) => (known.has(id) ? 0 : 1);
  const order = [...candidates].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
  const owners = new Map<string, { id: string; raw: string }>();
  const lost = new Set<string>();
  for (const id of order) {
    const key = rules.key(id);
    const owner = owners.get(key.stored);
    if (owner === undefined) owners.set(key.stored, { id, raw: key.raw });
    else if (owner.raw !== key.raw) {
      lost.add(id);
      skip(id, `stored as the same series as ${JSON.stringify(owner.id)} (after escaping)`);
    }
  }
  return { kept: candidates.filter((id) => !lost.has(id)), skipped };
}

/** A device's resource ids a run uses (`known`: those stored before). */
export function usableResources(ids: readonly string[], known?: ReadonlySet<string>) {
  return usableIds(ids, { list: "resource", path: true, key: tagKey, known });
}

/** A resource's value ids a run uses (`known`: those stored before). */
export function usableValues(
  resourceId: string,
  ids: readonly string[],
  known?: ReadonlySet<string>,
) {
  return usableIds(ids, { list: `values of ${resourceId}`, path: false, key: valueKey, known });
}

/** One warning for the ids a catalog read skipped (none: no warning). */
export function warnSkipped(log: Logger, skipped: readonly SkippedId[]): void {
  if (skipped.length === 0) return;
  log.warn(
    { skipped: skipped.slice(0, 20), count: skipped.length },
    "ids the API lists that energy-etl cannot use: skipped (the others are synced)",
  );
}
