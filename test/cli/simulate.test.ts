import { Command } from "commander";
import got from "got";
import { registerSimulateCommand } from "../../src/cli/commands/simulate.js";
import { UsageError } from "../../src/cli/io.js";
import { killCliChildren, spawnCli } from "../support/cli-child.js";
import { bufferIo } from "../support/cli-io.js";

/** Runs `simulate` in-process with only its own command registered; resolves with the error. */
async function simulateError(args: readonly string[]): Promise<unknown> {
  const io = bufferIo();
  const program = new Command("energy-etl").exitOverride();
  registerSimulateCommand(program, io);
  try {
    await program.parseAsync(["simulate", "--port", "0", ...args], { from: "user" });
  } catch (error) {
    expect(io.out()).toBe("");
    return error;
  }
  throw new Error("simulate did not fail");
}

/**
 * Starts `dist/cli.js simulate` with `args` (and `env` added to this process's), in a directory
 * without a .env; resolves once the startup lines are out.
 */
async function spawnSimulator(args: readonly string[], env: Record<string, string> = {}) {
  const cli = spawnCli(["simulate", "--port", "0", ...args], env);
  await cli.waitForStdout(/devices: .*\n/, 15_000);
  const out = cli.stdout();
  const url = /ENERGY_API_URL=(\S+)/.exec(out)?.[1];
  if (url === undefined) throw new Error(`simulate printed no ENERGY_API_URL: ${out}`);
  const credentials = Object.fromEntries(
    [...out.matchAll(/^\s+(ENERGY_API_\w+)=(\S+)$/gm)].map((m) => [m[1], m[2]]),
  ) as Record<string, string>;
  const stop = async (): Promise<number | null> => {
    cli.child.kill("SIGTERM");
    return (await cli.wait(10_000, "simulate after SIGTERM")).code;
  };
  return { url, env: credentials, out, stop, err: cli.stderr };
}

afterEach(killCliChildren);

async function tokenFor(url: string, env: Record<string, string>): Promise<string> {
  const body = await got
    .post(`${url}/create_token`, {
      headers: {
        "x-api-key": env.ENERGY_API_KEY,
        authorization: `Basic ${Buffer.from(`${env.ENERGY_API_USER}:${env.ENERGY_API_PASSWORD}`).toString("base64")}`,
      },
    })
    .json<{ token: string }>();
  return body.token;
}

