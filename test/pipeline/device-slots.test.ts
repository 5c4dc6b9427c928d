import { DeviceSlots } from "../../src/pipeline/device-slots.js";

/** A task that waits until released by hand, and records when it runs. */
function gate(log: string[], name: string) {
  let release: () => void = () => undefined;
  const done = new Promise<void>((r) => {
    release = r;
  });
  return {
    task: async () => {
      log.push(`start ${name}`);
      await done;
      log.push(`end ${name}`);
      return name;
    },
    release: () => release(),
  };
}

const tick = () => new Promise((r) => setImmediate(r));

describe("DeviceSlots: one device's share of the request slots", () => {
  it("runs at most `limit` tasks of a device at once; other devices are not held", async () => {
    const slots = new DeviceSlots(2);
    const log: string[] = [];
    const slow = [gate(log, "a1"), gate(log, "a2"), gate(log, "a3")];
    const other = gate(log, "b1");
    const running = [...slow.map((g) => slots.run("a", g.task)), slots.run("b", other.task)];
    await tick();
    expect(log).toEqual(["start a1", "start a2", "start b1"]);
    other.release();
    await tick();
    expect(log).toContain("end b1");
    expect(log).not.toContain("start a3");
    slow[0]?.release();
    await tick();
    await tick();
    expect(log).toContain("start a3");
    for (const g of slow) g.release();
    expect(await Promise.all(running)).toEqual(["a1", "a2", "a3", "b1"]);
  });

  it("gives the slot back when a task fails", async () => {
    const slots = new DeviceSlots(1);
    await expect(slots.run("a", async () => Promise.reject(new Error("boom")))).rejects.toThrow(
      "boom",
    );
    await expect(slots.run("a", async () => "next")).resolves.toBe("next");
  });

  it("refuses a limit below 1", () => {
    expect(() => new DeviceSlots(0)).toThrow(RangeError);
  });
});
