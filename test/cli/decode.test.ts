import { runCli } from "../../src/cli.js";
import { bufferIo } from "../support/cli-io.js";

async function run(...argv: string[]) {
  const io = bufferIo({});
  const code = await runCli(argv, io);
  return { code, out: io.out(), err: io.err() };
}

describe("decode ID...", () => {
  const ids = [
    "e_03_07_04_000_total_solar_energy",
    "e_03_01_00_001_AC_activepower_L1",
    "alarm_name",
    "values_id",
    "e_03_99_42_002_mystery",
    "temperature",
  ];

  it("prints a table of what each id becomes", async () => {
    const { code, out, err } = await run("decode", ...ids);
    expect(code).toBe(0);
    expect(err).toBe("");
    for (const head of ["id", "measurement", "field", "unit", "type", "values id"]) {
      expect(out).toContain(head);
    }
    // piped: tab-separated; cells shown between " | " for the patterns below
    const rowOf = (id: string) =>
      (out.split("\n").find((line) => line.startsWith(`${id}\t`)) ?? "").replaceAll("\t", " | ");
    expect(rowOf("e_03_07_04_000_total_solar_energy")).toMatch(
      /total_solar_energy .*value \(number\) \/ text \(string\).* kWh .* cumulative .* 000/,
    );
    expect(rowOf("e_03_01_00_001_AC_activepower_L1")).toMatch(
      /AC_activepower_L1 .* kW .* continuous .* 001/,
    );
    expect(rowOf("alarm_name")).toMatch(/alarm .* alarm_name .* none .* alarm /);
    expect(rowOf("values_id")).toMatch(/\(tag values_id\) .* none .* meta /);
    expect(rowOf("e_03_99_42_002_mystery")).toMatch(
      /mystery .* unknown_03_99 .* unknown_42 .* 002/,
    );
    expect(rowOf("temperature")).toMatch(/temperature .* none .* unknown /);
    expect(out).toContain(
      "note: e_03_99_42_002_mystery: not in the spec's tables: unit 99, type 42",
    );
  });

  it("--json prints the decoded ids as an array", async () => {
    const { code, out } = await run("decode", "--json", ...ids);
    expect(code).toBe(0);
    const parsed = JSON.parse(out) as unknown[];
    expect(parsed).toHaveLength(ids.length);
    expect(parsed[0]).toEqual({
      id: "e_03_07_04_000_total_solar_energy",
      kind: "coded",
      measurement: "total_solar_energy",
      unit: "kWh",
      type: "cumulative",
      codes: { prefix: "03", unit: "07", type: "04", valuesId: "000", name: "total_solar_energy" },
      unknownCodes: [],
    });
    expect(parsed[2]).toEqual({
      id: "alarm_name",
      kind: "alarm",
      measurement: "alarm",
      unit: "none",
      type: "alarm",
      field: "alarm_name",
      unknownCodes: [],
    });
    expect(parsed[4]).toMatchObject({
      id: "e_03_99_42_002_mystery",
      unit: "unknown_03_99",
      type: "unknown_42",
      unknownCodes: ["unit 99", "type 42"],
    });
  });

  it("needs no configuration: works with an empty environment", async () => {
    const { code } = await run("decode", "protocol_id");
    expect(code).toBe(0);
  });

  async function parseDecode(...args: string[]) {
    const io = bufferIo({});
    const exitCode = await runCli(["decode", ...args], io);
    return { exitCode, out: io.out(), err: io.err() };
  }

  it("without ids is a usage error", async () => {
    const { exitCode, err } = await parseDecode();
    expect(exitCode).not.toBe(0);
    expect(err).toContain("missing required argument 'ids'");
  });

  it("--help describes it with an example", async () => {
    const { exitCode, out } = await parseDecode("--help");
    expect(exitCode).toBe(0);
    expect(out).toContain("<ids...>");
    expect(out).toContain("--json");
    expect(out).toContain("energy-etl decode e_03_07_04_000_total_solar_energy");
  });
});
