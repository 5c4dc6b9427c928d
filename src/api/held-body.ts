import { deflateRawSync, inflateRawSync } from "node:zlib";

/** Bytes of an answer held as they came; beyond them, the body is held deflated. */
const RAW_BYTES = 4 * 1024 * 1024;
/** Bytes deflated at a time: large blocks deflate and inflate at several hundred MB/s. */
const BLOCK_BYTES = 1024 * 1024;

/**
 * The body of an answer held until it has come whole (GET /data): its first 4 MiB as they came,
 * the rest deflated (level 1) in 1 MiB blocks. A week of one-minute records is 8-40 MB of JSON
 * that deflates 30-fold at about 1 GB/s, so API_CONCURRENCY whole answers cost a few MB each.
 * Iterating yields the body's bytes in order, as often as it is iterated.
 */
export class HeldBody implements Iterable<Buffer> {
  /** Bytes of the body so far. */
  bytes = 0;
  /** The first byte that is not JSON white space; -1 while there is none. */
  firstByte = -1;
  /** The last byte that is not JSON white space; -1 while there is none. */
  lastByte = -1;
  private readonly raw: Buffer[] = [];
  private readonly deflated: Buffer[] = [];
  /** The block being gathered (allocated once an answer outgrows RAW_BYTES), and its bytes. */
  private block: Buffer | undefined;
  private blockBytes = 0;

  push(piece: Buffer): void {
    if (piece.length === 0) return;
    this.bytes += piece.length;
    this.noteEdges(piece);
    if (this.bytes <= RAW_BYTES) {
      this.raw.push(piece);
      return;
    }
    this.block ??= Buffer.allocUnsafe(BLOCK_BYTES);
    for (let at = 0; at < piece.length; ) {
      const copied = piece.copy(this.block, this.blockBytes, at);
      at += copied;
      this.blockBytes += copied;
      if (this.blockBytes === BLOCK_BYTES) {
        this.deflated.push(deflateRawSync(this.block, { level: 1 }));
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
