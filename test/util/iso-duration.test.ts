import {
  fixedDurationMs,
  parseIsoDuration,
  subtractDuration,
} from "../../src/util/iso-duration.js";
import { parseUtcInstant } from "../../src/util/utc-time.js";

describe("parseIsoDuration", () => {
  it.each([
    ["PT1H", 3_600_000],
    ["P7D", 7 * 86_400_000],
    ["P2W", 14 * 86_400_000],
    ["PT90M", 5_400_000],
    ["PT1.5S", 1500],
    ["P1DT2H3M4S", 86_400_000 + 7_384_000],
    ["pt1h", 3_600_000],
  ])("%s is %i ms", (text, ms) => {
    const d = parseIsoDuration(text);
    expect(d).toBeDefined();
    if (d) expect(fixedDurationMs(d)).toBe(ms);
  });

  it.each(["", "P", "PT", "1H", "P1H", "PT1D", "P-1D", "P1.5D", "P1DT"])("rejects %j", (text) => {
    expect(parseIsoDuration(text)).toBeUndefined();
  });

  it("subtracts calendar months and years", () => {
    const from = new Date("2024-03-31T06:00:00Z");
    const p = (s: string) => parseIsoDuration(s) ?? fail(s);
    expect(subtractDuration(from, p("P1M"))).toEqual(new Date("2024-02-29T06:00:00Z"));
    expect(subtractDuration(from, p("P1Y1M"))).toEqual(new Date("2023-02-28T06:00:00Z"));
    expect(subtractDuration(from, p("P1MT6H"))).toEqual(new Date("2024-02-29T00:00:00Z"));
  });
});

function fail(what: string): never {
  throw new Error(`unparsed ${what}`);
}

describe("parseUtcInstant", () => {
  it.each([
    ["2025-06-01", "2025-06-01T00:00:00.000Z"],
    ["2025-06-01T12:30", "2025-06-01T12:30:00.000Z"],
    ["2025-06-01T12:30:15", "2025-06-01T12:30:15.000Z"],
    ["2025-06-01T12:30:15Z", "2025-06-01T12:30:15.000Z"],
    ["2025-06-01T12:30:15+02:00", "2025-06-01T10:30:15.000Z"],
    ["2025-06-01 12:30:15.250", "2025-06-01T12:30:15.250Z"],
  ])("%s is %s", (text, iso) => {
    expect(parseUtcInstant(text)?.toISOString()).toBe(iso);
  });

  it.each(["2025-02-30", "2025-13-01", "2025-06-01T24:00", "yesterday", "20250601", ""])(
    "rejects %j",
    (text) => {
      expect(parseUtcInstant(text)).toBeUndefined();
    },
  );
});
