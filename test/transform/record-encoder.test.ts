import type { DataRecord } from "../../src/records/data-record.js";
import { numericString, RecordEncoder, valuesIdTag } from "../../src/transform/record-encoder.js";
import { type DecodedValueId, ValueIdDecoder } from "../../src/transform/value-id.js";
import { lineMeasurement, safeMeasurement } from "../support/schema-oracle.js";

const T = "2026-06-01T12:00:00";
const S = Date.UTC(2026, 5, 1, 12) / 1000;
const TAGS = "device_id=site\\ A+1,resource_id=all_data";

function encode(records: DataRecord[], device = "site A+1") {
  const out: string[] = [];
  const stats = new RecordEncoder(new ValueIdDecoder(), device, "all_data").encode(records, out);
  return { lines: out, stats };
}

describe("RecordEncoder", () => {
  it.each<[string, DataRecord, string[]]>([
    [
      "a coded power value: measurement = name, unit and type tags, float value",
      { timestamp: T, values_id: 1, e_03_01_00_001_AC_activepower_L1: 2.5 },
      [`AC_activepower_L1,${TAGS},type=continuous,unit=kW,values_id=001 value=2.5 ${S}`],
    ],
    [
      "an integer number is still written as a float (no i suffix)",
      { timestamp: T, values_id: 0, e_03_07_04_000_total_solar_energy: 1234 },
      [`total_solar_energy,${TAGS},type=cumulative,unit=kWh,values_id=000 value=1234 ${S}`],
    ],
    [
      "a text value goes to field text, quotes and backslashes escaped",
      { timestamp: T, values_id: 1, e_00_00_03_001_mode: 'say "hi" \\o/' },
      [`mode,${TAGS},type=text,unit=none,values_id=001 text="say \\"hi\\" \\\\o/" ${S}`],
    ],
    [
      "a text value that looks like a number stays text",
      { timestamp: T, values_id: 1, e_00_00_03_001_mode: "42" },
      [`mode,${TAGS},type=text,unit=none,values_id=001 text="42" ${S}`],
    ],
    [
      "a numeric string where a number is expected becomes a float",
      { timestamp: T, values_id: 2, e_00_05_00_002_SOC: " 87.5 " },
      [`SOC,${TAGS},type=continuous,unit=%,values_id=002 value=87.5 ${S}`],
    ],
    [
      "a non-numeric string where a number is expected goes to text",
      { timestamp: T, values_id: 2, e_00_05_00_002_SOC: "n/a" },
      [`SOC,${TAGS},type=continuous,unit=%,values_id=002 text="n/a" ${S}`],
    ],
    [
      "alarm_index and alarm_name share one point in measurement alarm, tagged alarm (first key)",
      { timestamp: T, values_id: 0, alarm_index: 17, alarm_name: "Grid overvoltage" },
      [
        `alarm,alarm=Grid\\ overvoltage,${TAGS},type=alarm,unit=none,values_id=000 alarm_index=17,alarm_name="Grid overvoltage" ${S}`,
      ],
    ],
    [
      "alarm_index as a numeric string is a float; a numeric alarm_name is a string and a tag",
      { timestamp: T, values_id: 0, alarm_index: "5", alarm_name: 3 },
      [
        `alarm,alarm=3,${TAGS},type=alarm,unit=none,values_id=000 alarm_index=5,alarm_name="3" ${S}`,
      ],
    ],
    [
      "the alarm tag escapes commas, equals signs and spaces; line breaks become spaces",
      { timestamp: T, values_id: 0, alarm_index: 2, alarm_name: 'U=0, "grid"\nlost\\' },
      [
        `alarm,alarm=U\\=0\\,\\ "grid"\\ lost/,${TAGS},type=alarm,unit=none,values_id=000 alarm_index=2,alarm_name="U=0, \\"grid\\"\nlost\\\\" ${S}`,
      ],
    ],
    [
      "an empty alarm_name gives no tag (a tag cannot be empty)",
      { timestamp: T, values_id: 0, alarm_index: 4, alarm_name: "" },
      [`alarm,${TAGS},type=alarm,unit=none,values_id=000 alarm_index=4,alarm_name="" ${S}`],
    ],
    [
      "an alarm_index without a name (null) is written untagged, as before",
      { timestamp: T, values_id: 0, alarm_index: 4, alarm_name: null },
      [`alarm,${TAGS},type=alarm,unit=none,values_id=000 alarm_index=4 ${S}`],
    ],
    [
      "an alarm_name without an index is tagged too; other measurements of the record are not",
      { timestamp: T, values_id: 1, e_03_01_00_001_P: 1, alarm_name: "Fan" },
      [
        `P,${TAGS},type=continuous,unit=kW,values_id=001 value=1 ${S}`,
        `alarm,alarm=Fan,${TAGS},type=alarm,unit=none,values_id=001 alarm_name="Fan" ${S}`,
      ],
    ],
    [
      "a coded value whose measurement is alarm is not tagged",
      { timestamp: T, values_id: 0, e_00_00_00_000_alarm: 1, alarm_name: "Fan" },
      [
        `alarm,${TAGS},type=continuous,unit=none,values_id=000 value=1 ${S}`,
        `alarm,alarm=Fan,${TAGS},type=alarm,unit=none,values_id=000 alarm_name="Fan" ${S}`,
      ],
    ],
    [
      "protocol_id is meta; null members and values_id are skipped",
      { timestamp: T, values_id: 7, protocol_id: 12, e_03_01_00_000_total_solar_power: null },
      [`protocol_id,${TAGS},type=meta,unit=none,values_id=007 value=12 ${S}`],
    ],
    [
      "an uncoded id is its own measurement with type unknown",
      { timestamp: T, values_id: null, "weird id,=x": 1 },
      [`weird\\ id\\,=x,${TAGS},type=unknown,unit=none,values_id=none value=1 ${S}`],
    ],
    [
      "booleans become 1 and 0",
      { timestamp: T, values_id: 5, e_00_00_02_005_running: true },
      [`running,${TAGS},type=digital,unit=none,values_id=005 value=1 ${S}`],
    ],
    [
      "an unknown unit and type code still encode",
      { timestamp: T, values_id: 1, e_03_99_42_001_mystery: 1.5 },
      [`mystery,${TAGS},type=unknown_42,unit=unknown_03_99,values_id=001 value=1.5 ${S}`],
    ],
    [
      "an empty id is an uncoded measurement that InfluxDB can hold: _ (schema.md)",
      { timestamp: T, values_id: 1, "": 3 },
      [
        `${lineMeasurement(safeMeasurement(""))},${TAGS},type=unknown,unit=none,values_id=001 value=3 ${S}`,
      ],
    ],
  ])("%s", (_name, record, lines) => {
    expect(encode([record]).lines).toEqual(lines);
  });

  it("a record with only nulls gives no point; several records give their lines in order", () => {
    const { lines, stats } = encode([
      { timestamp: T, values_id: 1, e_03_01_00_001_P: null },
      { timestamp: T, values_id: 1, e_03_01_00_001_P: 1, e_03_02_00_001_U: 230 },
      { timestamp: "2026-06-01T12:01:00", values_id: 1, e_03_01_00_001_P: 2 },
    ]);
    expect(lines.map((l) => l.split(",")[0])).toEqual(["P", "U", "P"]);
    expect(stats).toEqual({ points: 3, collisions: 0 });
  });

  it("counts members that collide on one measurement, tags and field", () => {
    const { lines, stats } = encode([
      { timestamp: T, values_id: 1, e_03_01_00_001_P: 1, e_03_01_00_002_P: 2 },
    ]);
    expect(lines).toHaveLength(1);
    expect(stats.collisions).toBe(1);
  });

  it("decodes each value id once per encoder, however many records carry it", () => {
    class CountingDecoder extends ValueIdDecoder {
      readonly asked: string[] = [];
      override decode(id: string): DecodedValueId {
        this.asked.push(id);
        return super.decode(id);
      }
    }
    const decoder = new CountingDecoder();
    const encoder = new RecordEncoder(decoder, "site A+1", "all_data");
    const records: DataRecord[] = [1, 2, 3].map((v) => ({
      timestamp: `2026-06-01T12:0${v}:00`,
      values_id: 1,
      e_03_01_00_001_P: v,
      alarm_index: v,
    }));
    const out: string[] = [];
    expect(encoder.encode(records, out)).toEqual({ points: 6, collisions: 0 });
    expect(decoder.asked).toEqual(["e_03_01_00_001_P", "alarm_index"]);
  });

  it("replays give identical lines", () => {
    const record = { timestamp: T, values_id: 1, e_03_01_00_001_P: 1.25, alarm_name: "x" };
    expect(encode([record]).lines).toEqual(encode([record]).lines);
  });
});

