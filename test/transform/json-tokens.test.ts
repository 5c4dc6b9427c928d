/**
 * The JSON token readers of the transcoder's fast path (src/transform/json-tokens.ts), read
 * directly with offsets written by hand: the offset after a token, NEED_MORE when the bytes end
 * first (the token cut at every byte, with the rest of the bytes both absent and present past
 * `limit`), AS_TEXT when it is not read there. Timestamps against Date.UTC.
 */
import { AS_TEXT, NEED_MORE } from "../../src/transform/json-array-scanner.js";
import * as tokens from "../../src/transform/json-tokens.js";
import { answerBytes, elementBytes, requestFor, transcodeAnswer } from "../support/answer-fuzz.js";
import { DRIFT, oracleAnswer } from "../support/answer-oracle.js";

const {
  FALSE_BYTES,
  keyBytes,
  literal,
  matchKey,
  matchKeyWords,
  NULL_BYTES,
  numberEnd,
  plainString,
  skipSpaces,
  TRUE_BYTES,
  timestampSeconds,
} = tokens;

const bytesOf = (text: string) => Buffer.from(text, "latin1");

/** Every cut of `full` at a limit in [from, to]: the bytes ending there, and the whole bytes. */
function cuts(full: Buffer, from: number, to: number): Array<[Buffer, number]> {
  const out: Array<[Buffer, number]> = [];
  for (let limit = from; limit <= to; limit++) {
    out.push([full.subarray(0, limit), limit], [full, limit]);
  }
  return out;
}

describe("skipSpaces", () => {
  it("stops at the first byte that is not a JSON space, and at limit", () => {
    expect(skipSpaces(bytesOf(" \t\n\r x"), 0, 6)).toBe(5);
    expect(skipSpaces(bytesOf("x  "), 1, 3)).toBe(3);
    expect(skipSpaces(bytesOf("    "), 1, 2)).toBe(2);
    expect(skipSpaces(bytesOf("\v x"), 0, 3)).toBe(0);
  });
});

describe("matchKey and matchKeyWords", () => {
  const KEY = "e_03_01_power"; // 13 bytes: three whole words and one byte
  const key = keyBytes(KEY);
  const at = (text: string) => {
    const bytes = bytesOf(`{"${text}`);
    return { bytes, view: new DataView(bytes.buffer, bytes.byteOffset, bytes.length) };
  };
  const both = (text: string, limit?: number) => {
    const { bytes, view } = at(text);
    const end = limit ?? bytes.length;
    return [matchKey(bytes, 2, end, key.bytes), matchKeyWords(bytes, view, 2, end, key)];
  };

  it("keyBytes keeps the bytes and their whole little-endian words", () => {
    expect(keyBytes("abcdefghij").words).toEqual(Int32Array.from([0x64636261, 0x68676665]));
    expect(key.bytes.toString("latin1")).toBe(KEY);
    expect(key.words.length).toBe(3);
  });

  it("the offset after the closing quote for the key itself", () => {
    expect(both(`${KEY}":1`)).toEqual([16, 16]);
  });

  it("AS_TEXT for another key: a byte off in each word, in the tail, or more text after it", () => {
    for (let k = 0; k < KEY.length; k++) {
      const other = `${KEY.slice(0, k)}#${KEY.slice(k + 1)}":1`;
      expect(both(other)).toEqual([AS_TEXT, AS_TEXT]);
    }
    expect(both(`${KEY}x":1`)).toEqual([AS_TEXT, AS_TEXT]);
    expect(both(`${KEY.slice(0, 12)}":1`)).toEqual([AS_TEXT, AS_TEXT]);
  });

  it("NEED_MORE when the bytes end inside the key or before its quote, whatever lies past limit", () => {
    const full = at(`${KEY}":1`).bytes;
    for (const [bytes, limit] of cuts(full, 2, 15)) {
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
      expect([limit, matchKey(bytes, 2, limit, key.bytes)]).toEqual([limit, NEED_MORE]);
      expect([limit, matchKeyWords(bytes, view, 2, limit, key)]).toEqual([limit, NEED_MORE]);
    }
    // what lies past limit is not read: a cut key still needs more though the rest differs
    expect(both(`e_0X_01_power":1`, 5)).toEqual([NEED_MORE, NEED_MORE]);
  });

  it("AS_TEXT as soon as the bytes known differ, cut or not", () => {
    expect(both(`e_1`, 5)).toEqual([AS_TEXT, AS_TEXT]);
  });
});

