/**
 * The arbitrary bodies of the bad-input test's fast-check run: arrays of records (mostly inside
 * the requested window, some outside it or with an invalid timestamp; some repeating a readout;
 * members valid or not, requested or not), any JSON, cut arrays, arrays with an element that is
 * not JSON, and any text.
 */
import fc from "fast-check";
import { arrayText, at, recordTime, TO_S } from "./scenario.js";

/** Record timestamps: inside [fromS, TO_S], outside it, and not a real time at all. */
function timeArbitraries(fromS: number) {
  // mostly inside the requested window (its ends and a few hours often, so that rows repeat)
  const insideTime = fc
    .oneof(
      { weight: 3, arbitrary: fc.integer({ min: fromS, max: TO_S }) },
      { weight: 2, arbitrary: fc.constantFrom(fromS, fromS + 3600, TO_S - 3600, TO_S) },
    )
    .map(recordTime);
  const outsideTime = fc
    .oneof(
      fc.integer({ min: 946_684_800, max: fromS - 1 }),
      fc.integer({ min: TO_S + 1, max: 4_102_444_799 }),
      fc.constantFrom(fromS - 1, TO_S + 1),
    )
    .map(recordTime);
  const pad = (n: number) => String(n).padStart(2, "0");
  const invalidTime = fc.oneof(
    fc
      .tuple(fc.integer({ min: 13, max: 99 }), fc.integer({ min: 25, max: 99 }))
      .map(([mo, h]) => `2026-${pad(mo)}-01T${pad(h)}:00:00`),
    fc.constantFrom(
      "yesterday",
      "",
      "2026-06-01",
      "2026-06-01T00:00:00Z",
      "2026-06-01 00:00:00",
      // readable text outside the window (dropped) and inside it (dead letters)
      "2026-02-30T00:00:00",
      "2026-06-14T24:00:00",
      "2026-06-15T00:00:60",
    ),
    fc.integer(),
    fc.constant(null),
  );
  return { insideTime, outsideTime, invalidTime };
}

/** A record's member ids (`goodIds` are the resource's own) and their values. */
function memberArbitraries(goodIds: readonly string[]) {
  const idArb = fc.oneof(
    fc.constantFrom(...goodIds.slice(0, 6), "alarm_name", "alarm_index", "protocol_id"),
    fc.constantFrom("e_03_01_00_099_mystery_power", "e_03_99_42_001_odd", "x y,z=1"),
    fc.string({ maxLength: 8 }).filter((s) => s !== "__proto__"),
  );
  const memberArb = fc.oneof(
    {
      weight: 6,
      arbitrary: fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer()),
    },
    { weight: 3, arbitrary: fc.string({ maxLength: 10 }) },
    { weight: 2, arbitrary: fc.oneof(fc.boolean(), fc.constant(null)) },
    {
      weight: 1,
      arbitrary: fc.oneof(fc.array(fc.integer(), { maxLength: 2 }), fc.object({ maxDepth: 1 })),
    },
  );
  return { idArb, memberArb };
}

/** A record element: a timestamp, a values_id or none, members. */
function recordArbitrary(goodIds: readonly string[], fromS: number) {
  const { insideTime, outsideTime, invalidTime } = timeArbitraries(fromS);
  const { idArb, memberArb } = memberArbitraries(goodIds);
  const recordArb = fc
    .tuple(
      fc.oneof(
        { weight: 6, arbitrary: insideTime },
        { weight: 1, arbitrary: outsideTime },
        { weight: 1, arbitrary: invalidTime },
      ),
      fc.option(
        fc.oneof(
          fc.nat(3),
          fc.nat(300),
          fc.string({ maxLength: 4 }),
          // one readout written three ways, and the values_id members that mean "none"
          fc.constantFrom<number | string | boolean | null>(1, "1", "001", null, "", true),
        ),
        { nil: undefined },
      ),
      fc.dictionary(idArb, memberArb, { maxKeys: 4, noNullPrototype: true }),
    )
    .map(([timestamp, valuesId, members]) => ({
      timestamp,
      ...(valuesId === undefined ? {} : { values_id: valuesId }),
      ...members,
    }));
  return { idArb, memberArb, recordArb };
}

/** A body of GET /data for a request of all_data over [fromS, TO_S]. */
export function bodyArbitrary(goodIds: readonly string[], fromS: number): fc.Arbitrary<string> {
  const { idArb, memberArb, recordArb } = recordArbitrary(goodIds, fromS);
  // some arrays repeat a row's (timestamp, values_id) with other members: the first one counts
  const withRepeat = fc
    .tuple(
      fc.array(recordArb, { minLength: 1, maxLength: 4 }),
      fc.nat(),
      fc.dictionary(idArb, memberArb, { maxKeys: 3, noNullPrototype: true }),
    )
    .map(([records, which, members]) => {
      const { timestamp, values_id } = at(records, which % records.length);
      const repeat = { ...members, timestamp, values_id };
      return [...records, repeat];
    });
  const recordsText = fc
    .oneof(
      { weight: 3, arbitrary: fc.array(recordArb, { maxLength: 5 }) },
      { weight: 2, arbitrary: withRepeat },
    )
    .map((r) => JSON.stringify(r));
  const bodyArb = fc.oneof(
    { weight: 5, arbitrary: recordsText },
    { weight: 2, arbitrary: fc.json({ maxDepth: 3 }) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(recordsText, fc.nat(), fc.constantFrom("", "NaN", "]", "}", ",", "<html>"))
        .map(([text, cut, tail]) => text.slice(0, cut % (text.length + 1)) + tail),
    },
    {
      // an intact array with an element that is not JSON
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.array(recordArb, { minLength: 1, maxLength: 3 }),
          fc.constantFrom("NaN", '{"a":1}NaN', "-Infinity", "undefined", "{'a':1}", "tru"),
          fc.nat(),
        )
        .map(([records, bad, where]) => {
          const texts = records.map((r) => JSON.stringify(r));
          texts.splice(where % (texts.length + 1), 0, bad);
          return arrayText(texts);
        }),
    },
    { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
  );
  return bodyArb;
}
