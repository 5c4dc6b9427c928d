import { DeadLetterStore } from "../../src/state/dead-letter-store.js";
import { MAX_DEAD_LETTER_CHARS, type NewDeadLetter } from "../../src/state/types.js";
import { T0, T1, T2, useStateStore } from "./support.js";

const ctx = useStateStore("energy-etl-dead-letters-");

const ROW: NewDeadLetter = {
  kind: "row",
  deviceId: "dev-1",
  resourceId: "inverter",
  windowFromS: 1000,
  windowToS: 2000,
  valueIds: ["e_b", "e_a", "e_b"],
  payload: '{"ts":1500,"e_a":"NaN"}',
  error: "e_a is not a number",
};

describe("add", () => {
  it("keeps a new dead letter and returns true", () => {
    const { deadLetters } = ctx.store;
    expect(deadLetters.add(ROW, T0)).toBe(true);
    const [letter] = deadLetters.list();
    expect(letter).toEqual({
      id: expect.any(Number),
      kind: "row",
      deviceId: "dev-1",
      resourceId: "inverter",
      windowFromS: 1000,
      windowToS: 2000,
      valueIds: ["e_a", "e_b"],
      payload: ROW.payload,
      truncated: false,
      error: "e_a is not a number",
      occurrences: 1,
      retries: 0,
      firstSeen: T0.toISOString(),
      lastSeen: T0.toISOString(),
    });
    expect(letter && deadLetters.get(letter.id)).toEqual(letter);
  });

  it("the same kind, device, resource and payload again is an occurrence, not a new letter", () => {
    const { deadLetters } = ctx.store;
    expect(deadLetters.add(ROW, T0)).toBe(true);
    // a lookback re-read: another window, another error text
    expect(
      deadLetters.add({ ...ROW, windowFromS: 1500, windowToS: 2500, error: "other" }, T1),
    ).toBe(false);
    expect(deadLetters.add(ROW, T2)).toBe(false);
    expect(deadLetters.list()).toEqual([
      expect.objectContaining({
        occurrences: 3,
        windowFromS: 1000,
        windowToS: 2000,
        error: "e_a is not a number",
        firstSeen: T0.toISOString(),
        lastSeen: T2.toISOString(),
      }),
    ]);
    expect(deadLetters.count()).toBe(1);
  });

  it.each<[string, Partial<NewDeadLetter>]>([
    ["another device", { deviceId: "dev-2" }],
    ["another resource", { resourceId: "meter" }],
    ["another kind", { kind: "line" }],
    ["another payload", { payload: '{"ts":1501,"e_a":"NaN"}' }],
  ])("%s makes a new dead letter", (_what, change) => {
    const { deadLetters } = ctx.store;
    expect(deadLetters.add(ROW, T0)).toBe(true);
    expect(deadLetters.add({ ...ROW, ...change }, T1)).toBe(true);
    expect(deadLetters.count()).toBe(2);
    expect(deadLetters.list().map((l) => l.occurrences)).toEqual([1, 1]);
  });

  it("a payload over MAX_DEAD_LETTER_CHARS is cut and marked truncated", () => {
    const { deadLetters } = ctx.store;
    const long = "x".repeat(MAX_DEAD_LETTER_CHARS + 10);
    expect(deadLetters.add({ ...ROW, payload: long }, T0)).toBe(true);
    expect(deadLetters.add({ ...ROW, payload: long }, T1)).toBe(false);
    const [letter] = deadLetters.list();
    expect(letter?.truncated).toBe(true);
    expect(letter?.payload).toBe(long.slice(0, MAX_DEAD_LETTER_CHARS));
    expect(letter?.occurrences).toBe(2);
  });

  it("a payload of exactly MAX_DEAD_LETTER_CHARS is kept whole", () => {
    const exact = "y".repeat(MAX_DEAD_LETTER_CHARS);
    ctx.store.deadLetters.add({ ...ROW, payload: exact }, T0);
    const [letter] = ctx.store.deadLetters.list();
    expect(letter?.truncated).toBe(false);
    expect(letter?.payload).toBe(exact);
  });

  it.each<[string, Partial<NewDeadLetter>]>([
    ["an empty device id", { deviceId: "" }],
    ["an empty resource id", { resourceId: "" }],
    ["a fractional window start", { windowFromS: 1.5 }],
    ["a negative window end", { windowToS: -1 }],
  ])("rejects %s and keeps nothing", (_what, change) => {
    expect(() => ctx.store.deadLetters.add({ ...ROW, ...change }, T0)).toThrow(RangeError);
    expect(ctx.store.deadLetters.count()).toBe(0);
  });
});

