/**
 * The bounds of user times (src/util/time-bounds.ts): none before 1970, none after now (a --to a
 * day ahead), ranges of at most ten years unless --yes. `now` is given: no wall clock.
 */
import { instantProblem, rangeProblem } from "../../src/util/time-bounds.js";

const NOW = new Date("2026-06-15T12:00:00Z");
const at = (iso: string) => new Date(iso);

describe("instantProblem", () => {
  it("takes 1970-01-01T00:00:00Z itself and any time up to now", () => {
    for (const t of ["1970-01-01T00:00:00Z", "2000-01-01T00:00:00Z", "2026-06-15T12:00:00Z"]) {
      expect(instantProblem("--from", t, at(t), NOW, "not-after-now")).toBeUndefined();
    }
  });

  it("refuses a time before 1970, naming the flag, what was given and the bound", () => {
    expect(instantProblem("--from", "1969-12-31", at("1969-12-31"), NOW, "not-after-now")).toBe(
      "--from 1969-12-31 is before 1970-01-01T00:00:00Z, the earliest time energy-etl takes",
    );
    expect(instantProblem("--from", "0000-01-01", at("0000-01-01"), NOW, "not-after-now")).toBe(
      "--from 0000-01-01 is before 1970-01-01T00:00:00Z, the earliest time energy-etl takes",
    );
  });

  it("says which instant a time before now came to, and refuses one that left the calendar", () => {
    expect(
      instantProblem("--from", "P100Y", at("1926-06-15T12:00:00.250Z"), NOW, "not-after-now"),
    ).toBe(
      "--from P100Y (1926-06-15T12:00:00Z) is before 1970-01-01T00:00:00Z, the earliest time energy-etl takes",
    );
    expect(instantProblem("--from", "P1000000Y", new Date(Number.NaN), NOW, "not-after-now")).toBe(
      "--from P1000000Y is before 1970-01-01T00:00:00Z, the earliest time energy-etl takes",
    );
  });

  it("refuses a --from after now, and a --to more than a day after now", () => {
    const second = at("2026-06-15T12:00:01Z");
    expect(instantProblem("--from", "2026-06-15T12:00:01Z", second, NOW, "not-after-now")).toBe(
      "--from 2026-06-15T12:00:01Z is in the future: there is no data after now",
    );
    expect(
      instantProblem(
        "--to",
        "2026-06-16T12:00:00Z",
        at("2026-06-16T12:00:00Z"),
        NOW,
        "a-day-ahead",
      ),
    ).toBeUndefined();
    expect(
      instantProblem(
        "--to",
        "2026-06-16T12:00:01Z",
        at("2026-06-16T12:00:01Z"),
        NOW,
        "a-day-ahead",
      ),
    ).toBe(
      "--to 2026-06-16T12:00:01Z is more than a day after now: there is no data after now (a --to up to a day ahead stops at now)",
    );
  });
});

describe("rangeProblem", () => {
  it("takes ten calendar years, not a second more, unless --yes", () => {
    const to = at("2026-06-15T12:00:00Z");
    expect(rangeProblem(at("2016-06-15T12:00:00Z"), to, false)).toBeUndefined();
    expect(rangeProblem(at("2016-06-15T11:59:59Z"), to, false)).toBe(
      "--from 2016-06-15T11:59:59Z to --to 2026-06-15T12:00:00Z is 10.0 years, more than 10: give a shorter range, or add --yes to go ahead",
    );
    expect(rangeProblem(at("1970-01-01T00:00:00Z"), to, true)).toBeUndefined();
  });
});
