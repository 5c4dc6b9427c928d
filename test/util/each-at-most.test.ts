import { describe, expect, it } from "@jest/globals";
import { eachAtMost } from "../../src/util/each-at-most.js";

/** A task per item that waits until the test lets it finish, counting how many run at once. */
function gatedTasks() {
  const release = new Map<number, { ok: () => void; fail: (error: Error) => void }>();
  const started: number[] = [];
  let running = 0;
  let most = 0;
  const task = (item: number): Promise<string> => {
    started.push(item);
    running++;
    most = Math.max(most, running);
    return new Promise<string>((resolve, reject) => {
      release.set(item, {
        ok: () => {
          running--;
          resolve(`done ${item}`);
        },
        fail: (error) => {
          running--;
          reject(error);
        },
      });
    });
  };
  const settle = async (item: number, error?: Error): Promise<void> => {
    const gate = release.get(item);
    if (!gate) throw new Error(`item ${item} was not started`);
    if (error) gate.fail(error);
    else gate.ok();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { task, settle, started, most: () => most };
}

describe("eachAtMost", () => {
  it("runs at most `limit` at once, starting items in order, and keeps the items' order", async () => {
    const gated = gatedTasks();
    const done = eachAtMost([1, 2, 3, 4, 5], 2, gated.task);
    await new Promise((resolve) => setImmediate(resolve));
    expect(gated.started).toEqual([1, 2]);
    await gated.settle(2);
    expect(gated.started).toEqual([1, 2, 3]);
    await gated.settle(3);
    await gated.settle(1);
    await gated.settle(5);
    await gated.settle(4);
    const { results, failure } = await done;
    expect(gated.most()).toBe(2);
    expect(results).toEqual(["done 1", "done 2", "done 3", "done 4", "done 5"]);
    expect(failure).toBeUndefined();
  });

  it("starts nothing after a rejection, and resolves once every started task settled", async () => {
    const gated = gatedTasks();
    let resolved = false;
    const done = eachAtMost([1, 2, 3, 4], 2, gated.task).then((each) => {
      resolved = true;
      return each;
    });
    await new Promise((resolve) => setImmediate(resolve));
    const boom = new Error("boom");
    await gated.settle(1, boom);
    expect(gated.started).toEqual([1, 2]);
    expect(resolved).toBe(false);
    await gated.settle(2);
    const { results, failure } = await done;
    expect(failure?.error).toBe(boom);
    expect(results).toEqual([undefined, "done 2", undefined, undefined]);
  });

  it("starts nothing once stop() is true", async () => {
    const gated = gatedTasks();
    let stopping = false;
    const done = eachAtMost([1, 2, 3], 1, gated.task, () => stopping);
    await new Promise((resolve) => setImmediate(resolve));
    stopping = true;
    await gated.settle(1);
    const { results, failure } = await done;
    expect(gated.started).toEqual([1]);
    expect(results).toEqual(["done 1", undefined, undefined]);
    expect(failure).toBeUndefined();
  });

  it("resolves at once for no items", async () => {
    await expect(eachAtMost([], 4, () => Promise.resolve(1))).resolves.toEqual({ results: [] });
  });

  it("refuses a limit that is not a positive integer", async () => {
    for (const limit of [0, -1, 1.5, Number.NaN]) {
      await expect(eachAtMost([1], limit, () => Promise.resolve(1))).rejects.toThrow(RangeError);
    }
  });
});
