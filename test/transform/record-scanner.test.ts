/**
 * The fast path's record reader (src/transform/record-scanner.ts), read directly: which records
 * it reads (the offset after the record, its timestamp, `values_id` and members, each member's
 * kind and bytes, all written out by hand here), and which it leaves to the reference path
 * (AS_TEXT) or cannot finish yet (NEED_MORE). Its key-order and timestamp caches are read
 * through records that differ from the one before in one key or one byte.
 */
import { AS_TEXT, NEED_MORE } from "../../src/transform/json-array-scanner.js";
import { RecordScanner, ValueKind } from "../../src/transform/record-scanner.js";

const TS = "2024-01-05T06:07:08";
/** The oracle for a timestamp: ECMAScript's own date parser, the text read as UTC. */
const secondsOf = (ts: string) => Date.parse(`${ts}Z`) / 1000;

/** The requested value ids: plain ones, one with a space, one with a backslash, one with a tab. */
const KEYS = ["e_a", "e_b", "e b", "a\\", "a\tb"];

type Member = [key: string, kind: keyof typeof ValueKind, text: string];
interface Found {
  readonly timestampS: number;
  readonly valuesId: unknown;
  readonly members: Member[];
}

/** Reads `record` (all its bytes known) with `scanner`: the offset and what it found. */
function read(record: string, scanner = new RecordScanner(KEYS), keys = KEYS) {
  const bytes = Buffer.from(record, "utf8");
  const end = scanner.read(bytes, 0, bytes.length);
  const members: Member[] = [];
  for (let m = 0; m < scanner.members; m++) {
    const kind = scanner.kind[m] ?? -1;
    const text =
      kind === ValueKind.NumberText
        ? (scanner.numberText[m] ?? "")
        : bytes.toString("utf8", scanner.start[m], scanner.end[m]);
    members.push([keys[scanner.key[m] ?? -1] ?? "?", ValueKind[kind] as Member[1], text]);
  }
  const found: Found = { timestampS: scanner.timestampS, valuesId: scanner.valuesId, members };
  return { end, length: bytes.length, found };
}

const record = (body: string) => `{"timestamp":"${TS}"${body}}`;

// each record, what the fast path must find in it
const FAST: Array<[string, string, Omit<Found, "timestampS">]> = [
  [
    "shortest numbers, a values_id digit",
    record(`,"values_id":1,"e_a":1.5,"e_b":-2`),
    {
      valuesId: 1,
      members: [
        ["e_a", "Number", "1.5"],
        ["e_b", "Number", "-2"],
      ],
    },
  ],
  ["values_id 0", record(`,"values_id":0`), { valuesId: 0, members: [] }],
  ["values_id 9", record(`,"values_id":9`), { valuesId: 9, members: [] }],
  ["values_id 12", record(`,"values_id":12`), { valuesId: 12, members: [] }],
  ["values_id -1", record(`,"values_id":-1`), { valuesId: -1, members: [] }],
  ["values_id 1.0", record(`,"values_id":1.0`), { valuesId: 1, members: [] }],
  ["values_id a string", record(`,"values_id":"7"`), { valuesId: "7", members: [] }],
  ["values_id null", record(`,"values_id":null`), { valuesId: null, members: [] }],
  ["values_id true", record(`,"values_id":true`), { valuesId: true, members: [] }],
  ["values_id false", record(`,"values_id":false`), { valuesId: false, members: [] }],
  ["no values_id", record(`,"e_a":3`), { valuesId: undefined, members: [["e_a", "Number", "3"]] }],
  [
    "numbers in another form: their text as JavaScript writes them",
    record(`,"e_a":1.50,"e_b":1E3,"e b":0.10`),
    {
      valuesId: undefined,
      members: [
        ["e_a", "NumberText", "1.5"],
        ["e_b", "NumberText", "1000"],
        ["e b", "NumberText", "0.1"],
      ],
    },
  ],
  [
    "booleans and a plain string, its quotes included",
    record(`,"e_a":true,"e_b":false,"e b":"on"`),
    {
      valuesId: undefined,
      members: [
        ["e_a", "True", "true"],
        ["e_b", "False", "false"],
        ["e b", "String", '"on"'],
      ],
    },
  ],
  [
    "a null member is not recorded",
    record(`,"e_a":null,"e_b":3`),
    { valuesId: undefined, members: [["e_b", "Number", "3"]] },
  ],
  [
    "spaces around colons and commas",
    `{ "timestamp" : "${TS}" ,\t"values_id" :\n2 , "e_a" : 4 }`,
    { valuesId: 2, members: [["e_a", "Number", "4"]] },
  ],
  [
    "the timestamp last, keys in another order",
    `{"e_b":5,"values_id":3,"e_a":6,"timestamp":"${TS}"}`,
    {
      valuesId: 3,
      members: [
        ["e_b", "Number", "5"],
        ["e_a", "Number", "6"],
      ],
    },
  ],
  [
    "a key with a space",
    record(`,"e b":7`),
    { valuesId: undefined, members: [["e b", "Number", "7"]] },
  ],
];

