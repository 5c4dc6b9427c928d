import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EnvFile } from "../../../src/cli/env-file.js";
import {
  checkTarget,
  envValuesOf,
  renderEnvFile,
  writeEnvFile,
} from "../../../src/cli/init/write-env.js";
import { UsageError } from "../../../src/cli/io.js";

const INPUT = {
  apiUrl: "https://api.example.test/v1",
  apiKey: "key with space",
  user: "ops",
  password: "Pa55#word",
  otp: undefined,
};

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "energy-etl-write-env-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const fileIn = (name: string): EnvFile => ({ path: join(dir, name), label: name, explicit: true });

describe("renderEnvFile", () => {
  it("writes plain values as they are and quotes the others, in the file's order", () => {
    const values = envValuesOf(INPUT);
    const text = renderEnvFile(values, new Date("2026-01-02T03:04:05Z"));
    const lines = text.split("\n");
    expect(lines[0]).toBe(
      "# Written by `energy-etl init` on 2026-01-02T03:04:05.000Z. Holds secrets: keep it private",
    );
    expect(lines).toContain("ENERGY_API_URL=https://api.example.test/v1");
    expect(lines).toContain("ENERGY_API_KEY='key with space'");
    expect(lines).toContain("ENERGY_API_PASSWORD='Pa55#word'");
    const names = lines.flatMap((l) => /^([A-Z_]+)=/.exec(l)?.[1] ?? []);
    expect(names).toEqual(Object.keys(values));
    expect(lines.at(-2)).toBe(`GRAFANA_ADMIN_PASSWORD=${values.GRAFANA_ADMIN_PASSWORD}`);
    expect(lines.at(-1)).toBe("");
  });

  it("gives InfluxDB and Grafana fresh random secrets each time", () => {
    const [a, b] = [envValuesOf(INPUT), envValuesOf(INPUT)];
    for (const key of [
      "INFLUX_ADMIN_PASSWORD",
      "INFLUX_TOKEN",
      "GRAFANA_ADMIN_PASSWORD",
    ] as const) {
      expect(a[key]).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(a[key]).not.toBe(b[key]);
    }
  });
});

describe("writeEnvFile", () => {
  it("creates the file 0600, and refuses to overwrite it without force", () => {
    const file = fileIn(".env");
    writeEnvFile(file, "A=1\n", false);
    expect(readFileSync(file.path, "utf8")).toBe("A=1\n");
    expect(statSync(file.path).mode & 0o777).toBe(0o600);
    expect(() => writeEnvFile(file, "A=2\n", false)).toThrow(
      new UsageError(".env exists; use --force to replace it"),
    );
    expect(readFileSync(file.path, "utf8")).toBe("A=1\n");
  });

  it("with force replaces a file of any mode by a 0600 one, leaving nothing else", () => {
    const file = fileIn(".env");
    writeFileSync(file.path, "OLD=1\n", { mode: 0o644 });
    writeEnvFile(file, "NEW=1\n", true);
    expect(readFileSync(file.path, "utf8")).toBe("NEW=1\n");
    expect(statSync(file.path).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual([".env"]);
  });

  it("names the file and the errno when it cannot write, and leaves no temporary file", () => {
    const file = { ...fileIn("gone/.env"), label: "gone/.env" };
    expect(() => writeEnvFile(file, "A=1\n", false)).toThrow("cannot write gone/.env (ENOENT)");
    expect(() => writeEnvFile(file, "A=1\n", true)).toThrow("cannot write gone/.env (ENOENT)");
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe("checkTarget", () => {
  it("refuses an existing file without force and a missing directory", () => {
    const file = fileIn(".env");
    expect(() => checkTarget(file, false)).not.toThrow();
    writeFileSync(file.path, "");
    expect(() => checkTarget(file, false)).toThrow(".env exists; use --force to replace it");
    expect(() => checkTarget(file, true)).not.toThrow();
    expect(() => checkTarget(fileIn("gone/.env"), true)).toThrow(
      `cannot write gone/.env: the directory ${join(dir, "gone")} does not exist`,
    );
  });
});