describe("literal", () => {
  const table: Array<[string, Buffer, number]> = [
    [" null,", NULL_BYTES, 5],
    [" true}", TRUE_BYTES, 5],
    [" false ", FALSE_BYTES, 6],
    [" nulx,", NULL_BYTES, AS_TEXT],
    [" tru ", TRUE_BYTES, AS_TEXT],
    [" fals0", FALSE_BYTES, AS_TEXT],
    [" fXlse", FALSE_BYTES, AS_TEXT],
  ];
  it.each(table)("%j", (text, word, end) => {
    expect(literal(bytesOf(text), 1, text.length, word)).toBe(end);
  });

  it("NEED_MORE when the bytes end inside it, whatever lies past limit", () => {
    for (const [text, word] of [
      [" null,", NULL_BYTES],
      [" false,", FALSE_BYTES],
    ] as const) {
      for (const [bytes, limit] of cuts(bytesOf(text), 2, text.length - 2)) {
        expect([text, limit, literal(bytes, 1, limit, word)]).toEqual([text, limit, NEED_MORE]);
      }
    }
    expect(literal(bytesOf(" nuXX"), 1, 3, NULL_BYTES)).toBe(NEED_MORE);
    // the bytes may end right after it: the caller asks for more to see what follows
    expect(literal(bytesOf(" null"), 1, 5, NULL_BYTES)).toBe(5);
    expect(literal(bytesOf(" false,"), 1, 6, FALSE_BYTES)).toBe(6);
  });
});

describe("plainString", () => {
  const table: Array<[string, Buffer, number]> = [
    ["plain", bytesOf(`"abc","x"`), 5],
    ["empty", bytesOf(`"",`), 2],
    ["UTF-8", Buffer.from(`"é😀",`, "utf8"), 8],
    ["a lone 0x80", Buffer.from([0x22, 0x61, 0x80, 0x22, 0x2c]), AS_TEXT],
    ["a cut sequence", Buffer.from([0x22, 0xc3, 0x22, 0x2c]), AS_TEXT],
    ["an escape", bytesOf(`"a\\nb",`), AS_TEXT],
    ["a control character", bytesOf(`"a\u0001b",`), AS_TEXT],
    ["a raw line break", bytesOf(`"a\nb",`), AS_TEXT],
    ["0x1f", bytesOf(`"a\u001fb",`), AS_TEXT],
  ];
  it.each(table)("%s", (_name, bytes, end) => {
    expect(plainString(bytes, 1, bytes.length)).toBe(end);
  });

  it("NEED_MORE until its closing quote is in the bytes", () => {
    for (const [bytes, limit] of cuts(bytesOf(`"abc",`), 1, 4)) {
      expect(plainString(bytes, 1, limit)).toBe(NEED_MORE);
    }
  });
});

