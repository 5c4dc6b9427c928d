import type { ValueIdDecoder } from "../transform/value-id.js";

/** The value types rollups sum: cumulative (04) and cumulative with a daily reset (05). */
export const COUNTER_TYPES: ReadonlySet<string> = new Set(["cumulative", "cumulative_daily_reset"]);

/** True when value id `id` is a counter (its increases are rolled up). */
export function isCounter(decoder: ValueIdDecoder, id: string): boolean {
  return COUNTER_TYPES.has(decoder.decode(id).type);
}
