/**
 * Narrowing a refused batch down to the lines at fault (src/influx/narrow-refused.ts), against a
 * small InfluxDB written here: each answer is InfluxDB's words for the lines sent (docs/design.md,
 * "Writing to InfluxDB"), and the lines it stores are kept, so every test can say which lines were
 * stored, which are dead letters with which reason, and which requests were sent.
 */
import {
  type BatchWork,
  type NarrowingWrites,
  narrowRefused,
  PARTIAL_NARROW_REQUESTS,
  type Refusal,
} from "../../src/influx/narrow-refused.js";
import type { RejectedLine } from "../../src/influx/point-sink.js";
import { InfluxWriteError } from "../../src/influx/write-errors.js";

/** What InfluxDB answers a request of `lines` with, and which of them it stores. */
interface Answer {
  readonly refusal?: Refusal;
  readonly stores: readonly string[];
}
type Server = (lines: readonly string[]) => Answer;

const CONFLICT =
  'partial write: field type conflict: input field "value" on measurement "m" is type string, ' +
  "already exists as type float";
const RETENTION = "partial write: points beyond retention policy";

/** InfluxDB 1.x/2.x: any unparsable line refuses the request, each quoted with its reason. */
const unparsable =
  (bad: ReadonlySet<string>): Server =>
  (lines) => {
    const named = lines.filter((l) => bad.has(l));
    if (named.length === 0) return { stores: lines };
    const message = named.map((l) => `unable to parse '${l}': invalid field format`).join("\n");
    return { refusal: { status: 400, message }, stores: [] };
  };

/** A refusal naming and counting nothing (a proxy, another InfluxDB): nothing stored. */
const opaque =
  (bad: ReadonlySet<string>, message = "bad request"): Server =>
  (lines) =>
    lines.some((l) => bad.has(l))
      ? { refusal: { status: 400, message }, stores: [] }
      : { stores: lines };

/** InfluxDB 1.x's partial write: the bad lines dropped and counted, never named; the others stored. */
const partial =
  (bad: ReadonlySet<string>, words = CONFLICT): Server =>
  (lines) => {
    const dropped = lines.filter((l) => bad.has(l)).length;
    const stores = lines.filter((l) => !bad.has(l));
    if (dropped === 0) return { stores };
    return { refusal: { status: 400, message: `${words} dropped=${dropped}` }, stores };
  };

/** `server`, but the whole batch (`all`) is answered with `first` instead. */
const firstAnswer =
  (all: readonly string[], first: Answer, server: Server): Server =>
  (lines) =>
    lines.length === all.length ? first : server(lines);

/** Writes `all` as the writer does (send, then narrow the refusal) against `server`. */
async function narrow(all: readonly string[], server: Server, storedBefore = false) {
  const requests: string[][] = [];
  const written: string[][] = []; // the lines of each writes.write (each also one of `requests`)
  const stored = new Set<string>();
  let took = storedBefore;
  const work: BatchWork = { lines: all.length, requests: 0, narrowed: false, rejected: [] };
  const writes: NarrowingWrites<BatchWork> = {
    send: async (lines, w) => {
      w.requests++;
      if (requests.length >= 500) throw new Error("narrowing does not end: 500 requests sent");
      requests.push([...lines]);
      const answer = server(lines);
      for (const line of answer.stores) stored.add(line);
      if (answer.stores.length > 0) took = true;
      return answer.refusal;
    },
    write: async (lines, w) => {
      written.push([...lines]);
      const refusal = await writes.send(lines, w);
      if (refusal !== undefined) await writes.refused(lines, refusal, w);
    },
    // 413: halved, as the writer does; else narrowed
    refused: async (lines, refusal, w) => {
      if (refusal.status !== 413) return narrowRefused(lines, refusal, w, writes);
      if (lines.length === 1) throw new Error("a single line too large");
      const half = Math.ceil(lines.length / 2);
      await writes.write(lines.slice(0, half), w);
      await writes.write(lines.slice(half), w);
    },
    stored: () => took,
  };
  const outcome = await writes.write(all, work).then(
    () => undefined,
    (error: unknown) => error,
  );
  return { error: outcome, work, requests, written, stored, rejected: work.rejected };
}

