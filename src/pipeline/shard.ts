/** Stable assignment of devices to shards, so that several ETL instances can split them. */

const FNV_OFFSET_BASIS = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const encoder = new TextEncoder();

/** FNV-1a 32-bit hash of the UTF-8 bytes of `text`, as an unsigned integer. */
export function fnv1a32(text: string): number {
  let hash = FNV_OFFSET_BASIS;
  for (const byte of encoder.encode(text)) {
    hash = Math.imul(hash ^ byte, FNV_PRIME) >>> 0;
  }
  return hash;
}

/** The shard (0..shardCount-1) of a device, stable across runs, processes and platforms. */
export function shardOf(deviceId: string, shardCount: number): number {
  if (!Number.isSafeInteger(shardCount) || shardCount < 1) {
    throw new RangeError(`shardCount must be a positive integer, got ${shardCount}`);
  }
  return fnv1a32(deviceId) % shardCount;
}

/** Whether `deviceId` belongs to shard `shardIndex` of `shardCount` (RangeError on bad ones). */
export function inShard(deviceId: string, shardCount: number, shardIndex: number): boolean {
  const shard = shardOf(deviceId, shardCount);
  if (!Number.isSafeInteger(shardIndex) || shardIndex < 0 || shardIndex >= shardCount) {
    throw new RangeError(
      `shardIndex must be an integer in 0..${shardCount - 1}, got ${shardIndex}`,
    );
  }
  return shard === shardIndex;
}
