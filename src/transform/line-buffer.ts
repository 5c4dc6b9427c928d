import type { LineBatch } from "./line-protocol.js";

const NEWLINE = 0x0a;
/** No bytes: what a buffer holds before its first line (and an answer before its first record). */
export const NO_BYTES = Buffer.alloc(0);
/** A buffer's first size, and the size it takes once it outgrows that. */
const FIRST_BYTES = 4 * 1024;
const GROWN_BYTES = 64 * 1024;

/**
 * Line protocol assembled as UTF-8 bytes in one reused buffer and handed out in
 * {@link LineBatch}es: no string per line and no new buffer per batch (the encoder's hot path). A
 * batch's bytes stay valid until the next line is started or the next batch taken.
 */
export class LineBuffer {
  // none until the first line, then small: a steady tick's answer holds a few lines, and 64 KB for
  // each was a quarter of a GB of short-lived memory per 1,000-device tick (V8 mark-compacts)
  private bytes = NO_BYTES;
  private length = 0;
  /** Lines in the buffer (those handed out last included until released). */
  lines = 0;
  /** The end of the lines that make the next batch, once marked. */
  private markBytes = -1;
  private markLines = 0;
  /** The bytes and lines handed out in the last batch: released when more is written. */
  private heldBytes = 0;
  private heldLines = 0;

  get marked(): boolean {
    return this.markBytes >= 0;
  }

  /** Lines written since the last batch was taken. */
  get pendingLines(): number {
    return this.lines - this.heldLines;
  }

  /** Starts a line whose bytes will be at most `maxBytes`; returns where its bytes go. */
  startLine(maxBytes: number): Buffer {
    this.release();
    this.reserve(maxBytes + 1);
    if (this.lines > 0) this.bytes[this.length++] = NEWLINE;
    this.lines++;
    return this.bytes;
  }

  get end(): number {
    return this.length;
  }

  /** Moves the end after bytes written at {@link end} into the buffer {@link startLine} returned. */
  set end(offset: number) {
    this.length = offset;
  }

  appendLine(line: string): void {
    const bytes = this.startLine(Buffer.byteLength(line));
    this.length += bytes.write(line, this.length, "utf8");
  }

  /** The lines so far make the next batch (lines written after it wait for the one after). */
  mark(): void {
    this.markBytes = this.length;
    this.markLines = this.lines;
  }

  /** The lines up to the mark (all without one) as a batch, valid until the next line or batch. */
  take(): LineBatch {
    this.release();
    const bytes = this.marked ? this.markBytes : this.length;
    const lines = this.marked ? this.markLines : this.lines;
    this.markBytes = -1;
    this.heldBytes = bytes;
    this.heldLines = lines;
    return { bytes: this.bytes.subarray(0, bytes), lines };
  }

  /** Moves the lines written after the last batch to the start (that batch is written now). */
  private release(): void {
    if (this.heldLines === 0) return;
    const rest = this.lines > this.heldLines ? this.heldBytes + 1 : this.length;
    this.bytes.copyWithin(0, rest, this.length);
    this.length -= rest;
    this.lines -= this.heldLines;
    this.heldBytes = 0;
    this.heldLines = 0;
  }

  private reserve(more: number): void {
    const need = this.length + more;
    if (need <= this.bytes.length) return;
    // a backfill's buffer grows from 64 KB, not through every size from 4 KB (peak RSS +15 MB)
    let size = this.bytes.length === 0 ? FIRST_BYTES : Math.max(this.bytes.length * 2, GROWN_BYTES);
    while (size < need) size *= 2;
    const bigger = Buffer.allocUnsafe(size);
    this.bytes.copy(bigger, 0, 0, this.length);
    this.bytes = bigger;
  }
}