const lines = (n: number, name = "m") =>
  Array.from({ length: n }, (_, i) => `${name},device_id=d value=${i} ${1_700_000_000 + i * 60}`);
const dead = (line: string, error: string): RejectedLine => ({ line, status: 400, error });
const parseError = (line: string) => `unable to parse '${line}': invalid field format`;

/** The error a write refused as a whole is: code `refused`, its reason in the message. */
function expectRefusedWhole(error: unknown, why: string) {
  expect(error).toBeInstanceOf(InfluxWriteError);
  expect(error).toMatchObject({ code: "refused", status: 400 });
  expect(String((error as Error).message)).toContain(`; ${why})`);
}

describe("lines InfluxDB names as refused", () => {
  it("one unparsable line of four: a dead letter with its own reason; the three others sent once more and stored", async () => {
    const all = lines(4);
    const [a, b, c, d] = all as [string, string, string, string];
    const r = await narrow(all, unparsable(new Set([b])));
    expect(r.error).toBeUndefined();
    expect(r.rejected).toEqual([dead(b, parseError(b))]);
    expect(r.requests).toEqual([all, [a, c, d]]);
    expect(r.stored).toEqual(new Set([a, c, d]));
    expect(r.work.narrowed).toBe(true);
  });

  it("every line named before InfluxDB took any line of the write: the write is refused whole", async () => {
    const all = lines(3);
    const r = await narrow(all, unparsable(new Set(all)));
    expectRefusedWhole(r.error, "InfluxDB named every line as refused");
    expect(r.requests).toEqual([all]);
    expect(r.rejected).toEqual([]);
  });

  it("every line named once InfluxDB took lines of the write: dead letters, nothing sent again", async () => {
    const all = lines(3);
    const r = await narrow(all, unparsable(new Set(all)), true);
    expect(r.error).toBeUndefined();
    expect(r.rejected).toEqual(all.map((l) => dead(l, parseError(l))));
    expect(r.requests).toEqual([all]);
  });

  it("every line named for its own field type (InfluxDB 3.x): dead letters, even before anything was stored", async () => {
    const all = lines(2);
    const refusal: Refusal = {
      status: 400,
      message: "partial write of line protocol occurred: field type conflict",
      lineErrors: all.map((line) => ({ line, error: "invalid column type for column 'value'" })),
    };
    const r = await narrow(all, () => ({ refusal, stores: [] }));
    expect(r.error).toBeUndefined();
    expect(r.rejected).toEqual(all.map((l) => dead(l, "invalid column type for column 'value'")));
    expect(r.requests).toEqual([all]);
  });

  it("a single line refused: a dead letter with the answer's message, the batch not marked narrowed", async () => {
    const [one] = lines(1) as [string];
    const r = await narrow([one], opaque(new Set([one]), "bad  request\n body"));
    expect(r.error).toBeUndefined();
    expect(r.rejected).toEqual([dead(one, "bad request body")]);
    expect(r.work.narrowed).toBe(false);
  });
});

describe("a partial write whose count is every line", () => {
  it("dropped for no reason of their own before anything was stored: the write is refused whole", async () => {
    const all = lines(3);
    const r = await narrow(all, partial(new Set(all), "partial write:"));
    expectRefusedWhole(r.error, "InfluxDB dropped all 3 lines");
    expect(r.requests).toEqual([all]);
  });

  it.each([
    ["a field type conflict", CONFLICT, false],
    ["points beyond the retention policy", RETENTION, false],
    ["no reason, once lines of the write were stored", "partial write:", true],
  ])("%s: dead letters from the one answer", async (_name, words, storedBefore) => {
    const all = lines(3);
    const r = await narrow(all, partial(new Set(all), words), storedBefore);
    expect(r.error).toBeUndefined();
    expect(r.rejected).toEqual(all.map((l) => dead(l, `${words} dropped=3`)));
    expect(r.requests).toEqual([all]);
  });
});

