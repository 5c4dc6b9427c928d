/**
 * Config and env files as the user names them (issue 40, item 4): read only when they are
 * regular files, within a size and a depth cap, a UTF-8 byte order mark accepted, UTF-16 and
 * bytes that are not UTF-8 refused saying how to save the file. The built CLI as a child process
 * (`config`, which reads both and prints the result), in a temp dir without a .env of its own.
 * Every wait is bounded: a file that hangs the reader fails the test instead of hanging it.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MAX_ENV_FILE_BYTES } from "../../src/cli/env-file.js";
import { MAX_CONFIG_DEPTH, MAX_CONFIG_FILE_BYTES } from "../../src/config/load.js";
import { killCliChildren, spawnCli } from "../support/cli-child.js";
import { tempDir } from "../support/temp-dir.js";

const URL_SET = "http://from-the-file.example:8080";
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
/** The settings a child would otherwise inherit from the test's own environment: unset. */
const NO_ENV = { ENERGY_API_URL: "", LOG_LEVEL: "warn" };

let dir: string;
beforeEach(() => {
  dir = tempDir("energy-etl-input-files-");
});
afterEach(async () => {
  await killCliChildren();
});

/** `energy-etl config ARGS` in `dir`: its exit code and output. */
async function config(args: string[]) {
  const cli = spawnCli(["config", ...args], NO_ENV, { cwd: dir });
  const { code } = await cli.wait(15_000, `energy-etl config ${args.join(" ")}`);
  return { code, out: cli.stdout(), err: cli.stderr() };
}

/** The API URL the effective configuration holds. */
const apiUrl = (out: string): unknown => (JSON.parse(out) as { api: { url: unknown } }).api.url;

describe("--config FILE", () => {
  it.each([
    ["/dev/zero", "a character device"],
    ["/dev/urandom", "a character device"],
  ])("%s is refused at once as %s", async (path, kind) => {
    const done = await config(["--config", path]);
    expect(done.err).toContain(`config file ${path}: is ${kind}, not a file`);
    expect(done.code).toBe(2);
  });

  it("a FIFO is refused without waiting for a writer", async () => {
    const fifo = join(dir, "config.json");
    execFileSync("mkfifo", [fifo]);
    const done = await config(["--config", fifo]);
    expect(done.err).toContain(`config file ${fifo}: is a FIFO (named pipe), not a file`);
    expect(done.code).toBe(2);
  });

  it("a directory is refused as one", async () => {
    const sub = join(dir, "conf.d");
    mkdirSync(sub);
    const done = await config(["--config", sub]);
    expect(done.err).toContain(`config file ${sub}: is a directory, not a file`);
    expect(done.code).toBe(2);
  });

  it("a file over the size cap is refused before it is read", async () => {
    const big = join(dir, "big.json");
    writeFileSync(big, `{${" ".repeat(MAX_CONFIG_FILE_BYTES)}}`);
    const done = await config(["--config", big]);
    expect(done.err).toContain(
      `config file ${big}: is larger than ${MAX_CONFIG_FILE_BYTES} bytes, more than such a file may be`,
    );
    expect(done.code).toBe(2);
  });

  it("100,000 levels deep is refused by the depth cap, not a stack overflow", async () => {
    const deep = join(dir, "deep.json");
    const levels = 100_000;
    writeFileSync(deep, `{"api":${"[".repeat(levels)}${"]".repeat(levels)}}`);
    const done = await config(["--config", deep]);
    expect(done.err).toContain(
      `config file ${deep}: nests more than ${MAX_CONFIG_DEPTH} levels deep (a config file has 3)`,
    );
    expect(done.code).toBe(2);
  });

  it("brackets inside strings do not count toward the depth", async () => {
    const file = join(dir, "brackets.json");
    const name = `${"[{".repeat(MAX_CONFIG_DEPTH)}\\"`;
    writeFileSync(file, `{"api":{"url":"${URL_SET}"},"x_note":{"n":"${name}"}}`);
    const done = await config(["--config", file]);
    // past the depth check: the unknown section is what is refused
    expect(done.err).toMatch(/unknown setting x_note \(/);
  });

  it("a UTF-8 byte order mark is accepted", async () => {
    const file = join(dir, "bom.json");
    writeFileSync(file, Buffer.concat([BOM, Buffer.from(`{"api":{"url":"${URL_SET}"}}`)]));
    const done = await config(["--config", file]);
    expect(done.err).not.toContain("\uFEFF");
    expect(done.code).toBe(0);
    expect(apiUrl(done.out)).toBe(URL_SET);
  });

  it("UTF-16 is refused, saying how to save it", async () => {
    const file = join(dir, "utf16.json");
    const text = `{"api":{"url":"${URL_SET}"}}`;
    writeFileSync(file, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, "utf16le")]));
    const done = await config(["--config", file]);
    expect(done.err).toContain(
      `config file ${file}: is UTF-16 (it starts with a UTF-16 byte order mark): save it as UTF-8`,
    );
    expect(done.code).toBe(2);
  });
});

