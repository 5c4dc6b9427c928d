import type { Config } from "../config.js";
import { didYouMean } from "../util/suggest.js";
import { type CatalogParts, type CatalogPolicy, listedDevices, readDeviceList } from "./catalog.js";
import { inShard } from "./shard.js";

/** A device asked for that the API does not list. */
export class UnknownDeviceError extends Error {
  constructor(deviceIds: readonly string[], listed: readonly string[]) {
    const hint = deviceIds.length === 1 ? didYouMean(deviceIds[0] ?? "", listed) : "";
    super(`unknown device: ${deviceIds.join(", ")}${hint} (see energy-etl devices)`);
    this.name = "UnknownDeviceError";
  }
}

/** What selecting devices needs: the catalog's parts and this shard. */
export type SelectParts = CatalogParts & { readonly config: Pick<Config, "shard"> };

/**
 * The devices a command works on: the ones asked for (which must be listed: one missing from the
 * stored list makes the list be read again, it may be new), or every device of this shard.
 */
export async function selectDevices(
  parts: SelectParts,
  wanted: readonly string[] | "all",
  policy: CatalogPolicy = "refresh-due",
): Promise<{ deviceIds: string[]; requests: number }> {
  const listed = await listedDevices(parts, policy);
  let all = listed.deviceIds;
  let { requests } = listed;
  if (wanted !== "all") {
    const missing = (ids: readonly string[]) => wanted.filter((id) => !ids.includes(id));
    if (missing(all).length > 0 && !listed.read) {
      const read = await readDeviceList(parts);
      all = read.deviceIds;
      requests += read.requests;
    }
    const unknown = missing(all);
    if (unknown.length > 0) throw new UnknownDeviceError(unknown, all);
    return { deviceIds: [...new Set(wanted)], requests };
  }
  const { count, index } = parts.config.shard;
  return { deviceIds: all.filter((id) => inShard(id, count, index)), requests };
}
