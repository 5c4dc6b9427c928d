/**
 * Partial writes that name no line (InfluxDB 1.x `partial write: ... dropped=N`): the other lines
 * were stored, so the writer looks only for the count, halving breadth-first within
 * PARTIAL_NARROW_REQUESTS per batch; what is still mixed then is kept whole, saying so.
 */
import { PARTIAL_NARROW_REQUESTS } from "../../src/influx/narrow-refused.js";
import { lineBatch } from "../../src/transform/line-protocol.js";
import { logEntries, REFUSED_LINES_LOG, writerFor } from "../support/influx-writer.js";
import { startWriteFront, type WriteFront } from "../support/write-front.js";

const lines = (count: number) => Array.from({ length: count }, (_, i) => `m value=${i} ${i}`);

let front: WriteFront | undefined;
afterEach(async () => {
  await front?.close();
  front = undefined;
});

async function writeThrough(
  all: readonly string[],
  bad: ReadonlySet<string>,
  count?: (dropped: number, lines: number) => number | undefined,
  measurement?: string,
  retention?: boolean,
) {
  const started = await startWriteFront({
    drop: (line) => bad.has(line),
    ...(count && { count }),
    ...(measurement !== undefined && { measurement }),
    ...(retention && { reason: "retention" as const }),
  });
  front = started;
  const target = { url: started.url, token: "t", org: "o", bucket: "b" };
  const { writer, logLines } = writerFor(target, { batchSize: 5000 });
  const outcome = await writer.write(lineBatch(all));
  return { outcome, logLines, writes: started.writes(), stored: new Set(started.stored) };
}

describe("partial writes that name no line", () => {
  it("one line dropped in 5,000: found in log2(5000) requests, the 4,999 stored", async () => {
    const all = lines(5000);
    const bad = all[3210] ?? "";
    const { outcome, writes, stored, logLines } = await writeThrough(all, new Set([bad]));

    expect(outcome).toEqual({
      written: 4999,
      rejected: [{ line: bad, status: 400, error: expect.stringMatching(/dropped=1$/) }],
    });
    expect(writes).toBeLessThanOrEqual(1 + Math.ceil(Math.log2(5000)));
    expect(stored).toEqual(new Set(all.filter((l) => l !== bad)));
    expect(logEntries(logLines, REFUSED_LINES_LOG)).toEqual([
      expect.objectContaining({ lines: 5000, rejected: 1, requests: writes }),
    ]);
  });

  it("a field type conflict of one value id in twenty: its lines found from the measurement named, exactly", async () => {
    // 250 records of 20 values each, in record order; "v07" was stored as text before
    const all = Array.from({ length: 5000 }, (_, i) => {
      const id = String(i % 20).padStart(2, "0");
      return `v${id},device_id=d value=${i} ${1_700_000_000 + Math.floor(i / 20) * 60}`;
    });
    const bad = new Set(all.filter((l) => l.startsWith("v07,")));
    const { outcome, writes, stored } = await writeThrough(all, bad, undefined, "v07");

    expect(outcome.rejected.map((r) => r.line).sort()).toEqual([...bad].sort());
    expect(outcome.written).toBe(4750);
    // the write, and one request for the measurement's 250 lines: all of them dropped
    expect(writes).toBe(2);
    expect(stored).toEqual(new Set(all.filter((l) => !bad.has(l))));
  });

  it("points beyond the retention policy: the oldest, found by time in log2(n) requests", async () => {
    const all = Array.from({ length: 5000 }, (_, i) => {
      const id = String(i % 20).padStart(2, "0");
      return `v${id},device_id=d value=${i} ${1_700_000_000 + Math.floor(i / 20) * 60}`;
    });
    const boundary = 1_700_000_000 + 77 * 60;
    const bad = new Set(all.filter((l) => Number(l.split(" ")[2]) < boundary));
    const { outcome, writes } = await writeThrough(all, bad, undefined, undefined, true);

    expect(outcome.rejected.map((r) => r.line).sort()).toEqual([...bad].sort());
    expect(writes).toBeLessThanOrEqual(1 + Math.ceil(Math.log2(5000)));
  });

  it("one line in seven dropped at random (the probe's 14 %): within the bound, every good line stored, the mixed rest kept saying so", async () => {
    const all = lines(20_000);
    const bad = new Set(all.filter((_, i) => (i * 7919) % 7 === 3));
    const { outcome, writes, stored } = await writeThrough(all, bad);

    // 4 batches of 5,000: the write and at most PARTIAL_NARROW_REQUESTS more each
    expect(writes).toBeLessThanOrEqual(4 * (1 + PARTIAL_NARROW_REQUESTS));
    expect(stored).toEqual(new Set(all.filter((l) => !bad.has(l))));
    const rejected = new Set(outcome.rejected.map((r) => r.line));
    for (const line of bad) expect(rejected.has(line)).toBe(true);
    // the lines stored, counted from InfluxDB's counts (a mixed group's share included)
    expect(outcome.written).toBe(all.length - bad.size);
    // good lines are kept only in groups still mixed, whose error says how many of them were stored
    for (const r of outcome.rejected.filter((r) => !bad.has(r.line))) {
      expect(r.error).toMatch(
        /dropped \d+ of these \d+ lines without naming them; .* \d+ of them were stored\)$/,
      );
    }
  });

  it("every line dropped (a field type conflict): dead letters from the one answer (their own type)", async () => {
    const all = lines(300);
    const { outcome, writes } = await writeThrough(all, new Set(all));
    expect(outcome.written).toBe(0);
    expect(outcome.rejected.map((r) => r.line)).toEqual(all);
    expect(outcome.rejected[0]?.error).toMatch(/field type conflict/);
    expect(writes).toBe(1);
  });

  it("every line dropped beyond the retention policy: dead letters from the one answer (their own age)", async () => {
    const all = lines(300);
    const { outcome, writes } = await writeThrough(all, new Set(all), undefined, undefined, true);
    expect(outcome.written).toBe(0);
    expect(outcome.rejected.map((r) => r.line)).toEqual(all);
    expect(writes).toBe(1);
  });

  it("halves answered without a count are narrowed as any refused batch: every good line stored", async () => {
    const all = lines(1000);
    const bad = new Set([all[10] ?? "", all[600] ?? "", all[601] ?? ""]);
    const { outcome, stored, writes } = await writeThrough(all, bad, (dropped, n) =>
      n === 1000 ? dropped : undefined,
    );
    expect(outcome.rejected.map((r) => r.line).sort()).toEqual([...bad].sort());
    expect(outcome.written).toBe(997);
    expect(stored).toEqual(new Set(all.filter((l) => !bad.has(l))));
    expect(writes).toBeLessThanOrEqual(2 + 2 * 3 * Math.ceil(Math.log2(1000)) + 1);
  });
});
