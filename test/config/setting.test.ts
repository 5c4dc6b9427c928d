import { z } from "zod";
import { meaningOf, plainText, setting, settingsOf } from "../../src/config/setting.js";
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
  const a = setting(z.string().default(""), { env: "A_ONE", flag: "--a-one", describe: "one" });
  const b = setting(z.string().default(""), { env: "A_TWO", secret: true, describe: "two" });

  it("reads every setting of every section in order, with its path and name", () => {
    const sections = {
      first: z.object({ one: a }).strict().prefault({}),
      second: z.object({ two: b }),
    };
    expect(settingsOf(sections)).toEqual([
      { env: "A_ONE", flag: "--a-one", describe: "one", path: ["first", "one"], name: "first.one" },
      { env: "A_TWO", secret: true, describe: "two", path: ["second", "two"], name: "second.two" },
    ]);
  });

  it("names a key made without setting(), and a section that is no object", () => {
    expect(() => settingsOf({ s: z.object({ one: a, bare: z.string() }) })).toThrow(
      "config setting s.bare: made without setting()",
    );
    expect(() => settingsOf({ s: z.string() })).toThrow("config section s: no object");
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