describe("energy-etl simulate", () => {
  it("prints the base URL and credentials that work, and stops on SIGTERM", async () => {
    const sim = await spawnSimulator(["--seed", "3"]);
    expect(sim.env.ENERGY_API_KEY).toBeTruthy();
    expect(sim.out).not.toContain("data faults");
    expect(await tokenFor(sim.url, sim.env)).toBeTruthy();
    expect(await sim.stop()).toBe(0);
  });

  it("serves the data faults of its flags and prints them", async () => {
    const sim = await spawnSimulator([
      "--poison-rate",
      "1",
      "--duplicate-rate",
      "0.5",
      "--outage",
      "audit-box-03,2026-11-20T10:00:00Z,2026-11-20T12:00:00Z,never",
      "--outage",
      "site A+1,2026-11-20T10:00,2026-11-20T11:00:00Z",
    ]);
    try {
      expect(sim.out).toContain("  data faults: poison rows 1, duplicate rows 0.5\n");
      expect(sim.out).toContain(
        "  outage: audit-box-03 from 2026-11-20T10:00:00Z to 2026-11-20T12:00:00Z, never visible (dead gateway)\n",
      );
      expect(sim.out).toContain(
        "  outage: site A+1 from 2026-11-20T10:00:00Z to 2026-11-20T11:00:00Z, visible when the uplink is back\n",
      );
      const token = await tokenFor(sim.url, sim.env);
      const res = await got.get(`${sim.url}/data/hybrid-site-01/all_data`, {
        headers: { authorization: `Bearer ${token}` },
        searchParams: {
          values: "e_03_01_00_000_total_solar_power",
          from: "20250601T000000",
          to: "20250601T001000",
        },
      });
      expect(res.body).toContain('"e_03_01_00_000_total_solar_power":1e400');
      expect(res.headers.date).toMatch(/^\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
    } finally {
      expect(await sim.stop()).toBe(0);
    }
  });

  it.each([
    ["LOG_FORMAT=pretty", { LOG_FORMAT: "pretty" }, [], /^\[[\d:]+\] INFO: simulator started/m],
    ["--log-format pretty", {}, ["--log-format", "pretty"], /^\[[\d:]+\] INFO: simulator started/m],
    [
      "LOG_FORMAT=auto off a terminal",
      { LOG_FORMAT: "auto" },
      [],
      /^\{.*"msg":"simulator started"/m,
    ],
  ])("honours LOG_FORMAT like every command: %s", async (_, env, flags, line) => {
    const sim = await spawnSimulator([...flags], env);
    expect(await sim.stop()).toBe(0);
    expect(sim.err()).toMatch(line);
  });

  it("serves --devices N: prints the count and lists every device", async () => {
    const sim = await spawnSimulator(["--devices", "5000"]);
    try {
      expect(sim.out).toContain(
        "  devices: 5000 (hybrid-site-01, offgrid-genset-02, audit-box-03, site A+1, site-00005, …, site-05000)\n",
      );
      expect(sim.out).toMatch(/ {2}new value ids: \d+ devices, from \S+Z to \S+Z\n/);
      const token = await tokenFor(sim.url, sim.env);
      const body = await got
        .get(`${sim.url}/devices`, { headers: { authorization: `Bearer ${token}` } })
        .json<{ device_ids: string[] }>();
      expect(body.device_ids).toHaveLength(5000);
      expect(new Set(body.device_ids).size).toBe(5000);
    } finally {
      expect(await sim.stop()).toBe(0);
    }
  });

  it("prints the default devices with their count and no new values", async () => {
    const sim = await spawnSimulator([]);
    try {
      expect(sim.out).toContain(
        "  devices: 4 (hybrid-site-01, offgrid-genset-02, audit-box-03, site A+1)\n",
      );
      expect(sim.out).not.toContain("new value ids");
    } finally {
      expect(await sim.stop()).toBe(0);
    }
  });

  it.each([
    [["--devices", "0"], /^--devices: must be at least 1 \(got "0"\)$/],
    [["--devices", "2.5"], /^--devices: must be a whole number \(got "2.5"\)$/],
    [["--devices", "100001"], /^--devices: must be at most 100000 \(got "100001"\)$/],
    [["--devices", "many"], /^--devices: must be a whole number \(got "many"\)$/],
    [
      ["--new-value-share", "1.1"],
      /^--new-value-share: must be a share from 0 to 1 \(got "1.1"\)$/,
    ],
    [
      ["--devices", "10", "--outage", "site-00011,2026-11-20T10:00:00Z,2026-11-20T11:00:00Z"],
      /--outage: unknown device "site-00011" \(devices: hybrid-site-01, .*, site-00010\)$/,
    ],
    [["--poison-rate", "1.5"], /^--poison-rate: must be a share from 0 to 1 \(got "1.5"\)$/],
    [
      ["--extra-member-rate", "-0.1"],
      /^--extra-member-rate: must be a share from 0 to 1 \(got "-0.1"\)$/,
    ],
    [["--extra-members", "0"], /^--extra-members: must be at least 1 \(got "0"\)$/],
    [["--extra-members", "2.5"], /^--extra-members: must be a whole number \(got "2.5"\)$/],
    [
      ["--out-of-window-rate", "half"],
      /^--out-of-window-rate: must be a share from 0 to 1 \(got "half"\)$/,
    ],
    [["--duplicate-rate", "2"], /^--duplicate-rate: must be a share from 0 to 1 \(got "2"\)$/],
    [["--token-ttl", "0"], /^--token-ttl: .* \(got "0"\)$/],
    [["--outage", "hybrid-site-01,2026-11-20T10:00:00Z"], /--outage: too few fields in/],
    [["--outage", ",2026-11-20T10:00:00Z,2026-11-20T11:00:00Z"], /--outage: no device id/],
    [
      ["--outage", "hybrid-site-01,2026-11-31T10:00:00Z,2026-12-01T00:00:00Z"],
      /--outage: FROM "2026-11-31T10:00:00Z" is not an ISO date-time/,
    ],
    [
      ["--outage", "hybrid-site-01,2026-11-20T10:00:00Z,tomorrow"],
      /--outage: TO "tomorrow" is not an ISO date-time/,
    ],
    [
      ["--outage", "hybrid-site-01,2026-11-20T10:00:00Z,2026-11-20T09:00:00Z"],
      /--outage: TO must be after FROM/,
    ],
    [
      ["--outage", "hybrid-site-01,2026-11-20T10:00:00Z,2026-11-20T11:00:00Z,later"],
      /--outage: VISIBLE_AT "later" is not an ISO date-time or never/,
    ],
    [
      ["--outage", "hybrid-site-01,2026-11-20T10:00:00Z,2026-11-20T11:00:00Z,2026-11-20T10:30:00Z"],
      /--outage: VISIBLE_AT must not be before TO/,
    ],
    [
      ["--outage", "nope,2026-11-20T10:00:00Z,2026-11-20T11:00:00Z"],
      /--outage: unknown device "nope" \(devices: hybrid-site-01, /,
    ],
  ])("refuses %j with a usage error naming the flag", async (args, message) => {
    const error = await simulateError(args);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).message).toMatch(message);
  });
});
