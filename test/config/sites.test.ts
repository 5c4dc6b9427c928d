/** `sites` of the config file: parsed at the boundary, errors naming the device and the field. */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { configJsonSchema, describeConfig, loadConfig } from "../../src/config.js";
import { tempDir } from "../support/temp-dir.js";

const dir = tempDir("energy-etl-sites-");
let files = 0;

/** A config file holding `json`; its path. */
function configFile(json: unknown): string {
  files += 1;
  const file = join(dir, `config-${files}.json`);
  writeFileSync(file, JSON.stringify(json));
  return file;
}

describe("sites in the config file", () => {
  it("reads kwp, name and group per device; every field optional, none by default", () => {
    const file = configFile({
      sites: {
        "hybrid-site-01": { kwp: 9.8, name: "Farm north", group: "north" },
        "site A+1": { kwp: 4 },
        "offgrid-genset-02": { name: "Camp" },
      },
    });
    expect(loadConfig({ file }).sites).toEqual({
      "hybrid-site-01": { kwp: 9.8, name: "Farm north", group: "north" },
      "site A+1": { kwp: 4 },
      "offgrid-genset-02": { name: "Camp" },
    });
    expect(loadConfig({}).sites).toEqual({});
    expect(describeConfig(loadConfig({ file })).sites).toEqual(loadConfig({ file }).sites);
  });

  it.each([
    [
      { "dev-1": { kwp: 0 } },
      /site "dev-1" \(sites, from config file .*\): kwp must be above 0 kWp/,
    ],
    [{ "dev-1": { kwp: -3 } }, /site "dev-1" .*: kwp must be above 0 kWp/],
    [{ "dev-1": { kwp: "9.8" } }, /site "dev-1" .*: kwp must be a JSON number of kWp/],
    [{ "dev-1": { kwp: 98_000_000 } }, /site "dev-1" .*: kwp must be at most 10000000 kWp/],
    [{ "dev-1": { name: "" } }, /site "dev-1" .*: name must not be empty/],
    [{ "dev-1": { group: "a\nb" } }, /site "dev-1" .*: group holds a control character/],
    [
      { "dev-1": { kWp: 5 } },
      /site "dev-1" .*: unknown key kWp \(a site has kwp, name and group\)/,
    ],
    [{ "dev-1": 5 }, /site "dev-1" .*: must be an object/],
    [{ "dev\n1": { kwp: 1 } }, /a device id holds a control character/],
  ])("refuses %j with a message naming the device and the field", (sites, message) => {
    const file = configFile({ sites });
    expect(() => loadConfig({ file })).toThrow(message);
  });

  it("is described in config/schema.json, not taken from a variable", () => {
    const schema = configJsonSchema() as { properties: Record<string, { description?: string }> };
    expect(schema.properties.sites?.description).toMatch(/config file only/);
    expect(loadConfig({ env: { SITES: '{"a":{"kwp":1}}' } }).sites).toEqual({});
  });
});
