import { readFileSync } from "node:fs";
import {
  CONFIG_ARTEFACTS,
  settingsTable,
  TABLE_END,
  TABLE_START,
  withSettingsTable,
} from "../../src/config/artefacts.js";
import { configSchema, describeConfig, SETTINGS } from "../../src/config.js";

describe("the files derived from the configuration schema", () => {
  it.each(CONFIG_ARTEFACTS.map((a) => [a.path, a] as const))(
    "%s is current (regenerate: npm run docs:config)",
    (path, artefact) => {
      const current = readFileSync(path, "utf8");
      expect({ path, text: artefact.render(current) }).toEqual({ path, text: current });
    },
  );

  it("the settings table has one row per setting: names, flag, default and meaning", () => {
    const rows = settingsTable().split("\n");
    expect(rows.slice(0, 2)).toEqual([
      "| Environment | Config file | Flag | Default | Meaning |",
      "|---|---|---|---|---|",
    ]);
    expect(rows.slice(2)).toHaveLength(SETTINGS.length);
    expect(rows).toContain(
      "| `API_CONCURRENCY` | `api.concurrency` | `--api-concurrency` | `4` | Requests in flight at once (1-64) |",
    );
    expect(rows).toContain("| `ENERGY_API_KEY` | `api.key` | | | API key (`x-api-key`); secret |");
    expect(rows).toContain(
      "| `SILENT_AFTER` | `sync.silentAfter` | | `PT6H` | A resource without a new record for this long is silent: probed, not fetched; `PT1M` to `P30D` |",
    );
    expect(rows).toContain(
      "| `INFLUX_GZIP` | `influx.gzip` | | `false` | Gzip write requests: worth it over a slow link to InfluxDB Cloud, a CPU cost on a LAN |",
    );
  });

  it("replaces only what lies between the markers, and says when they are missing", () => {
    const page = `# Title\n\ntext before\n${TABLE_START}\nold table\n${TABLE_END}\n\ntext after\n`;
    expect(withSettingsTable(page)).toBe(
      `# Title\n\ntext before\n${TABLE_START}\n${settingsTable()}\n${TABLE_END}\n\ntext after\n`,
    );
    expect(() => withSettingsTable("# no table here\n")).toThrow(/no generated table/);
  });

  it("config/default.json is every default in the config file's shape", () => {
    const shipped = JSON.parse(readFileSync("config/default.json", "utf8")) as object;
    expect(shipped).toEqual({
      $schema: "./schema.json",
      ...describeConfig(configSchema.parse({})),
    });
  });

  it(".env.example's [default] of each setting is the built-in one", () => {
    const defaults = describeConfig(configSchema.parse({}));
    const lines = readFileSync(".env.example", "utf8").split("\n");
    const checked = SETTINGS.flatMap((setting) => {
      const at = lines.indexOf(`${setting.env}=`);
      const bracket = /\[([^\]]*)\][^[]*$/.exec(lines[at - 1] ?? "")?.[1];
      if (at < 1 || bracket === undefined || bracket.includes(" in compose")) return [];
      const value = defaults[setting.path[0]]?.[setting.path[1]];
      return [{ env: setting.env, bracket, value: String(value) }];
    });
    expect(checked.length).toBeGreaterThanOrEqual(35);
    for (const { env, bracket, value } of checked)
      expect({ env, bracket }).toEqual({ env, bracket: value });
  });
});