describe("a count that cannot be true is not trusted: the batch is halved", () => {
  it.each([
    ["none dropped", 0],
    ["more dropped than sent", 5],
  ])("%s: the bad line found by halves, every other line stored", async (_name, count) => {
    const all = lines(4);
    const [a, b, c, d] = all as [string, string, string, string];
    const refusal: Refusal = { status: 400, message: `partial write: dropped=${count}` };
    const r = await narrow(all, firstAnswer(all, { refusal, stores: [] }, opaque(new Set([c]))));
    expect(r.error).toBeUndefined();
    expect(r.rejected).toEqual([dead(c, "bad request")]);
    expect(r.stored).toEqual(new Set([a, b, d]));
    expect(r.requests).toEqual([all, [a, b], [c, d], [c], [d]]);
  });
});

describe("refusals that name and count nothing: halved", () => {
  it("two lines each refused before anything was stored: the write is refused whole", async () => {
    const all = lines(2);
    const r = await narrow(all, opaque(new Set(all)));
    expectRefusedWhole(r.error, "every line refused, halved down to single lines");
    expect(r.requests).toEqual([all, [all[0]], [all[1]]]);
  });

  it("two of four refused: found by halves down to single lines, the two others stored", async () => {
    const all = lines(4);
    const [a, b, c, d] = all as [string, string, string, string];
    const r = await narrow(all, opaque(new Set([a, c])));
    expect(r.error).toBeUndefined();
    expect(r.rejected).toEqual([dead(a, "bad request"), dead(c, "bad request")]);
    expect(r.stored).toEqual(new Set([b, d]));
    expect(r.requests).toEqual([all, [a, b], [c, d], [a], [b], [c], [d]]);
  });

  it.each([
    ["for their own field type, before anything was stored", "field type conflict", false],
    ["for their own age, before anything was stored", "points beyond retention policy", false],
    ["for no reason of their own, once lines of the write were stored", "bad request", true],
  ])("two lines each refused %s: dead letters", async (_name, message, storedBefore) => {
    const all = lines(2);
    const r = await narrow(all, opaque(new Set(all), message), storedBefore);
    expect(r.error).toBeUndefined();
    expect(r.rejected).toEqual(all.map((l) => dead(l, message)));
    expect(r.requests).toEqual([all, [all[0]], [all[1]]]);
  });
});