describe("the env file", () => {
  it("a UTF-8 byte order mark is accepted: its first variable counts", async () => {
    writeFileSync(
      join(dir, ".env"),
      Buffer.concat([BOM, Buffer.from(`ENERGY_API_URL=${URL_SET}\n`)]),
    );
    const done = await config([]);
    expect(done.code).toBe(0);
    expect(apiUrl(done.out)).toBe(URL_SET);
  });

  it.each([
    ["little", Buffer.from([0xff, 0xfe]), "utf16le" as const],
    ["big", Buffer.from([0xfe, 0xff]), "utf16be" as const],
  ])("UTF-16 (%s endian) is refused, not silently ignored", async (_endian, mark, encoding) => {
    const text = Buffer.from(`ENERGY_API_URL=${URL_SET}\n`, "utf16le");
    if (encoding === "utf16be") text.swap16();
    writeFileSync(join(dir, ".env"), Buffer.concat([mark, text]));
    const done = await config([]);
    expect(done.err).toContain(
      ".env file ./.env: is UTF-16 (it starts with a UTF-16 byte order mark): save it as UTF-8",
    );
    expect(done.code).toBe(2);
  });

  it("UTF-16 without a mark, and bytes that are not UTF-8, are refused", async () => {
    writeFileSync(join(dir, ".env"), Buffer.from(`ENERGY_API_URL=${URL_SET}\n`, "utf16le"));
    const nul = await config([]);
    expect(nul.err).toContain(".env file ./.env: holds NUL bytes (UTF-16 or a binary file?)");
    expect(nul.code).toBe(2);

    // Latin-1: a password's "é" would reach the API as U+FFFD
    writeFileSync(join(dir, ".env"), Buffer.from("ENERGY_API_PASSWORD=caf\xe9\n", "latin1"));
    const latin1 = await config([]);
    expect(latin1.err).toContain(".env file ./.env: is not UTF-8 text: save it as UTF-8");
    expect(latin1.code).toBe(2);
  });

  it("--env-path naming a FIFO or a device, or a file over the cap, is refused at once", async () => {
    const fifo = join(dir, "env.fifo");
    execFileSync("mkfifo", [fifo]);
    const big = join(dir, "big.env");
    writeFileSync(big, `# ${"x".repeat(MAX_ENV_FILE_BYTES)}\n`);
    for (const [path, problem] of [
      [fifo, "is a FIFO (named pipe), not a file"],
      ["/dev/zero", "is a character device, not a file"],
      [big, `is larger than ${MAX_ENV_FILE_BYTES} bytes`],
    ] as const) {
      const done = await config(["--env-path", path]);
      expect(done.err).toContain(`.env file ${path}: ${problem}`);
      expect(done.code).toBe(2);
    }
  });
});

describe("docs/configuration.md", () => {
  it("quotes the caps the code has", () => {
    const page = readFileSync("docs/configuration.md", "utf8").replace(/\s+/g, " ");
    expect(page).toContain(`at most ${MAX_ENV_FILE_BYTES} bytes`);
    expect(page).toContain(`the config file ${MAX_CONFIG_FILE_BYTES} (`);
    expect(page).toContain(`nested at most ${MAX_CONFIG_DEPTH} levels deep`);
  });
});
