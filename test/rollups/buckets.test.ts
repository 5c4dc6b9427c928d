/** The buckets of rollups (src/rollups/buckets.ts): UTC hours, and days of a time zone, DST included. */
import { bucketsTouched, dayOf, hourOf, isTimeZone } from "../../src/rollups/buckets.js";

const s = (iso: string) => Date.parse(iso) / 1000;
const iso = (t: number) => new Date(t * 1000).toISOString().replace(".000", "");

describe("hourOf", () => {
  it.each([
    ["2026-06-15T12:00:00Z", "2026-06-15T12:00:00Z", "2026-06-15T13:00:00Z"],
    ["2026-06-15T12:59:59Z", "2026-06-15T12:00:00Z", "2026-06-15T13:00:00Z"],
    ["1969-12-31T23:30:00Z", "1969-12-31T23:00:00Z", "1970-01-01T00:00:00Z"],
  ])("%s lies in [%s, %s)", (at, start, end) => {
    expect(hourOf(s(at))).toEqual({ startS: s(start), endS: s(end) });
  });
});

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

  it("knows which zones exist", () => {
    expect(isTimeZone("Europe/Berlin")).toBe(true);
    expect(isTimeZone("Mars/Olympus")).toBe(false);
  });
});

describe("bucketsTouched", () => {
  it("the buckets holding the readings, and the one after (whose start reading may be theirs)", () => {
    const touched = bucketsTouched(hourOf, s("2026-06-15T10:20:00Z"), s("2026-06-15T12:00:00Z"));
    expect(touched.map((b) => iso(b.startS))).toEqual([
      "2026-06-15T10:00:00Z",
      "2026-06-15T11:00:00Z",
      "2026-06-15T12:00:00Z",
      "2026-06-15T13:00:00Z",
    ]);
  });
});