describe("numberEnd and numberIsShortest", () => {
  /** [number, its shortest form per the contract: String(Number(text)) === text, <= 15 digits]. */
  const table: Array<[string, boolean]> = [
    ["0", true],
    ["-0", false],
    ["1", true],
    ["9", true],
    ["-7", true],
    ["123456789012345", true],
    ["1234567890123456", false],
    ["-123456789012345", true],
    ["12345678901234.5", true],
    ["1.234567890123456", false],
    ["1.5", true],
    ["-2.25", true],
    ["1.50", false],
    ["10", true],
    ["0.5", true],
    ["-0.5", true],
    ["0.05", true],
    ["0.000001", true],
    ["0.0000001", false],
    ["0.0000010", false],
    ["0.123456789012345", true],
    ["0.1234567890123456", false],
    ["0.000123456789012345", true],
    ["0.0001234567890123456", false],
    ["1e5", false],
    ["1E5", false],
    ["1e+5", false],
    ["1e-5", false],
    ["-1.5E-10", false],
    ["0e0", false],
  ];
  it.each(table)("%s", (text, shortest) => {
    const bytes = bytesOf(`[  ${text},}`);
    const end = numberEnd(bytes, 3, bytes.length);
    expect([end, tokens.numberIsShortest]).toEqual([3 + text.length, shortest]);
    // the contract's reading of a shortest form (conservative: true only where it holds)
    if (shortest) expect(String(Number(text))).toBe(text);
  });

  const notNumbers = ["x", "-x", "-", "+1", ".5", "1.", "1.x", "1e", "1e+", "1ex", "1e+x", "-a"];
  it.each(notNumbers)("%j, then more text, is AS_TEXT", (text) => {
    const bytes = bytesOf(`[ ${text},}`);
    expect(numberEnd(bytes, 2, bytes.length)).toBe(AS_TEXT);
  });

  it("a number that runs into more text ends before it", () => {
    expect(numberEnd(bytesOf("01,"), 0, 3)).toBe(1);
    expect(numberEnd(bytesOf("1x"), 0, 2)).toBe(1);
    expect(numberEnd(bytesOf("1.5.5"), 0, 5)).toBe(3);
  });

  it("NEED_MORE when the bytes end anywhere in it, whatever lies past limit", () => {
    for (const [text] of table) {
      for (const [bytes, limit] of cuts(bytesOf(`[ ${text},}`), 3, 2 + text.length)) {
        expect([text, limit, numberEnd(bytes, 2, limit)]).toEqual([text, limit, NEED_MORE]);
      }
    }
  });
});

describe("timestampSeconds", () => {
  const two = (n: number) => String(n).padStart(2, "0");
  const text = (y: number, mo: number, d: number, h: number, mi: number, s: number) =>
    `${String(y).padStart(4, "0")}-${two(mo)}-${two(d)}T${two(h)}:${two(mi)}:${two(s)}`;
  /** Date.UTC's seconds when it names the same fields (a real second), else undefined. */
  function oracle(y: number, mo: number, d: number, h: number, mi: number, s: number) {
    const date = new Date(0);
    date.setUTCFullYear(y, mo - 1, d);
    date.setUTCHours(h, mi, s, 0);
    const same =
      date.getUTCFullYear() === y &&
      date.getUTCMonth() === mo - 1 &&
      date.getUTCDate() === d &&
      date.getUTCHours() === h &&
      date.getUTCMinutes() === mi &&
      date.getUTCSeconds() === s;
    return same ? date.getTime() / 1000 : undefined;
  }
  const read = (t: string) => timestampSeconds(bytesOf(`"${t}"`), 1);

  it("every day (and day 0, 29-32) of leap, common and century years", () => {
    const years = [1, 399, 400, 1600, 1900, 1969, 1970, 2000, 2023, 2024, 2026, 2100, 2400, 9999];
    let real = 0;
    for (const y of years) {
      for (let mo = 0; mo <= 13; mo++) {
        for (let d = 0; d <= 32; d++) {
          const h = (d * 7) % 24;
          const mi = (mo * 13 + d) % 60;
          const s = (y + d) % 60;
          const expected = oracle(y, mo, d, h, mi, s);
          if (expected !== undefined) real++;
          const t = text(y, mo, d, h, mi, s);
          expect([t, read(t)]).toEqual([t, expected]);
        }
      }
    }
    expect(real).toBe(years.length * 365 + 5); // 2000, 2024, 400, 1600, 2400 are leap years
  });

  it("every second's fields at their bounds", () => {
    for (const [h, mi, s] of [
      [0, 0, 0],
      [23, 59, 59],
      [24, 0, 0],
      [23, 60, 0],
      [23, 59, 60],
      [12, 30, 45],
    ] as const) {
      expect(read(text(2026, 6, 15, h, mi, s))).toBe(oracle(2026, 6, 15, h, mi, s));
    }
    expect(read("2026-06-15T23:59:59")).toBe(Date.UTC(2026, 5, 15, 23, 59, 59) / 1000);
    expect(read("2026-06-15T24:00:00")).toBeUndefined();
  });

  it("undefined when any byte is off its shape, and reads only the 19 bytes", () => {
    const good = "2026-06-15T12:30:45";
    for (let k = 0; k < good.length; k++) {
      for (const bad of ["/", ":", "x", " "]) {
        const t = `${good.slice(0, k)}${bad}${good.slice(k + 1)}`;
        if (t === good) continue;
        expect([t, read(t)]).toEqual([t, undefined]);
      }
    }
    expect(timestampSeconds(bytesOf(`"${good}Z"`), 1)).toBe(
      Date.UTC(2026, 5, 15, 12, 30, 45) / 1000,
    );
    expect(timestampSeconds(bytesOf(good.slice(0, 18)), 0)).toBeUndefined();
  });
});

