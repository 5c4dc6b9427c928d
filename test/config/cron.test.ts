/**
 * SYNC_CRON's grammar (src/config/cron.ts): five fields, each within its range, ascending ranges,
 * steps within the field, checked before node-cron (which would take more).
 */
import cron from "node-cron";
import { cronProblem, normalizeCron } from "../../src/config/cron.js";

describe("cronProblem", () => {
  it.each([
    "*/5 * * * *",
    "0 * * * *",
    "* * * * *",
    "0 0 1 1 *",
    "*/59 * * * *",
    "0-30/10 8-18 * * mon-fri",
    "0 0 * JAN,feb,Dec *",
    "0 0 * * sunday",
    "0 0 * * 0,7",
    "0 0 1-31/2 * *",
    "15,45 */2 * * *",
    "@hourly",
    "@DAILY",
    "  */5   * * * *  ",
  ])("takes %j, and so does node-cron", (expression) => {
    expect(cronProblem(expression)).toBeUndefined();
    expect(cron.validate(normalizeCron(expression))).toBe(true);
  });

  it.each([
    [
      "* * * * * *",
      "has 6 fields: a seconds field is not taken (a sync runs at most once a minute); give 5: " +
        "minute hour day-of-month month day-of-week, such as */5 * * * *",
    ],
    ["*/30 * * * * *", /^has 6 fields: a seconds field is not taken/],
    ["whenever", "must be a cron expression such as */5 * * * *"],
    ["* * * *", "must be a cron expression such as */5 * * * *"],
    ["*/1000 * * * *", '"*/1000" in the minute field: the step must be from 1 to 59'],
    ["*/0 * * * *", '"*/0" in the minute field: the step must be from 1 to 59'],
    ["0-59/100 * * * *", '"0-59/100" in the minute field: the step must be from 1 to 59'],
    ["0 */24 * * *", '"*/24" in the hour field: the step must be from 1 to 23'],
    [
      "5-1 * * * *",
      '"5-1" in the minute field is a range that goes down: write it from low to high',
    ],
    [
      "0 0 * * fri-mon",
      '"fri-mon" in the day-of-week field is a range that goes down: write it from low to high',
    ],
    ["60 * * * *", '"60" in the minute field is outside 0 to 59'],
    ["0 24 * * *", '"24" in the hour field is outside 0 to 23'],
    ["0 0 0 * *", '"0" in the day-of-month field is outside 1 to 31'],
    ["0 0 * 13 *", '"13" in the month field is outside 1 to 12'],
    ["0 0 * * 8", '"8" in the day-of-week field is outside 0 to 7'],
    ["0 0 * foo *", '"foo" in the month field is not a value from 1 to 12'],
    [
      "5/10 * * * *",
      '"5/10" in the minute field: a step needs * or a range before it (such as */10 or 5-59/10)',
    ],
    ["1,,2 * * * *", '"" in the minute field is not a value, a range a-b or a step */n'],
    ["0 0 L * *", '"L" in the day-of-month field is not a value from 1 to 31'],
    ["0 0 ? * *", '"?" in the day-of-month field is not a value, a range a-b or a step */n'],
    [
      "0 0 31 2 *",
      "never runs: none of its months has that day of the month (as 30 or 31 in February)",
    ],
  ])("refuses %j: %s", (expression, problem) => {
    const found = cronProblem(expression);
    if (typeof problem === "string") expect(found).toBe(problem);
    else expect(found).toMatch(problem);
  });

  it("normalizes what node-cron gets: trimmed, one space between fields", () => {
    expect(normalizeCron("  */5 \t *  * * *\n")).toBe("*/5 * * * *");
  });
});