describe("member dead letters", () => {
  const MEMBER: NewDeadLetter = {
    ...ROW,
    kind: "member",
    valueIds: ["e_a"],
    payload: '{"timestamp":"2026-06-15T00:00:00","e_a":1e400,"e_b":1e400,"e_c":1}',
    error: "e_a: must be a finite number",
  };

  it("the bad members of one row are one dead letter each; the same member again is an occurrence", () => {
    const { deadLetters } = ctx.store;
    expect(deadLetters.add(MEMBER, T0)).toBe(true);
    expect(deadLetters.add({ ...MEMBER, valueIds: ["e_b"], error: "e_b: must be" }, T0)).toBe(true);
    // the lookback reads the row again: both members come again
    expect(deadLetters.add({ ...MEMBER, windowFromS: 1500 }, T1)).toBe(false);
    expect(deadLetters.add({ ...MEMBER, valueIds: ["e_b"] }, T1)).toBe(false);
    // the whole row kept by an older version is another dead letter
    expect(deadLetters.add({ ...MEMBER, kind: "row", valueIds: ["e_a", "e_b", "e_c"] }, T1)).toBe(
      true,
    );
    expect(deadLetters.list().map((l) => [l.kind, l.valueIds, l.occurrences])).toEqual([
      ["member", ["e_a"], 2],
      ["member", ["e_b"], 2],
      ["row", ["e_a", "e_b", "e_c"], 1],
    ]);
    expect(deadLetters.list()[0]).toMatchObject({ payload: MEMBER.payload, error: MEMBER.error });
  });
});

describe("DeadLetterStore.fingerprint", () => {
  it("of a member depends on its value id too", () => {
    const member: NewDeadLetter = { ...ROW, kind: "member", valueIds: ["e_a"] };
    const print = DeadLetterStore.fingerprint(member);
    expect(DeadLetterStore.fingerprint({ ...member, valueIds: ["e_b"] })).not.toBe(print);
    const elsewhere: NewDeadLetter = { ...member, windowFromS: 1, error: "x" };
    expect(DeadLetterStore.fingerprint(elsewhere)).toBe(print);
    expect(DeadLetterStore.fingerprint({ ...member, kind: "row" })).not.toBe(print);
  });

  it("depends on kind, device, resource and payload only", () => {
    const print = DeadLetterStore.fingerprint(ROW);
    expect(print).toMatch(/^[0-9a-f]{64}$/);
    const elsewhere: NewDeadLetter = { ...ROW, windowFromS: 1, error: "x", valueIds: [] };
    expect(DeadLetterStore.fingerprint(elsewhere)).toBe(print);
    expect(DeadLetterStore.fingerprint({ ...ROW, deviceId: "dev-2" })).not.toBe(print);
    expect(DeadLetterStore.fingerprint({ ...ROW, resourceId: "meter" })).not.toBe(print);
    expect(DeadLetterStore.fingerprint({ ...ROW, kind: "line" })).not.toBe(print);
    expect(DeadLetterStore.fingerprint({ ...ROW, payload: `${ROW.payload} ` })).not.toBe(print);
  });
});