// records the reference path reads (or refuses): the fast path must leave them
const LEFT: Array<[string, string]> = [
  ["not an object", `[1]`],
  ["no member", `{}`],
  ["no timestamp", `{"e_a":1}`],
  ["an empty key", `{"":1,"timestamp":"${TS}"}`],
  ["an empty key after the timestamp", record(`,"":1`)],
  ["a key not requested", record(`,"e_c":1`)],
  ["values_id twice", record(`,"values_id":1,"values_id":2`)],
  ["values_id twice, the first null", record(`,"values_id":null,"values_id":2`)],
  ["a member twice", record(`,"e_a":1,"e_a":2`)],
  ["the timestamp twice", record(`,"timestamp":"${TS}"`)],
  ["a key with an escape", record(`,"e\\u005fa":1`)],
  // the key `a\` is requested; this key is `a":1}` unterminated: JSON.parse refuses it
  ["a key whose quote is escaped", `{"timestamp":"${TS}","a\\":1}`],
  // a raw tab in a string is not JSON, though the key `a<tab>b` is requested
  ["a key with a control character", record(`,"a\tb":1`)],
  ["no colon", `{"timestamp";"${TS}"}`],
  ["no opening brace", `x"timestamp":"${TS}"}`],
  ["a key without its opening quote", `{xtimestamp":"${TS}"}`],
  ["a key without its opening quote after a comma", record(`,xe_a":1`)],
  ["a byte between members", `{"timestamp":"${TS}"x"e_a":1}`],
  ["no comma", `{"timestamp":"${TS}" "e_a":1}`],
  ["the timestamp a number", `{"timestamp":1704434828}`],
  ["the timestamp not a string", `{"timestamp":x${TS}"}`],
  ["the timestamp longer, a brace after the first 19 bytes", `{"timestamp":"${TS} }"}`],
  ["the timestamp with a zone", `{"timestamp":"${TS}Z"}`],
  ["the timestamp shorter", `{"timestamp":"2024-01-05"}`],
  ["no such day", `{"timestamp":"2024-02-30T00:00:00"}`],
  ["a number out of a double's range", record(`,"e_a":1e400`)],
  ["a values_id out of a double's range", record(`,"values_id":-1e400`)],
  ["an object member", record(`,"e_a":{}`)],
  ["a string with an escape", record(`,"e_a":"a\\"b"`)],
];

describe("RecordScanner.read", () => {
  it.each(FAST)("reads %s", (_name, text, expected) => {
    const { end, length, found } = read(text);
    expect(end).toBe(length);
    expect(found).toEqual({ timestampS: secondsOf(TS), ...expected });
  });

  it("reads the same from a scanner that read each record before (its key order cached)", () => {
    const scanner = new RecordScanner(KEYS);
    for (const [name, text, expected] of [...FAST, ...FAST.slice().reverse()]) {
      const { end, length, found } = read(text, scanner);
      expect([name, end, found]).toEqual([
        name,
        length,
        { timestampS: secondsOf(TS), ...expected },
      ]);
    }
  });

  it.each(LEFT)("leaves a record with %s to the reference path", (_name, text) => {
    expect(read(text).end).toBe(AS_TEXT);
  });

  it("leaves them also when the record before had the same keys in the same places", () => {
    const scanner = new RecordScanner(KEYS);
    for (const [name, text] of LEFT) {
      read(record(`,"values_id":1,"e_a":1,"e_b":2`), scanner);
      read(record(`,"e_a":1,"values_id":1,"e b":2`), scanner);
      expect([name, read(text, scanner).end]).toEqual([name, AS_TEXT]);
    }
  });

  it("NEED_MORE for an empty record cut before its brace, though the brace lies past limit", () => {
    for (const text of ["{}", "{ }", "{\n\t}"]) {
      const bytes = Buffer.from(text, "utf8");
      expect([text, new RecordScanner(KEYS).read(bytes, 0, bytes.length - 1)]).toEqual([
        text,
        NEED_MORE,
      ]);
      expect([text, read(text).end]).toEqual([text, AS_TEXT]);
    }
  });

  it("NEED_MORE when the bytes end inside the record, whatever lies past limit", () => {
    const text = `{ "timestamp":"${TS}","values_id":12,"e_a":1.50,"e_b":"x","e b":null }`;
    const full = Buffer.from(text, "utf8");
    for (const trained of [false, true]) {
      const scanner = new RecordScanner(KEYS);
      if (trained) expect(scanner.read(full, 0, full.length)).toBe(full.length);
      for (let limit = 1; limit < full.length; limit++) {
        for (const bytes of [full.subarray(0, limit), full]) {
          expect([limit, scanner.read(bytes, 0, limit)]).toEqual([limit, NEED_MORE]);
        }
      }
    }
  });

  it("reads a record starting inside the bytes", () => {
    const text = record(`,"e_a":8`);
    const bytes = Buffer.from(`[${text},`, "utf8");
    const scanner = new RecordScanner(KEYS);
    expect(scanner.read(bytes, 1, bytes.length)).toBe(1 + text.length);
    expect([scanner.members, scanner.start[0], scanner.end[0]]).toEqual([
      1,
      text.length - 1,
      text.length,
    ]);
  });
});

