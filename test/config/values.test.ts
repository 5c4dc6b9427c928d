import { isoDuration, printValue, syncStart } from "../../src/config/values.js";

describe("printValue", () => {
  it.each([
    ["PT1H", "PT1H"],
    ["p7d", "P7D"],
    ["P1Y2M3W4DT5H6M7S", "P1Y2M3W4DT5H6M7S"],
    ["PT0S", "PT0S"],
  ])("prints the duration %s as %s", (text, printed) => {
    expect(printValue(isoDuration.parse(text))).toBe(printed);
  });

  it.each([
    ["P30D", "P30D"],
    ["-12h", "PT12H"],
    ["-90m", "PT90M"],
    ["now", "PT0S"],
    ["2025-06-01", "2025-06-01T00:00:00.000Z"],
    ["2025-06-01T12:00:00+02:00", "2025-06-01T10:00:00.000Z"],
  ])("prints the start %s as %s, which parses back the same", (text, printed) => {
    const start = syncStart.parse(text);
    expect(printValue(start)).toBe(printed);
    expect(syncStart.parse(printed)).toEqual(start);
  });

  it("leaves text, numbers and booleans as they are", () => {
    expect([printValue("x"), printValue(4), printValue(false)]).toEqual(["x", 4, false]);
  });
});
