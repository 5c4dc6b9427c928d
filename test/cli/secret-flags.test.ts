/**
 * A secret given as a flag (`--api-key`, `--password`, `--api-password`, `--otp`,
 * `--influx-token`, `--influx-password`) is refused on every command, before the command's name or after it, with
 * or without a value, in one line that says where the secret belongs: exit 2, nothing sent to
 * the API, nothing on stdout. `init` and `set-password` add that they ask on a terminal for the
 * secrets they ask for; `simulate` keeps the flags that are its own (the simulator's secrets).
 */
import { runCli } from "../../src/cli.js";
import type { Simulator } from "../../src/simulator/server.js";
import { bufferIo } from "../support/cli-io.js";
import { startTestSimulator } from "../support/simulator.js";

/** The oracle: each secret flag and the variable it belongs in. */
const FLAGS: readonly (readonly [string, string])[] = [
  ["--api-key", "ENERGY_API_KEY"],
  ["--password", "ENERGY_API_PASSWORD"],
  ["--api-password", "ENERGY_API_PASSWORD"],
  ["--otp", "ENERGY_API_OTP"],
  ["--influx-token", "INFLUX_TOKEN"],
  ["--influx-password", "INFLUX_PASSWORD"],
];

/** Each command as it would otherwise run (its arguments given). */
const COMMANDS: readonly (readonly string[])[] = [
  ["devices"],
  ["resources", "hybrid-site-01"],
  ["values", "hybrid-site-01"],
  ["sync"],
  ["backfill", "--from", "2026-01-01", "--to", "2026-01-02"],
  ["status"],
  ["dead-letters"],
  ["dead-letters", "show", "1"],
  ["audit"],
  ["rollups", "--from", "2026-01-01", "--to", "2026-01-02"],
  ["run"],
  ["config"],
  ["decode"],
  ["demo"],
  ["migrate"],
  ["doctor"],
];

/** The variables `command` asks for on a terminal (the oracle of the message's last clause). */
const ASKS: Readonly<Record<string, readonly string[]>> = {
  init: [
    "ENERGY_API_KEY",
    "ENERGY_API_PASSWORD",
    "ENERGY_API_OTP",
    "INFLUX_TOKEN",
    "INFLUX_PASSWORD",
  ],
  "set-password": ["ENERGY_API_OTP", "ENERGY_API_PASSWORD"],
};

function expected(flag: string, env: string, command: string): string {
  const asks = ASKS[command]?.includes(env)
    ? `, or leave it out and ${command} asks on a terminal`
    : "";
  return (
    `energy-etl: error: ${flag} is not taken: a secret on the command line shows in the shell ` +
    `history and in ps. Set ${env} in the environment or the .env file${asks}\n`
  );
}

describe("secret flags on every command", () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startTestSimulator();
  });
  afterAll(() => sim.close());

  async function refused(argv: readonly string[], message: string) {
    const io = bufferIo({
      ENERGY_API_URL: sim.url,
      ENERGY_API_KEY: sim.apiKey,
      ENERGY_API_USER: "ops",
      ENERGY_API_PASSWORD: "pw",
      OUTPUT_FILE: "-",
      STATE_DB: "/nonexistent/never-opened.db",
    });
    const before = sim.count();
    expect(await runCli([...argv], io)).toBe(2);
    expect(io.err()).toBe(message);
    expect(io.out()).toBe("");
    expect(sim.count()).toBe(before);
  }

  const cases = [...COMMANDS, ["init"], ["set-password", "-u", "ops"]].flatMap((argv) =>
    FLAGS.map(([flag, env]) => [argv.join(" "), flag, env, argv] as const),
  );

  it.each(cases)("%s %s: refused, saying where it belongs", async (_, flag, env, argv) => {
    const command = argv[0] ?? "";
    const message = expected(flag, env, command);
    // after the command, with a value, with `=value`, without one; before the command's name
    await refused([...argv, flag, "flag-secret-7c2e"], message);
    await refused([...argv, `${flag}=flag-secret-7c2e`], message);
    await refused([...argv, flag], message);
    await refused([flag, "flag-secret-7c2e", ...argv], message);
  });

  it.each([
    ["--api-password", "ENERGY_API_PASSWORD"],
    ["--influx-token", "INFLUX_TOKEN"],
  ])(
    "simulate %s: refused (the simulator takes --api-key, --password, --otp)",
    async (flag, env) => {
      await refused(["simulate", "--port", "0", flag, "x"], expected(flag, env, "simulate"));
    },
  );

  it("the flags are hidden from help", async () => {
    const io = bufferIo();
    await runCli(["sync", "--help"], io);
    expect(io.out()).toContain("Usage: energy-etl sync");
    for (const [flag] of FLAGS) expect(io.out()).not.toContain(flag);
  });
});
