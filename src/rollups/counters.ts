import type { ValueIdDecoder } from "../transform/value-id.js";
import { counterKindOf } from "./counter-rule.js";

/** True when value id `id` is a counter (cumulative, 04, or with a daily reset, 05): rolled up. */
export function isCounter(decoder: ValueIdDecoder, id: string): boolean {
  return counterKindOf(decoder.decode(id).type) !== undefined;
}
