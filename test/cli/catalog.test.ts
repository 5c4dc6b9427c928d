import { runCli } from "../../src/cli.js";
import type { Simulator } from "../../src/simulator/server.js";
import { bufferIo } from "../support/cli-io.js";
import { startTestSimulator } from "../support/simulator.js";

describe("catalog commands: devices, resources, values", () => {
  let sim: Simulator;
  let env: Record<string, string>;

  beforeAll(async () => {
    sim = await startTestSimulator();
    env = {
      ENERGY_API_URL: sim.url,
      ENERGY_API_KEY: sim.apiKey,
      ENERGY_API_USER: "demo",
      ENERGY_API_PASSWORD: "demo-password",
      LOG_LEVEL: "warn",
    };
  });
  afterAll(() => sim.close());

  async function run(...argv: string[]) {
    const io = bufferIo(env);
    const code = await runCli(argv, io);
    return { code, out: io.out(), err: io.err() };
  }

  it("devices --json prints exactly the API's object", async () => {
    const { code, out } = await run("devices", "--json");
    expect(code).toBe(0);
    expect(JSON.parse(out)).toEqual({ device_ids: sim.fleet.deviceIds() });
  });

  it("devices prints a table with every device and a count", async () => {
    const { code, out } = await run("devices");
    expect(code).toBe(0);
    for (const id of sim.fleet.deviceIds()) expect(out).toContain(id);
    expect(out).toMatch(/device_id/);
    expect(out).toContain(`${sim.fleet.deviceIds().length} devices`);
  });

  it("resources DEVICE, with an odd id", async () => {
    const { out } = await run("resources", "site A+1", "--json");
    expect(JSON.parse(out)).toEqual({
      device_id: "site A+1",
      resource_ids: sim.fleet.resourceIds("site A+1"),
    });
  });

  it("values DEVICE defaults to all_data; values DEVICE RESOURCE", async () => {
    const all = JSON.parse((await run("values", "hybrid-site-01", "--json")).out);
    expect(all).toEqual({
      device_id: "hybrid-site-01",
      resource_id: "all_data",
      values: sim.fleet.valueIds("hybrid-site-01", "all_data"),
    });
    const table = (await run("values", "hybrid-site-01", "battery_bank")).out;
    expect(table).toMatch(/^value_id\tmeasurement\tunit\ttype/m);
    expect(table).toMatch(/values_id\t.*\(tag values_id\)/);
    expect(table).toMatch(/alarm_name\talarm\tnone\talarm/);
  });

  it("an unknown device is a one-line API error, exit 1", async () => {
    const { code, err } = await run("resources", "nope");
    expect(code).toBe(1);
    expect(err.trim().split("\n")).toHaveLength(1);
    expect(err).toMatch(/^energy-etl: error: API not_found: .*unknown device: nope/);
  });

  it("missing connection settings are named, exit 2", async () => {
    const io = bufferIo({});
    expect(await runCli(["devices"], io)).toBe(2);
    expect(io.err()).toMatch(/not configured: ENERGY_API_URL .*ENERGY_API_KEY/);
  });
});