describe("valuesIdTag", () => {
  it.each([
    [1, "001"],
    [42, "042"],
    [1234, "1234"],
    ["7", "007"],
    ["007", "007"],
    [0, "000"],
    [null, "none"],
    [undefined, "none"],
    ["", "none"],
    [" \n", "none"],
    [1.5, "1.5"],
    [-1, "-1"],
    ["abc", "abc"],
    // padded only when it is a whole number: a tag that starts with digits is kept as it is
    ["7a", "7a"],
  ] as const)("%j -> %s", (member, tag) => {
    expect(valuesIdTag(member)).toBe(tag);
  });
});

describe("numericString: a number in a string (docs/schema.md: a decimal, sign and exponent allowed)", () => {
  it.each<[string, number | undefined]>([
    ["42", 42],
    [" 42 ", 42],
    ["-.5", -0.5],
    [".55", 0.55],
    ["+3.", 3],
    ["1e10", 1e10],
    ["1e+5", 100_000],
    ["2.5E-10", 2.5e-10],
    ["", undefined],
    ["  ", undefined],
    ["0x10", undefined],
    ["0b1", undefined],
    ["1e", undefined],
    ["1e5x", undefined],
    ["x1", undefined],
    ["Infinity", undefined],
    ["1e400", undefined],
  ])("%j -> %p", (text, expected) => {
    expect(numericString(text)).toBe(expected);
  });
});
