import {
  afterPasswordSet,
  proveAccess,
  setPasswordOnFirstStart,
} from "../../../src/cli/init/checks.js";
import { UsageError } from "../../../src/cli/io.js";
import type { Simulator } from "../../../src/simulator/server.js";
import { bufferIo } from "../../support/cli-io.js";
import { clientFor, startTestSimulator } from "../../support/simulator.js";

const INPUT = { apiUrl: "", apiKey: "", user: "demo", password: "demo-password", otp: undefined };

describe("init's checks", () => {
  let sim: Simulator;
  beforeEach(async () => {
    sim = await startTestSimulator();
  });
  afterEach(() => sim.close());

  it("proves a token and lists the devices", async () => {
    const io = bufferIo();
    await proveAccess(io, clientFor(sim).client, false);
    const devices = sim.fleet.deviceIds();
    expect(io.out()).toContain("Token: created, the credentials work.\n");
    expect(io.out()).toContain(`Devices: ${devices.length} (${devices.slice(0, 5).join(", ")}`);
  });

  it("an API it cannot reach: check the URL, unless the password was just set", async () => {
    const { client } = clientFor(sim, { retry: { retries: 0, baseDelayMs: 1, maxDelayMs: 1 } });
    await sim.close();
    const advice =
      "Check the API URL (--api-url or ENERGY_API_URL) and that the API can be reached";
    await expect(proveAccess(bufferIo(), client, false)).rejects.toThrow(advice);
    const afterSet = proveAccess(bufferIo(), client, true);
    await expect(afterSet).rejects.toThrow();
    await expect(afterSet.catch((e: Error) => e.message)).resolves.not.toContain(advice);
  });

  it("without a one-time password sets nothing and sends nothing", async () => {
    const io = bufferIo();
    await expect(setPasswordOnFirstStart(io, clientFor(sim).client, INPUT)).resolves.toBe(false);
    expect(sim.count()).toBe(0);
    expect(io.out()).toBe("");
  });
});

describe("afterPasswordSet", () => {
  it.each([
    [new UsageError("bad thing."), UsageError],
    [new Error("bad thing"), Error],
  ])("adds that the password is set to %p, keeping its kind", (error, kind) => {
    const after = afterPasswordSet(error, "ops");
    expect(after).toBeInstanceOf(kind);
    expect(after.message).toBe(
      "bad thing. The password of ops is set now (the one-time password is used up): run " +
        "init again without ENERGY_API_OTP, with that password.",
    );
  });
});
