/** The days of a time zone rollups sum over (src/rollups/buckets.ts), DST included. */
import { dayOf, startOfLocalDate } from "../../src/rollups/buckets.js";

const s = (iso: string) => Date.parse(iso) / 1000;
const iso = (t: number) => new Date(t * 1000).toISOString().replace(".000", "");

describe("dayOf", () => {
  it.each([
    ["UTC", "2026-06-15T12:00:00Z", "2026-06-15T00:00:00Z", "2026-06-16T00:00:00Z", 24],
    ["Europe/Berlin", "2026-06-15T12:00:00Z", "2026-06-14T22:00:00Z", "2026-06-15T22:00:00Z", 24],
    // the spring change: 23 hours; the autumn one: 25
    ["Europe/Berlin", "2026-03-29T12:00:00Z", "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z", 23],
    ["Europe/Berlin", "2026-10-25T12:00:00Z", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z", 25],
    // a change at midnight: the day begins at 01:00 local, the first instant of its date
    [
      "America/Santiago",
      "2024-09-08T12:00:00Z",
      "2024-09-08T04:00:00Z",
      "2024-09-09T03:00:00Z",
      23,
    ],
    ["Asia/Kolkata", "2026-06-15T12:00:00Z", "2026-06-14T18:30:00Z", "2026-06-15T18:30:00Z", 24],
    // the last second of a day, and its first
    ["Europe/Berlin", "2026-06-15T21:59:59Z", "2026-06-14T22:00:00Z", "2026-06-15T22:00:00Z", 24],
    ["Europe/Berlin", "2026-06-15T22:00:00Z", "2026-06-15T22:00:00Z", "2026-06-16T22:00:00Z", 24],
  ])("%s: %s lies in [%s, %s), %i hours", (zone, at, start, end, hours) => {
    const day = dayOf(zone, s(at));
    expect([iso(day.startS), iso(day.endS)]).toEqual([iso(s(start)), iso(s(end))]);
    expect((day.endS - day.startS) / 3600).toBe(hours);
  });
});

describe("startOfLocalDate", () => {
  it("a local date's first instant, east and west of UTC and on a change to summer time", () => {
    expect(startOfLocalDate("UTC", "2026-03-23")).toBe(s("2026-03-23T00:00:00Z"));
    expect(startOfLocalDate("America/New_York", "2026-03-23")).toBe(s("2026-03-23T04:00:00Z"));
    expect(startOfLocalDate("Pacific/Pago_Pago", "2026-03-23")).toBe(s("2026-03-23T11:00:00Z"));
    expect(startOfLocalDate("Europe/Berlin", "2026-03-29")).toBe(s("2026-03-28T23:00:00Z"));
    expect(startOfLocalDate("Europe/Berlin", "2026-03-30")).toBe(s("2026-03-29T22:00:00Z"));
    expect(startOfLocalDate("Pacific/Kiritimati", "2026-03-23")).toBe(s("2026-03-22T10:00:00Z"));
  });

  it("refuses what is no YYYY-MM-DD date, naming it", () => {
    expect(() => startOfLocalDate("UTC", "2026-3-23")).toThrow(
      "not a date (YYYY-MM-DD): 2026-3-23",
    );
  });
});
