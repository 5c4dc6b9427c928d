const EMPTY = Buffer.alloc(0);

/**
 * Bytes appended piece by piece into one buffer that doubles when full, so that gathering a
 * thing from many small pieces costs its size, not its size times the pieces. The buffer is
 * reused after {@link clear}: what {@link view} gave is valid until the next append.
 */
export class GrowingBytes {
  private buffer = EMPTY;
  length = 0;

  /** @param keepBytes a buffer larger than this is let go by {@link clear} */
  constructor(private readonly keepBytes: number) {}

  append(bytes: Buffer): void {
    const at = this.length;
    const total = at + bytes.length;
    if (total > this.buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(total, 2 * this.buffer.length, 1024));
      this.buffer.copy(grown, 0, 0, at);
      this.buffer = grown;
    }
    this.buffer.set(bytes, at);
    this.length = total;
  }

  view(): Buffer {
    return this.buffer.subarray(0, this.length);
  }

  /** Starts over (the buffer is kept unless it grew beyond `keepBytes`). */
  clear(): void {
    this.length = 0;
    if (this.buffer.length > this.keepBytes) this.buffer = EMPTY;
  }
}