describe("the fast path reads plain records and leaves the others to JSON.parse", () => {
  const A = "e_03_01_00_000_total_solar_power";
  const B = "e_03_01_00_000_total_load_power";
  const MODE = "e_00_00_03_001_operating_mode";
  const at = (minute: number) => `2026-06-15T00:${String(minute).padStart(2, "0")}:00`;
  /** [element, whether the fast path reads it]: one timestamp each, so none is a duplicate. */
  const rows: Array<[string, boolean]> = [
    [`{"timestamp":"${at(0)}","${A}":0,"${B}":-7}`, true],
    [`{"timestamp":"${at(1)}","${A}":1.5,"${B}":-2.25,"${MODE}":"auto"}`, true],
    [`{"timestamp":"${at(2)}","${A}":1.50,"${B}":1e3}`, true],
    [`{"timestamp":"${at(3)}","${A}":-0,"${B}":0.0000001}`, true],
    [`{ "timestamp" : "${at(4)}" , "${A}" : 12345678901234567 , "${B}" : null }`, true],
    [`{"timestamp":"${at(5)}","values_id":3,"${A}":1E-2,"${MODE}":"é"}`, true],
    [`{"timestamp":"${at(6)}","values_id":"x","${MODE}":true,"${A}":false}`, true],
    [`{"timestamp":"${at(7)}","${MODE}":"a\\nb","${A}":1}`, false],
    [`{"timestamp":"${at(8)}","${MODE}":"a\u0001b","${A}":1}`, false],
    [`{"timestamp":"${at(9)}","${MODE}":"bad \uE000","${A}":1}`, false],
    [`{"timestamp":"${at(10)}","${A}":1,"${A}":2}`, false],
    [`{"timestamp":"${at(11)}","${A}":1e400}`, false],
    [`{"timestamp":"${at(12)}\\u0030","${A}":1}`, false],
    [`{"timestamp":"2026-02-30T00:00:00","${A}":1}`, false],
    [`{"timestamp":"2026-06-15 00:13:00","${A}":1}`, false],
  ];
  it("the same lines as the oracle, and fastRows counts the plain rows only", () => {
    const elements = rows.map(([text]) => elementBytes(text));
    const request = requestFor([A, B, MODE]);
    for (const space of ["", " "]) {
      const body = answerBytes(elements, space);
      const expected = oracleAnswer(elements, request, 100);
      if (expected === DRIFT) throw new Error("the fixed answer is not meant to drift");
      const { fastRows, ...got } = transcodeAnswer(body, request, { batchLines: 100 });
      expect(got).toEqual(expected);
      expect(fastRows).toBe(rows.filter(([, fast]) => fast).length);
    }
  });
});
