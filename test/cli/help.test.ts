import { execFileSync } from "node:child_process";
import { builtCli } from "../support/cli-child.js";

describe("the built energy-etl binary", () => {
  let cli = "";
  beforeAll(() => {
    cli = builtCli();
  });
  const run = (...args: string[]) =>
    execFileSync(process.execPath, [cli, ...args], { encoding: "utf8", timeout: 15_000 });

  it("--help lists every command and the settings flags", () => {
    const help = run("--help");
    for (const command of [
      "set-password",
      "devices",
      "resources",
      "values",
      "sync",
      "backfill",
      "status",
      "run",
      "migrate",
      "decode",
      "config",
      "simulate",
      "doctor",
      "init",
      "dead-letters",
      "audit",
      "demo",
    ]) {
      expect(help).toContain(command);
    }
    expect(help).toContain("--api-url");
    expect(help).toContain("--config");
  });

  it.each([
    ["values", ["<device>", "[resource]", "--json"]],
    ["set-password", ["--user", "ENERGY_API_OTP", "ENERGY_API_PASSWORD"]],
    ["init", ["--api-url", "--user", "--force", "ENERGY_API_KEY", "ENERGY_API_OTP"]],
    ["simulate", ["--port", "--seed", "--rate-limit", "--error-rate", "--token-ttl"]],
    ["backfill", ["--device", "--all", "--from", "--to", "--values", "--dry-run", "--output"]],
    ["sync", ["--device", "--output"]],
    ["status", ["--json"]],
  ])("%s --help describes its arguments", (command, words) => {
    const help = run(command, "--help");
    for (const word of words) expect(help).toContain(word);
  });

  it.each([
    ["init", ["--api-key", "--password", "--otp"]],
    ["set-password", ["--otp", "--password"]],
  ])("%s --help offers no flag that takes a secret", (command, flags) => {
    const help = run(command, "--help");
    for (const flag of flags) expect(help).not.toContain(flag);
  });

  it("--help names --env-path, the env file every command reads", () => {
    expect(run("--help")).toMatch(/-f, --env-path <file>/);
  });
});
