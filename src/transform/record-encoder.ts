import type { DataRecord, RecordMember } from "../records/data-record.js";
import { parseRecordTime } from "../records/data-record.js";
import { escapeMeasurement, escapeTag, quoteString } from "./line-protocol.js";
import type { ValueIdDecoder } from "./value-id.js";

/** Tag `values_id` of a record: whole numbers zero-padded to 3 digits, `none` when absent or blank. */
export function valuesIdTag(member: RecordMember | boolean | undefined): string {
  if (member === null || member === undefined) return "none";
  const text = String(member).trim();
  if (text === "") return "none";
  return /^\d+$/.test(text) ? text.padStart(3, "0") : text;
}

const NUMERIC_RE = /^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$/;

/** A string that holds a finite number, as a number; undefined otherwise. */
export function numericString(text: string): number | undefined {
  if (!NUMERIC_RE.test(text)) return undefined;
  const n = Number(text);
  return Number.isFinite(n) ? n : undefined;
}

/**
 * Tag `alarm` of a record's alarm point: the record's `alarm_name` as written after the
 * measurement (`,alarm=…`, escaped), "" when the record has no name (absent, null or "": a tag
 * cannot be empty). The tag key is not `alarm_name`, the field's key: InfluxQL could not tell them
 * apart.
 */
export function alarmTagOf(name: RecordMember | boolean | undefined): string {
  if (name === null || name === undefined) return "";
  const text = String(name);
  return text === "" ? "" : `,alarm=${escapeTag(text)}`;
}

/** What one value id contributes, precomputed once per encoder. */
export interface IdPlan {
  /** `measurement,device_id=…,resource_id=…,type=…,unit=…,values_id=` (values_id appended per record). */
  readonly seriesPrefix: string;
  /** The escaped measurement, the start of {@link seriesPrefix} (the alarm tag goes after it). */
  readonly measurement: string;
  readonly field: "value" | "alarm_index" | "alarm_name";
  /** Text-type values keep numeric strings as text. */
  readonly isText: boolean;
}

export interface EncodeStats {
  points: number;
  /** Members of one record that landed on the same measurement, tags and field (the later is kept). */
  collisions: number;
}

/**
 * Turns API records of one device and resource into line protocol (schema in the README): each
 * non-null member a field, those with the same measurement and tags on one line; numbers in
 * `value`, strings in `text`, alarms in `alarm_index`/`alarm_name` (tagged `alarm` with the
 * record's alarm name, see {@link alarmTagOf}); replays give identical lines.
 */
export class RecordEncoder {
  private readonly plans = new Map<string, IdPlan>();
  private readonly deviceTags: string;

  constructor(
    private readonly decoder: ValueIdDecoder,
    deviceId: string,
    resourceId: string,
  ) {
    this.deviceTags = `,device_id=${escapeTag(deviceId)},resource_id=${escapeTag(resourceId)}`;
  }

  /** Appends the lines of `records` to `out`; returns what was produced. */
  encode(records: readonly DataRecord[], out: string[]): EncodeStats {
    const stats: EncodeStats = { points: 0, collisions: 0 };
    let lastTimestamp: string | undefined;
    let seconds = 0;
    for (const record of records) {
      if (record.timestamp !== lastTimestamp) {
        lastTimestamp = record.timestamp;
        seconds = parseRecordTime(lastTimestamp) / 1000;
      }
      const valuesId = this.valuesIdTagOf(record.values_id);
      const alarmTag = alarmTagOf(record.alarm_name);
      // the record's points: series (measurement + tags) and fields, in order of appearance
      const points: { series: string; fields: [string, string][] }[] = [];
      for (const id in record) {
        if (id === "timestamp" || id === "values_id") continue;
        const member = record[id];
        if (member === null || member === undefined) continue;
        const plan = this.planFor(id);
        const field = fieldOf(plan, member);
        const series = plan.field === "value" ? plan.seriesPrefix : withAlarm(plan, alarmTag);
        const own = points.find((point) => point.series === series);
        if (!own) {
          points.push({ series, fields: [field] });
          continue;
        }
        const same = own.fields.findIndex(([key]) => key === field[0]);
        if (same < 0) own.fields.push(field);
        else {
          own.fields[same] = field;
          stats.collisions++;
        }
      }
      for (const { series, fields } of points) {
        let text = "";
        for (const [key, value] of fields)
          text += text === "" ? `${key}=${value}` : `,${key}=${value}`;
        out.push(`${series}${valuesId} ${text} ${seconds}`);
      }
      stats.points += points.length;
    }
    return stats;
  }

  private readonly valuesIdTags = new Map<RecordMember | boolean | undefined, string>();

  /** The escaped values_id tag of a record, cached per distinct value. */
  private valuesIdTagOf(member: RecordMember | boolean | undefined): string {
    let tag = this.valuesIdTags.get(member);
    if (tag === undefined) {
      tag = escapeTag(valuesIdTag(member));
      this.valuesIdTags.set(member, tag);
    }
    return tag;
  }

  /** What value id `id` becomes (decoded once per encoder). */
  planFor(id: string): IdPlan {
    let plan = this.plans.get(id);
    if (!plan) {
      const decoded = this.decoder.decode(id);
      const measurement = escapeMeasurement(decoded.measurement);
      plan = {
        seriesPrefix:
          `${measurement}${this.deviceTags}` +
          `,type=${escapeTag(decoded.type)},unit=${escapeTag(decoded.unit)},values_id=`,
        measurement,
        field: decoded.field ?? "value",
        isText: decoded.type === "text",
      };
      this.plans.set(id, plan);
    }
    return plan;
  }
}

/**
 * The series prefix of an alarm id's point: the tag `alarm` (see {@link alarmTagOf}) right after
 * the measurement, where its key sorts among the others (InfluxDB's canonical order).
 */
function withAlarm(plan: IdPlan, alarmTag: string): string {
  return plan.measurement + alarmTag + plan.seriesPrefix.slice(plan.measurement.length);
}

/** The field key and line-protocol value of one member. */
function fieldOf(plan: IdPlan, member: string | number | boolean): [string, string] {
  if (plan.field === "alarm_name") return ["alarm_name", quoteString(String(member))];
  if (typeof member === "boolean") return [plan.field, member ? "1" : "0"];
  if (typeof member === "number") return [plan.field, String(member)];
  if (!plan.isText) {
    const n = numericString(member);
    if (n !== undefined) return [plan.field, String(n)];
  }
  return ["text", quoteString(member)];
}
