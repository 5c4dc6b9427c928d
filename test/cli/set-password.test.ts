import { PassThrough } from "node:stream";
import { askHidden } from "../../src/cli/prompt.js";
import { runCli } from "../../src/cli.js";
import type { Simulator } from "../../src/simulator/server.js";
import { bufferIo } from "../support/cli-io.js";
import { startTestSimulator } from "../support/simulator.js";

describe("set-password", () => {
  let sim: Simulator;
  beforeEach(async () => {
    sim = await startTestSimulator({ users: [{ user: "ops", otp: "otp-4711" }] });
  });
  afterEach(() => sim.close());

  const baseEnv = () => ({
    ENERGY_API_URL: sim.url,
    ENERGY_API_KEY: sim.apiKey,
    LOG_LEVEL: "debug",
  });

  it("sets the password from flags; the new password then obtains a token", async () => {
    const io = bufferIo(baseEnv());
    const code = await runCli(
      ["set-password", "--user", "ops", "--otp", "otp-4711", "--password", "Pa55-word!"],
      io,
    );
    expect(io.err()).not.toContain("otp-4711");
    expect(io.err()).not.toContain("Pa55-word!");
    expect(code).toBe(0);
    expect(io.out()).toContain("Password set for ops");

    const check = bufferIo({
      ...baseEnv(),
      ENERGY_API_USER: "ops",
      ENERGY_API_PASSWORD: "Pa55-word!",
    });
    expect(await runCli(["devices", "--json"], check)).toBe(0);
  });

  it("takes the one-time password and the password from the environment", async () => {
    const io = bufferIo({
      ...baseEnv(),
      ENERGY_API_USER: "ops",
      ENERGY_API_OTP: "otp-4711",
      ENERGY_API_PASSWORD: "x-Pa55",
    });
    expect(await runCli(["set-password"], io)).toBe(0);
  });

  it("a wrong one-time password fails with exit 1 and does not echo it", async () => {
    const io = bufferIo(baseEnv());
    const code = await runCli(
      ["set-password", "-u", "ops", "--otp", "wrong-otp-value", "--password", "pw-value-1"],
      io,
    );
    expect(code).toBe(1);
    expect(io.err()).toMatch(/auth_failed/);
    expect(io.err()).not.toContain("wrong-otp-value");
    expect(io.err()).not.toContain("pw-value-1");
  });

  it("off a terminal, without --otp, says how to pass it", async () => {
    const io = bufferIo(baseEnv());
    expect(await runCli(["set-password", "-u", "ops"], io)).toBe(2);
    expect(io.err()).toMatch(/one-time password needed: not on a terminal/);
  });
});

describe("askHidden", () => {
  it("reads until Enter without echoing, honouring Backspace", async () => {
    const stdin = Object.assign(new PassThrough(), { isTTY: true, rawModes: [] as boolean[] });
    const io = bufferIo();
    const rawModes: boolean[] = [];
    const ttyIo = {
      ...io,
      stdin: Object.assign(stdin, { setRawMode: (raw: boolean) => rawModes.push(raw) }),
    };
    const answer = askHidden(ttyIo, "Secret: ");
    stdin.write("s3cx\u007fret\r");
    await expect(answer).resolves.toBe("s3cret");
    expect(io.err()).toBe("Secret: \n");
    expect(rawModes).toEqual([true, false]);
  });

  it("Ctrl-C cancels", async () => {
    const stdin = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => undefined });
    const answer = askHidden({ ...bufferIo(), stdin }, "Secret: ");
    stdin.write("ab\u0003");
    await expect(answer).rejects.toThrow("cancelled");
  });
});
