import { z } from "zod";
import { meaningOf, plainText, setting, settingsOf } from "../../src/config/setting.js";
import type { SettingNames } from "../../src/config/setting-names.js";
import { configJsonSchema, SETTINGS } from "../../src/config.js";

describe("setting", () => {
  it("keeps what the schema accepts, with the plain meaning as its description", () => {
    const port = setting(z.coerce.number().int().default(80), {
      env: "TEST_PORT",
      flag: "--test-port",
      describe: "Port of `/healthz` (see [Ops](ops.md#port))",
    });
    expect(port.parse(undefined)).toBe(80);
    expect(port.parse("81")).toBe(81);
    expect(port.safeParse("x").success).toBe(false);
    expect(port.description).toBe("Port of /healthz (see Ops)");
  });

  it("marks a secret in its meaning", () => {
    expect(meaningOf({ env: "T", secret: true, describe: "A token" })).toBe("A token; secret");
    expect(meaningOf({ env: "T", describe: "A name" })).toBe("A name");
    expect(plainText("`a` [b](c.md) `d`")).toBe("a b d");
  });
});

describe("settingsOf", () => {
  const names = {
    first: { one: { env: "A_ONE", flag: "--a-one", describe: "one" } },
    second: { two: { env: "A_TWO", secret: true, describe: "two" } },
  } satisfies SettingNames;
  const a = setting(z.string().default(""), names.first.one);
  const b = setting(z.string().default(""), names.second.two);

  it("reads every setting of every section in order, with its path and name", () => {
    const sections = {
      first: z.object({ one: a }).strict().prefault({}),
      second: z.object({ two: b }),
    };
    expect(settingsOf(sections, names)).toEqual([
      { env: "A_ONE", flag: "--a-one", describe: "one", path: ["first", "one"], name: "first.one" },
      { env: "A_TWO", secret: true, describe: "two", path: ["second", "two"], name: "second.two" },
    ]);
  });

  it("names a key made without setting(), and a section that is no object", () => {
    const s = { one: names.first.one, bare: { env: "BARE", describe: "bare" } };
    expect(() => settingsOf({ s: z.object({ one: a, bare: z.string() }) }, { s })).toThrow(
      "config setting s.bare: made without setting()",
    );
    expect(() => settingsOf({ s: z.string() }, { s })).toThrow("config section s: no object");
  });

  // the names are plain data for --help (no zod): they and the schema cannot drift apart
  it("refuses a schema whose settings are not the ones the names name, in their order", () => {
    const first = z.object({ one: a });
    const second = z.object({ two: b });
    expect(() => settingsOf({ first: z.object({ one: b }), second }, names)).toThrow(
      "config setting first.one: made with the names of A_TWO",
    );
    expect(() => settingsOf({ first }, names)).toThrow(
      "the settings named (first.one, second.two) are not the schema's (first.one)",
    );
    expect(() => settingsOf({ second, first }, names)).toThrow(
      "the settings named (first.one, second.two) are not the schema's (second.two, first.one)",
    );
  });
});

describe("SETTINGS", () => {
  it("gives every setting a meaning, and the JSON Schema each one as its description", () => {
    const schema = configJsonSchema() as {
      properties: Record<string, { properties: Record<string, { description?: string }> }>;
    };
    for (const s of SETTINGS) {
      expect(s.describe.length).toBeGreaterThan(5);
      const [section, key] = s.path;
      expect(schema.properties[section]?.properties[key]?.description).toBe(
        plainText(meaningOf(s)),
      );
    }
  });
});