describe("RecordScanner timestamps", () => {
  // one byte changed at each digit's place, each still a real second
  const VARIANTS = [
    "3024-01-05T06:07:08",
    "2124-01-05T06:07:08",
    "2014-01-05T06:07:08",
    "2025-01-05T06:07:08",
    "2024-11-05T06:07:08",
    "2024-02-05T06:07:08",
    "2024-01-15T06:07:08",
    "2024-01-06T06:07:08",
    "2024-01-05T16:07:08",
    "2024-01-05T07:07:08",
    "2024-01-05T06:17:08",
    "2024-01-05T06:08:08",
    "2024-01-05T06:07:18",
    "2024-01-05T06:07:09",
  ];

  it("each record's own second, when the one before differs in one byte", () => {
    const scanner = new RecordScanner(KEYS);
    for (const ts of [TS, ...VARIANTS.flatMap((v) => [v, TS])]) {
      const { end, length, found } = read(`{"timestamp":"${ts}","e_a":1}`, scanner);
      expect([ts, end, found.timestampS]).toEqual([ts, length, secondsOf(ts)]);
    }
  });

  it("a timestamp that is no real second is left, and the one read before is kept", () => {
    const scanner = new RecordScanner(KEYS);
    read(`{"timestamp":"${TS}"}`, scanner);
    expect(read(`{"timestamp":"2024-01-05T24:07:08"}`, scanner).end).toBe(AS_TEXT);
    expect(read(`{"timestamp":"${TS}"}`, scanner).found.timestampS).toBe(secondsOf(TS));
  });
});

describe("RecordScanner members", () => {
  const MANY = Array.from({ length: 300 }, (_, k) => `k${k}`);
  const withMembers = (count: number, nulls = 0) => {
    const members = MANY.slice(0, count).map((key, k) => `"${key}":${k}`);
    const empty = MANY.slice(count, count + nulls).map((key) => `"${key}":null`);
    return `{"timestamp":"${TS}",${[...members, ...empty].join(",")}}`;
  };

  it("reads at most 255 members; a record with more is the reference path's", () => {
    const scanner = new RecordScanner(MANY);
    const at255 = read(withMembers(255), scanner, MANY);
    expect(at255.end).toBe(at255.length);
    expect(at255.found.members.length).toBe(255);
    expect(at255.found.members[254]).toEqual(["k254", "Number", "254"]);
    expect(read(withMembers(256), scanner, MANY).end).toBe(AS_TEXT);
    expect(read(withMembers(256), new RecordScanner(MANY), MANY).end).toBe(AS_TEXT);
    // cut inside the 256th value: not known yet whether it ends the record
    const cut = Buffer.from(withMembers(256), "utf8");
    const limit = cut.length - 2; // `...,"k255":25` of `...,"k255":255}`
    expect(new RecordScanner(MANY).read(cut, 0, limit)).toBe(NEED_MORE);
  });

  it("null members do not count: 255 values and 44 nulls are read", () => {
    const { end, length, found } = read(withMembers(255, 44), new RecordScanner(MANY), MANY);
    expect([end, found.members.length]).toEqual([length, 255]);
  });

  it("members past the 256th place, after many nulls, are read as themselves", () => {
    const nulls = MANY.slice(0, 250).map((key) => `"${key}":null`);
    const values = MANY.slice(250, 260).map((key, k) => `"${key}":${k}`);
    const text = `{"timestamp":"${TS}",${[...nulls, ...values].join(",")}}`;
    const scanner = new RecordScanner(MANY);
    // the second time, with the key order of the first cached
    for (const pass of [1, 2]) {
      const { end, length, found } = read(text, scanner, MANY);
      const expected = MANY.slice(250, 260).map((key, k) => [key, "Number", String(k)]);
      expect([pass, end, found.members]).toEqual([pass, length, expected]);
    }
  });
});
