/**
 * Short writes that come close together go out as one request (src/influx/coalescing-sink.ts);
 * each write still gets its own outcome. The sink behind it is a recording one: what is tested
 * is the joining and the sharing out, not InfluxDB (the pipeline tests write through it into
 * influxd).
 */
import { CoalescingSink } from "../../src/influx/coalescing-sink.js";
import type { PointSink, RejectedLine, WriteOutcome } from "../../src/influx/point-sink.js";
import { type LineBatch, lineBatch, linesOf } from "../../src/transform/line-protocol.js";

/** Keeps every request it is given; refuses the lines in `refuse`, or fails with `failWith`. */
class Recording implements PointSink {
  readonly target = "recording";
  readonly requests: string[][] = [];
  refuse = new Set<string>();
  failWith: Error | undefined;
  async write(batch: LineBatch): Promise<WriteOutcome> {
    const lines = linesOf(batch);
    this.requests.push(lines);
    if (this.failWith) throw this.failWith;
    const rejected: RejectedLine[] = lines
      .filter((line) => this.refuse.has(line))
      .map((line) => ({ line, status: 400, error: "bad" }));
    return { written: lines.length - rejected.length, rejected };
  }
  async flush(): Promise<void> {}
  async close(): Promise<void> {}
}

const lines = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => `m,k=${prefix} value=${i} ${1_700_000_000 + i}`);

describe("CoalescingSink", () => {
  it("joins writes that come together into one request, each resolved with its own count", async () => {
    const inner = new Recording();
    const sink = new CoalescingSink(inner, 100, 1);
    const outcomes = await Promise.all([
      sink.write(lineBatch(lines("a", 3))),
      sink.write(lineBatch(lines("b", 2))),
      sink.write(lineBatch(lines("c", 4))),
    ]);
    expect(inner.requests).toEqual([[...lines("a", 3), ...lines("b", 2), ...lines("c", 4)]]);
    expect(outcomes).toEqual([
      { written: 3, rejected: [] },
      { written: 2, rejected: [] },
      { written: 4, rejected: [] },
    ]);
  });

  it("a write asked to go now goes at once, with what waits, without the linger", async () => {
    const inner = new Recording();
    const sink = new CoalescingSink(inner, 100, 60_000);
    const waiting = sink.write(lineBatch(lines("a", 2)));
    const now = sink.write(lineBatch(lines("b", 1)), { now: true });
    expect(inner.requests).toEqual([[...lines("a", 2), ...lines("b", 1)]]);
    expect(await Promise.all([waiting, now])).toEqual([
      { written: 2, rejected: [] },
      { written: 1, rejected: [] },
    ]);
  });

  it("sends as soon as the waiting writes fill a batch; a full batch goes alone at once", async () => {
    const inner = new Recording();
    const sink = new CoalescingSink(inner, 5, 60_000);
    const first = sink.write(lineBatch(lines("a", 3)));
    const second = sink.write(lineBatch(lines("b", 2)));
    await Promise.all([first, second]);
    await sink.write(lineBatch(lines("full", 5)));
    expect(inner.requests.map((r) => r.length)).toEqual([5, 5]);
    // flush() sends what waits, without the linger
    const waiting = sink.write(lineBatch(lines("d", 1)));
    await sink.flush();
    await expect(waiting).resolves.toEqual({ written: 1, rejected: [] });
    expect(inner.requests).toHaveLength(3);
  });

  it("gives each write the lines of its own that were refused, and every write a failure", async () => {
    const inner = new Recording();
    const sink = new CoalescingSink(inner, 100, 1);
    const [badA] = lines("a", 1);
    inner.refuse = new Set([badA ?? ""]);
    const [a, b] = await Promise.all([
      sink.write(lineBatch(lines("a", 2))),
      sink.write(lineBatch(lines("b", 2))),
    ]);
    expect(a).toEqual({ written: 1, rejected: [{ line: badA, status: 400, error: "bad" }] });
    expect(b).toEqual({ written: 2, rejected: [] });
    inner.failWith = new Error("InfluxDB unavailable");
    const failed = [sink.write(lineBatch(lines("x", 1))), sink.write(lineBatch(lines("y", 1)))];
    for (const write of failed) await expect(write).rejects.toThrow("InfluxDB unavailable");
  });
});
