/**
 * `status` says whether a service holds the state file (#35): the `run` holding the service lock,
 * its pid, host and the age of its last heartbeat (the lock's renewal), or that none does. Real
 * parts: a SQLite state file, the command in-process.
 */
import { runCli } from "../../src/cli.js";
import { LOCK_TTL_MS, SERVICE_LOCK } from "../../src/state/service-lock.js";
import { StateStore } from "../../src/state/state-store.js";
import { bufferIo } from "../support/cli-io.js";
import { tempStateDb } from "../support/pipeline.js";

/** A service of another machine: never "gone" by a probe of this one. */
const SERVICE = { id: "plant-ctl:4242:1:abcd", pid: 4242, host: "plant-ctl", command: "run" };

async function status(stateDb: string, ...args: string[]) {
  const io = bufferIo({ STATE_DB: stateDb });
  const code = await runCli(["status", ...args], io);
  return { code, out: io.out() };
}

describe("status and the service holding the state file", () => {
  it("names the running service with its heartbeat's age, and says when none runs", async () => {
    const stateDb = tempStateDb();
    const store = StateStore.open(stateDb);
    try {
      expect((await status(stateDb)).out).toContain("service: none running on this state file");
      expect(JSON.parse((await status(stateDb, "--json")).out)).toMatchObject({ service: null });

      // renewed 4 s ago (a lease of LOCK_TTL_MS from then)
      const heartbeatMs = Date.now() - 4_000;
      expect(store.locks.acquire(SERVICE_LOCK, SERVICE, LOCK_TTL_MS, heartbeatMs).acquired).toBe(
        true,
      );
      const shown = await status(stateDb);
      expect(shown.code).toBe(0);
      const line =
        /^service: energy-etl run holds the state \(pid 4242 on plant-ctl, since (\S+), heartbeat (\d+) s ago\)$/m.exec(
          shown.out,
        );
      expect(line?.[1]).toBe(new Date(heartbeatMs).toISOString());
      const age = Number(line?.[2]);
      expect(age).toBeGreaterThanOrEqual(3); // whole seconds of the status clock
      expect(age).toBeLessThan(LOCK_TTL_MS / 1000);
      const json = JSON.parse((await status(stateDb, "--json")).out) as { service: unknown };
      expect(json.service).toMatchObject({ pid: 4242, host: "plant-ctl", command: "run" });

      // a lease that ran out: the service is gone (or hung), none holds the state
      store.locks.release(SERVICE_LOCK, SERVICE);
      store.locks.acquire(SERVICE_LOCK, SERVICE, LOCK_TTL_MS, Date.now() - 2 * LOCK_TTL_MS);
      expect((await status(stateDb)).out).toContain("service: none running on this state file");
    } finally {
      store.close();
    }
  });
});