describe("list and count", () => {
  beforeEach(() => {
    const { deadLetters } = ctx.store;
    deadLetters.add({ ...ROW, payload: "a" }, T0);
    deadLetters.add({ ...ROW, deviceId: "dev-2", payload: "b" }, T0);
    deadLetters.add({ ...ROW, payload: "c", kind: "line" }, T0);
    deadLetters.add({ ...ROW, resourceId: "meter", payload: "d" }, T0);
  });

  it("lists oldest first, by device, and up to a limit", () => {
    const { deadLetters } = ctx.store;
    expect(deadLetters.list().map((l) => l.payload)).toEqual(["a", "b", "c", "d"]);
    expect(deadLetters.list({ deviceId: "dev-1" }).map((l) => l.payload)).toEqual(["a", "c", "d"]);
    expect(deadLetters.list({ deviceId: "dev-2" }).map((l) => l.payload)).toEqual(["b"]);
    expect(deadLetters.list({ deviceId: "dev-3" })).toEqual([]);
    expect(deadLetters.list({ limit: 2 }).map((l) => l.payload)).toEqual(["a", "b"]);
    expect(deadLetters.list({ deviceId: "dev-1", limit: 2 }).map((l) => l.payload)).toEqual([
      "a",
      "c",
    ]);
    expect(deadLetters.list({ limit: 0 })).toEqual([]);
  });

  it("counts all and per device resource", () => {
    const { deadLetters } = ctx.store;
    expect(deadLetters.count()).toBe(4);
    const key = (c: { deviceId: string; resourceId: string }) => `${c.deviceId}/${c.resourceId}`;
    const byResource = deadLetters
      .countByResource()
      .sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
    expect(byResource).toEqual([
      { deviceId: "dev-1", resourceId: "inverter", count: 2 },
      { deviceId: "dev-1", resourceId: "meter", count: 1 },
      { deviceId: "dev-2", resourceId: "inverter", count: 1 },
    ]);
  });

  it("remove forgets one dead letter (an unknown id is no error)", () => {
    const { deadLetters } = ctx.store;
    const [first] = deadLetters.list();
    if (first === undefined) throw new Error("no dead letter");
    deadLetters.remove(first.id);
    expect(deadLetters.get(first.id)).toBeUndefined();
    expect(deadLetters.count()).toBe(3);
    expect(() => deadLetters.remove(first.id)).not.toThrow();
    expect(deadLetters.count()).toBe(3);
    // gone: the same payload is new again
    expect(deadLetters.add({ ...ROW, payload: "a" }, T1)).toBe(true);
  });
});

it("an empty store counts nothing", () => {
  expect(ctx.store.deadLetters.count()).toBe(0);
  expect(ctx.store.deadLetters.countByResource()).toEqual([]);
  expect(ctx.store.deadLetters.list()).toEqual([]);
  expect(ctx.store.deadLetters.get(1)).toBeUndefined();
});

it("recordRetryFailure counts the retry and replaces the error", () => {
  const { deadLetters } = ctx.store;
  deadLetters.add(ROW, T0);
  const [letter] = deadLetters.list();
  if (letter === undefined) throw new Error("no dead letter");
  deadLetters.recordRetryFailure(letter.id, "still not a number", T1);
  deadLetters.recordRetryFailure(letter.id, "refused again", T2);
  expect(deadLetters.get(letter.id)).toEqual({
    ...letter,
    retries: 2,
    error: "refused again",
    lastSeen: T2.toISOString(),
  });
});

it("dead letters survive close and reopen", () => {
  ctx.store.deadLetters.add(ROW, T0);
  const before = ctx.store.deadLetters.list();
  const store = ctx.reopen();
  expect(store.deadLetters.list()).toEqual(before);
  expect(store.deadLetters.add(ROW, T1)).toBe(false);
});

it("a stored row with value ids that are not strings is an error naming the row", () => {
  ctx.store.deadLetters.add(ROW, T0);
  ctx.tmp.raw(ctx.path).prepare("UPDATE dead_letters SET value_ids = '[1]'").run();
  expect(() => ctx.store.deadLetters.list()).toThrow(/state database: unexpected dead letter/);
});
