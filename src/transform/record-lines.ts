import type { LineBuffer } from "./line-buffer.js";
import { escapeTag } from "./line-protocol.js";
import { numericString, type RecordEncoder, valuesIdTag } from "./record-encoder.js";
import { type RecordScanner, ValueKind } from "./record-scanner.js";

/** What one requested value id becomes, as bytes. */
interface BytePlan {
  /** `measurement,device_id=…,resource_id=…,type=…,unit=…,values_id=` */
  readonly prefix: Buffer;
  /** Per tag: the prefix, the tag and the field (` value=`) in one, for numbers and booleans. */
  readonly heads: Map<Tag, Buffer>;
  /** ` value=` or ` alarm_index=` (an alarm_name member sends its record to the reference path) */
  readonly field: Buffer;
  readonly alarmName: boolean;
  readonly isText: boolean;
  /** Its series (measurement and tags but values_id) among the requested ids. */
  readonly series: number;
}

/** A values_id tag: as InfluxDB stores it (duplicates are judged by it) and as written. */
export interface Tag {
  readonly text: string;
  readonly bytes: Buffer;
}

const TEXT_FIELD = Buffer.from(" text=");
/** Room for ` seconds`: a space, a sign and 16 digits hold any record time. */
const SECONDS_ROOM = 24;
const ONE = Buffer.from("1");
const ZERO = Buffer.from("0");

/**
 * Writes the records the fast path read of one answer byte by byte into a {@link LineBuffer}: the
 * lines RecordEncoder writes for them (from its own plan of each value id), without a string each.
 */
export class RecordLines {
  private readonly plans: (BytePlan | undefined)[] = [];
  private readonly series = new Map<string, number>();
  private readonly seriesIn: Int32Array;
  private serial = 0;
  private readonly tags = new Map<unknown, Tag>();
  /** The record's ` seconds` as written at the end of its lines, kept for records of that second. */
  private secondsS = Number.NaN;
  private readonly secondsBytes = Buffer.alloc(SECONDS_ROOM);
  private secondsLength = 0;

  /** `values`: the requested value ids by the scanner's key index; `lineDone`: after each line. */
  constructor(
    private readonly encoder: RecordEncoder,
    private readonly values: readonly string[],
    private readonly out: LineBuffer,
    private readonly lineDone: () => void,
  ) {
    this.seriesIn = new Int32Array(values.length).fill(-1);
  }

  /**
   * True when every member of the scanned record has a series of its own and it names no alarm, as
   * almost always (those sharing a line, alarm_index and alarm_name, are merged by the reference
   * path, which also tags the alarm point with the alarm's name).
   */
  fits(scanned: RecordScanner): boolean {
    const serial = ++this.serial;
    for (let m = 0; m < scanned.members; m++) {
      const plan = this.planOf(scanned.key[m] ?? 0);
      if (plan.alarmName || this.seriesIn[plan.series] === serial) return false;
      this.seriesIn[plan.series] = serial;
    }
    return true;
  }

  /** The tag of a values_id member, cached per value. */
  tagOf(member: number | string | boolean | null | undefined): Tag {
    let tag = this.tags.get(member);
    if (tag === undefined) {
      const text = valuesIdTag(member);
      tag = { text, bytes: Buffer.from(escapeTag(text), "utf8") };
      this.tags.set(member, tag);
    }
    return tag;
  }

  /** Every member of the scanned record (whose bytes are in `source`) as a line. */
  write(scanned: RecordScanner, source: Buffer, tag: Tag): void {
    if (scanned.timestampS !== this.secondsS) {
      this.secondsS = scanned.timestampS;
      this.secondsLength = this.secondsBytes.write(` ${scanned.timestampS}`, 0, "latin1");
    }
    for (let m = 0; m < scanned.members; m++) this.writeMember(scanned, m, source, tag);
  }

  private planOf(key: number): BytePlan {
    let plan = this.plans[key];
    if (plan === undefined) {
      const encoded = this.encoder.planFor(this.values[key] ?? "");
      let series = this.series.get(encoded.seriesPrefix);
      if (series === undefined) {
        series = this.series.size;
        this.series.set(encoded.seriesPrefix, series);
      }
      plan = {
        prefix: Buffer.from(encoded.seriesPrefix, "utf8"),
        heads: new Map(),
        field: Buffer.from(` ${encoded.field}=`, "utf8"),
        alarmName: encoded.field === "alarm_name",
        isText: encoded.isText,
        series,
      };
      this.plans[key] = plan;
    }
    return plan;
  }

  /** One member as a line (as RecordEncoder's fieldOf makes its field); never an alarm_name. */
  private writeMember(scanned: RecordScanner, m: number, source: Buffer, tag: Tag): void {
    const plan = this.planOf(scanned.key[m] ?? 0);
    const from = scanned.start[m] ?? 0;
    const to = scanned.end[m] ?? 0;
    const kind = scanned.kind[m];
    // a number's own text (NumberText, numeric strings) is at most 25 characters
    const room = plan.prefix.length + tag.bytes.length + plan.field.length + (to - from) + 32;
    const out = this.out.startLine(room + this.secondsLength);
    let o = this.out.end;
    if (kind === ValueKind.Number) {
      // the usual line: its head (prefix, tag, field) copied in one go, then the number's bytes
      const head = headOf(plan, tag);
      out.set(head, o);
      o = copyBytes(source, from, to, out, o + head.length);
      this.out.end = copyBytes(this.secondsBytes, 0, this.secondsLength, out, o);
      this.lineDone();
      return;
    }
    out.set(plan.prefix, o);
    o += plan.prefix.length;
    out.set(tag.bytes, o);
    o += tag.bytes.length;
    if (kind === ValueKind.String) {
      const number = plan.isText
        ? undefined
        : numericString(source.toString("utf8", from + 1, to - 1));
      if (number === undefined) {
        out.set(TEXT_FIELD, o);
        o = copyBytes(source, from, to, out, o + TEXT_FIELD.length);
      } else {
        out.set(plan.field, o);
        o += plan.field.length;
        o += out.write(String(number), o, "latin1");
      }
    } else {
      out.set(plan.field, o);
      o += plan.field.length;
      if (kind === ValueKind.True || kind === ValueKind.False) {
        const word = kind === ValueKind.True ? ONE : ZERO;
        out.set(word, o);
        o += word.length;
      } else if (kind === ValueKind.NumberText) {
        o += out.write(scanned.numberText[m] ?? "", o, "latin1");
      } else o = copyBytes(source, from, to, out, o);
    }
    this.out.end = copyBytes(this.secondsBytes, 0, this.secondsLength, out, o);
    this.lineDone();
  }
}

/** A plan's prefix, a tag and the plan's field as one buffer (cached per tag). */
function headOf(plan: BytePlan, tag: Tag): Buffer {
  let head = plan.heads.get(tag);
  if (head === undefined) {
    head = Buffer.concat([plan.prefix, tag.bytes, plan.field]);
    plan.heads.set(tag, head);
  }
  return head;
}

/**
 * Copies bytes [from, to) of `source` to `out` at `o`; returns the offset after them. A loop for
 * the few bytes of a value: Buffer.copy's own checks cost more than the copy.
 */
function copyBytes(source: Buffer, from: number, to: number, out: Buffer, o: number): number {
  if (to - from > 64) return o + source.copy(out, o, from, to);
  for (let i = from; i < to; i++) out[o++] = source[i] ?? 0;
  return o;
}