describe("a partial write that counts its dropped lines without naming them", () => {
  it("one of four dropped: halves' counts asked, the line found in two more requests", async () => {
    const all = lines(4);
    const [a, b, c, d] = all as [string, string, string, string];
    const r = await narrow(all, partial(new Set([c])));
    expect(r.rejected).toEqual([dead(c, `${CONFLICT} dropped=1`)]);
    expect(r.stored).toEqual(new Set([a, b, d]));
    // the second half's count follows from the first's; an empty group is never sent
    expect(r.requests).toEqual([all, [a, b], [c]]);
  });

  it("points beyond the retention policy: halved in time order, so the oldest stand together", async () => {
    const byTime = lines(8);
    // sent out of time order (as a batch of several devices is)
    const all = [5, 0, 7, 2, 4, 1, 6, 3].map((i) => byTime[i] ?? "");
    const r = await narrow(all, partial(new Set(byTime.slice(0, 3)), RETENTION));
    expect(r.rejected.map((x) => x.line)).toEqual(byTime.slice(0, 3));
    expect(r.stored).toEqual(new Set(byTime.slice(3)));
    expect(r.requests).toEqual([all, byTime.slice(0, 4), byTime.slice(0, 2), byTime.slice(2, 3)]);
  });

  it("a field type conflict: the measurement InfluxDB names (escapes read as InfluxDB does) asked first", async () => {
    const spaced = "a\\ b,device_id=d value=1 1700000000"; // measurement "a b"
    const bare = "a\\ b value=2 1700000060"; // "a b", no tags
    const all = [
      "a\\,b,device_id=d value=3 1700000000", // "a,b"
      spaced,
      "a,device_id=d value=4 1700000000", // "a"
      bare,
      "ab value=5 1700000000", // "ab"
      "a value=6 1700000000", // "a", no tags
    ];
    const conflict = (name: string) =>
      `partial write: field type conflict: input field "value" on measurement "${name}" is type ` +
      "string, already exists as type float";
    const r = await narrow(all, partial(new Set([spaced, bare]), conflict("a b")));
    expect(r.rejected.map((x) => x.line)).toEqual([spaced, bare]);
    expect(r.requests).toEqual([all, [spaced, bare]]);
    expect(r.stored).toEqual(new Set(all.filter((l) => l !== spaced && l !== bare)));
  });

  it.each([
    ["a measurement the batch does not hold", "zzz"],
    ["the only measurement of the batch", "m"],
  ])("a field type conflict on %s: halved as any partial write", async (_name, measurement) => {
    const all = lines(4);
    const [a, b, c, d] = all as [string, string, string, string];
    const words = CONFLICT.replace('"m"', `"${measurement}"`);
    const r = await narrow(all, partial(new Set([c]), words));
    expect(r.rejected).toEqual([dead(c, `${words} dropped=1`)]);
    expect(r.stored).toEqual(new Set([a, b, d]));
    expect(r.requests).toEqual([all, [a, b], [c]]);
  });

  it("a count answered with the lines named (InfluxDB 3.x): those lines get the reason named for them", async () => {
    const all = lines(8);
    const c = all[2] ?? "";
    const reason = "invalid column type for column 'value'";
    const named: Server = (sent) => {
      const bad = sent.filter((l) => l === c);
      const stores = sent.filter((l) => l !== c);
      if (bad.length === 0) return { stores };
      const lineErrors = bad.map((line) => ({ line, error: reason }));
      return { refusal: { status: 400, message: "partial write: dropped=1", lineErrors }, stores };
    };
    const first = partial(new Set([c]))(all);
    const r = await narrow(all, firstAnswer(all, first, named));
    expect(r.rejected).toEqual([dead(c, reason)]);
    expect(r.stored).toEqual(new Set(all.filter((l) => l !== c)));
  });

  it("a count asked answered by a 413 (a proxy's limit): that group is split and written as any batch", async () => {
    const all = lines(4);
    const [a, b, c, d] = all as [string, string, string, string];
    // a proxy before InfluxDB refuses two lines at once; its page carries a count (of what it
    // saw before), which counts nothing of these lines
    const proxy: Server = (sent) =>
      sent.length === 2
        ? {
            refusal: { status: 413, message: "413 Request Entity Too Large dropped=2" },
            stores: [],
          }
        : partial(new Set([c]))(sent);
    const r = await narrow(all, proxy);
    expect(r.rejected).toEqual([dead(c, `${CONFLICT} dropped=1`)]);
    expect(r.stored).toEqual(new Set([a, b, d]));
  });

  it(`scattered dropped lines: at most ${PARTIAL_NARROW_REQUESTS} counts asked, then each group still mixed kept whole, saying how many of it were stored`, async () => {
    const all = lines(300);
    const bad = new Set(all.filter((_, i) => i % 3 === 1));
    const r = await narrow(all, partial(bad));
    expect(r.requests.length).toBeLessThanOrEqual(1 + PARTIAL_NARROW_REQUESTS);
    expect(r.stored).toEqual(new Set(all.filter((l) => !bad.has(l))));
    for (const line of bad) expect(r.rejected.some((x) => x.line === line)).toBe(true);
    const mixed = r.rejected.filter((x) => x.droppedShare !== undefined);
    expect(mixed.length).toBeGreaterThan(0);
    for (const x of mixed) {
      const said =
        /^.* dropped=100 \(InfluxDB dropped (\d+) of these (\d+) lines without naming them; narrowing stops after (\d+) requests, so all are kept here, though (\d+) of them were stored\)$/.exec(
          x.error,
        );
      expect(said).not.toBeNull();
      const [dropped, of, after, storedOfThem] = (said ?? []).slice(1).map(Number);
      expect(after).toBe(PARTIAL_NARROW_REQUESTS);
      expect(storedOfThem).toBe((of ?? 0) - (dropped ?? 0));
      expect(x.droppedShare).toBe((dropped ?? 0) / (of ?? 1));
      // the server's truth: the lines kept with this message are k groups of `of` lines, and
      // k x `dropped` of them are bad (groups of one size and count share a message)
      const same = mixed.filter((y) => y.error === x.error).map((y) => y.line);
      const groups = same.length / (of ?? 1);
      expect(Number.isInteger(groups)).toBe(true);
      expect(same.filter((l) => bad.has(l))).toHaveLength(groups * (dropped ?? 0));
    }
  });

  it(`the ${PARTIAL_NARROW_REQUESTS} counts spent with a group of unknown count next: it is written as any batch, no count asked past them`, async () => {
    const all = lines(256);
    const bad = new Set(all.filter((_, i) => i % 2 === 1 && i < 252)); // 126, the last four good
    const stores = all.filter((l) => !bad.has(l));
    // the whole said 125 (one short), so counts derived along the last groups run one short: [248,
    // 256) said 1, its first half 2: the last four unknown. 63 counts (1 + 2 + ... + 32) halve each
    // group from 256 down to 8 lines, the 64th [0, 4); the 62 other fours, [0, 2), [2, 4) kept whole
    const whole: Answer = { refusal: { status: 400, message: `${CONFLICT} dropped=125` }, stores };
    const r = await narrow(all, firstAnswer(all, whole, partial(bad)));
    const halves = [256, 128, 64, 32, 16, 8].flatMap((n) =>
      Array.from({ length: 256 / n }, (_, k) => all.slice(k * n, k * n + n / 2)),
    );
    expect(r.requests).toEqual([all, ...halves, all.slice(0, 2), all.slice(252)]);
    expect(r.written).toEqual([all, all.slice(252)]);
    expect(r.stored).toEqual(new Set(stores));
    const kept = [...all.slice(4, 252), ...all.slice(0, 4)];
    expect(r.rejected.map((x) => [x.line, x.droppedShare])).toEqual(kept.map((l) => [l, 0.5]));
  });

  it("a count asked that cannot be the lines' (a front counting three a line): that group's count is asked, then it is written as any batch; no line lost", async () => {
    const all = lines(4);
    const [a, b, c, d] = all as [string, string, string, string];
    const thrice: Server = (sent) => {
      const answer = partial(new Set([c]))(sent);
      const dropped = sent.filter((l) => l === c).length * 3;
      if (answer.refusal === undefined) return answer;
      return { ...answer, refusal: { status: 400, message: `${CONFLICT} dropped=${dropped}` } };
    };
    const r = await narrow(all, thrice);
    expect(r.rejected).toEqual([dead(c, `${CONFLICT} dropped=3`)]);
    expect(r.stored).toEqual(new Set([a, b, d]));
    // 3 of [c, d] cannot follow from [a, b]'s 0: asked; 3 of two lines: written, halved
    expect(r.requests).toEqual([all, [a, b], [c, d], [c, d], [c], [d]]);
  });

  it("a half counted with more dropped than the whole: the other half's count is asked, not derived", async () => {
    const all = lines(4);
    const [a, b, c, d] = all as [string, string, string, string];
    const bad = new Set([a, b]);
    // the whole answered with one dropped of the two (the front counted one too few)
    const undercount: Answer = {
      refusal: { status: 400, message: `${CONFLICT} dropped=1` },
      stores: [c, d],
    };
    const r = await narrow(all, firstAnswer(all, undercount, partial(bad)));
    expect(r.rejected).toEqual([
      dead(a, `${CONFLICT} dropped=1`),
      dead(b, `${CONFLICT} dropped=1`),
    ]);
    expect(r.stored).toEqual(new Set([c, d]));
    expect(r.requests).toEqual([all, [a, b], [c, d]]);
  });
});
