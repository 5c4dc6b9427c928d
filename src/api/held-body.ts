import { deflateRawSync, inflateRawSync } from "node:zlib";

/**
 * Bytes of an answer held as they came, and bytes deflated at a time beyond them. Under glibc's
 * 128 KiB mmap threshold: a larger buffer is mapped and unmapped, and each unmapping raises the
 * threshold, after which freed memory stays in the process (7-day backfill: +20 MB peak RSS with
 * 1 MiB blocks). At 120 KiB a block deflates 31-fold (1 MiB: 35).
 */
export const BLOCK_BYTES = 120 * 1024;

/**
 * The body of an answer held until it has come whole (GET /data): its first 120 KiB as they came
 * (a sync's answer is smaller), the rest deflated (level 1) in blocks of 120 KiB. A week of
 * one-minute records is 8-40 MB of JSON, so API_CONCURRENCY whole answers cost about a MB each.
 * Iterating yields the body's bytes in order, as often as it is iterated.
 */
export class HeldBody implements Iterable<Buffer> {
  bytes = 0;
  /** The first byte that is not JSON white space; -1 while there is none. */
  firstByte = -1;
  /** The last byte that is not JSON white space; -1 while there is none. */
  lastByte = -1;
  private readonly raw: Buffer[] = [];
  private readonly deflated: Buffer[] = [];
  /** The block being gathered (once an answer outgrows its raw part), and its bytes. */
  private block: Buffer | undefined;
  private blockBytes = 0;
  private rawBytes = 0;
  private deflatedBytes = 0;

  /** Bytes of memory it holds: the raw part, the deflated blocks and the block being gathered. */
  get heldBytes(): number {
    return this.rawBytes + this.deflatedBytes + (this.block ? BLOCK_BYTES : 0);
  }

  push(piece: Buffer): void {
    if (piece.length === 0) return;
    this.bytes += piece.length;
    this.noteEdges(piece);
    if (this.bytes <= BLOCK_BYTES) {
      this.raw.push(piece);
      this.rawBytes += piece.length;
      return;
    }
    this.block ??= Buffer.allocUnsafe(BLOCK_BYTES);
    for (let at = 0; at < piece.length; ) {
      const copied = piece.copy(this.block, this.blockBytes, at);
      at += copied;
      this.blockBytes += copied;
      if (this.blockBytes === BLOCK_BYTES) {
        // copied: zlib's answer is a view of its 16 KiB output buffer (4 times what it holds)
        const deflated = Buffer.from(deflateRawSync(this.block, { level: 1 }));
        this.deflated.push(deflated);
        this.deflatedBytes += deflated.length;
        this.blockBytes = 0;
      }
    }
  }

  *[Symbol.iterator](): Iterator<Buffer> {
    yield* this.raw;
    for (const block of this.deflated) yield inflateRawSync(block, { chunkSize: BLOCK_BYTES });
    if (this.block && this.blockBytes > 0) yield this.block.subarray(0, this.blockBytes);
  }

  private noteEdges(piece: Buffer): void {
    let last = piece.length - 1;
    while (last >= 0 && isWhiteSpace(piece[last] ?? SPACE)) last--;
    if (last < 0) return;
    this.lastByte = piece[last] ?? SPACE;
    if (this.firstByte !== -1) return;
    let first = 0;
    while (isWhiteSpace(piece[first] ?? SPACE)) first++;
    this.firstByte = piece[first] ?? SPACE;
  }
}

const SPACE = 0x20;
const isWhiteSpace = (byte: number) =>
  byte === SPACE || byte === 0x0a || byte === 0x0d || byte === 0x09;
