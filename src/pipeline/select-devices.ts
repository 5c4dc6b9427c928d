import type { CallOptions } from "../api/client.js";
import type { Pipeline } from "./pipeline.js";
import { inShard } from "./shard.js";

/** A device asked for that the API does not list. */
export class UnknownDeviceError extends Error {
  constructor(readonly deviceIds: readonly string[]) {
    super(`unknown device: ${deviceIds.join(", ")} (see energy-etl devices)`);
    this.name = "UnknownDeviceError";
  }
}

/**
 * The devices a command works on: the ones asked for (which must exist: one GET /devices says),
 * or every device of this shard (SHARD_COUNT/SHARD_INDEX).
 */
export async function selectDevices(
  pipeline: Pick<Pipeline, "client" | "queue" | "config">,
  wanted: readonly string[] | "all",
  calls: CallOptions = {},
): Promise<string[]> {
  const { device_ids: all } = await pipeline.queue.add(() => pipeline.client.listDevices(calls));
  if (wanted !== "all") {
    const unknown = wanted.filter((id) => !all.includes(id));
    if (unknown.length > 0) throw new UnknownDeviceError(unknown);
    return [...new Set(wanted)];
  }
  const { count, index } = pipeline.config.shard;
  return all.filter((id) => inShard(id, count, index));
}
