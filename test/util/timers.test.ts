/**
 * The linked signal (src/util/timers.ts): it follows its sources until released, and once
 * released a long-lived source no longer holds it, nor what its listeners hold (what
 * AbortSignal.any does on Node.js 20: nodejs/node#55351).
 */

import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { linkedSignal } from "../../src/util/timers.js";

describe("linkedSignal", () => {
  it("aborts with the first source that aborts, with its reason", () => {
    const a = new AbortController();
    const b = new AbortController();
    const linked = linkedSignal([a.signal, undefined, b.signal]);
    expect(linked.signal.aborted).toBe(false);
    b.abort("b first");
    a.abort("a later");
    expect(linked.signal.aborted).toBe(true);
    expect(linked.signal.reason).toBe("b first");
  });

  it("is aborted at once by a source that already is; abort() aborts it too", () => {
    const done = new AbortController();
    done.abort("already");
    expect(linkedSignal([done.signal]).signal.reason).toBe("already");
    const own = linkedSignal([]);
    own.abort("own reason");
    expect(own.signal.reason).toBe("own reason");
  });

  it("once released, a source's abort no longer reaches it", () => {
    const source = new AbortController();
    const linked = linkedSignal([source.signal]);
    linked.release();
    source.abort("too late");
    expect(linked.signal.aborted).toBe(false);
  });

  it("released links leave nothing held by a long-lived source (what AbortSignal.any keeps)", () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const longLived = new AbortController();
    const heldMb = (make: () => void) => {
      gc();
      const before = process.memoryUsage().arrayBuffers;
      for (let i = 0; i < 40; i++) make();
      gc();
      gc();
      return (process.memoryUsage().arrayBuffers - before) / 2 ** 20;
    };
    const linked = heldMb(() => {
      const link = linkedSignal([longLived.signal]);
      const body = Buffer.alloc(1_000_000);
      link.signal.addEventListener("abort", () => body.length);
      link.release();
    });
    expect(linked).toBeLessThan(5);
  });
});
