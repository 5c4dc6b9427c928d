import { configJsonSchema, describeConfig } from "./describe.js";
import { configSchema, SETTINGS } from "./schema.js";
import { meaningOf } from "./setting.js";

/** The line before the generated table in docs/configuration.md. */
export const TABLE_START =
  "<!-- Generated from src/config/schema.ts by `npm run docs:config`: edit the schema, not this. -->";
export const TABLE_END = "<!-- End of the generated table. -->";

const jsonText = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

/** config/default.json: every setting at its default, in the config file's shape. */
export function defaultConfigText(): string {
  return jsonText({ $schema: "./schema.json", ...describeConfig(configSchema.parse({})) });
}

/** One Markdown table row; an empty cell stays empty, `|` inside a cell is escaped. */
const row = (cells: readonly string[]): string =>
  `|${cells.map((c) => (c === "" ? " " : ` ${c.replaceAll("|", "\\|")} `)).join("|")}|`;

const code = (text: string): string => (text === "" ? "" : `\`${text}\``);

/** The "Every setting" table of docs/configuration.md: one row per setting, in schema order. */
export function settingsTable(): string {
  const defaults = describeConfig(configSchema.parse({}));
  const lines = SETTINGS.map((setting) => {
    const [section, key] = setting.path;
    const value = defaults[section]?.[key];
    const shown = typeof value === "string" ? value : JSON.stringify(value);
    return row([
      code(setting.env),
      code(setting.name),
      code(setting.flag ?? ""),
      code(shown),
      meaningOf(setting),
    ]);
  });
  return [
    row(["Environment", "Config file", "Flag", "Default", "Meaning"]),
    "|---|---|---|---|---|",
    ...lines,
  ].join("\n");
}

/** `markdown` with the lines between {@link TABLE_START} and {@link TABLE_END} regenerated. */
export function withSettingsTable(markdown: string): string {
  const start = markdown.indexOf(`${TABLE_START}\n`);
  const end = markdown.indexOf(`\n${TABLE_END}`, start);
  if (start < 0 || end < 0) {
    throw new Error(`no generated table: the lines ${TABLE_START} and ${TABLE_END} are missing`);
  }
  const before = markdown.slice(0, start + TABLE_START.length + 1);
  return `${before}${settingsTable()}${markdown.slice(end)}`;
}

/** Files derived from the schema (`render`: old text to new); `npm run docs:config` writes them. */
export const CONFIG_ARTEFACTS: readonly { path: string; render: (text: string) => string }[] = [
  { path: "config/default.json", render: defaultConfigText },
  { path: "config/schema.json", render: () => jsonText(configJsonSchema()) },
  { path: "docs/configuration.md", render: withSettingsTable },
];
