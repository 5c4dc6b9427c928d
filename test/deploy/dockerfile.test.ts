import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { HealthServer } from "../../src/service/health-server.js";

/** One Dockerfile instruction, continuation lines joined. */
interface Instruction {
  readonly keyword: string;
  readonly args: string;
}

/** The instructions of a Dockerfile: comments dropped, `\` continuations joined. */
function parseDockerfile(text: string): Instruction[] {
  const logical = text
    .split("\n")
    .filter((line) => !line.trimStart().startsWith("#"))
    .join("\n")
    .replace(/\\\n/g, " ");
  return logical
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .map((line) => {
      const [keyword = "", ...rest] = line.split(/\s+/);
      return { keyword: keyword.toUpperCase(), args: rest.join(" ") };
    });
}

/** The instructions split into stages, each starting with its FROM. */
function stagesOf(instructions: readonly Instruction[]): Instruction[][] {
  const stages: Instruction[][] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === "FROM") stages.push([]);
    stages.at(-1)?.push(instruction);
  }
  return stages;
}

const args = (stage: readonly Instruction[], keyword: string): string[] =>
  stage.filter((i) => i.keyword === keyword).map((i) => i.args);

/** The exec form (JSON array) of an instruction's arguments. */
function execForm(text: string | undefined): string[] {
  const parsed: unknown = JSON.parse(text ?? "null");
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === "string")) {
    throw new Error(`not an exec-form array: ${text}`);
  }
  return parsed;
}

/** Runs `node -e script` as Docker's health check would; resolves with its exit code. */
function runHealthCheck(script: string, httpPort: number): Promise<number> {
  return new Promise((done) => {
    const env = { ...process.env, HTTP_PORT: String(httpPort) };
    execFile(process.execPath, ["-e", script], { env, timeout: 10_000 }, (error) => {
      done(error ? Number(error.code ?? 1) : 0);
    });
  });
}

const dockerfile = parseDockerfile(readFileSync("Dockerfile", "utf8"));
const stages = stagesOf(dockerfile);
const build = stages[0] ?? [];
const runtime = stages.at(-1) ?? [];
const buildName = /\bAS\s+(\S+)/i.exec(build[0]?.args ?? "")?.[1] ?? "";

describe("Dockerfile", () => {
  it("is multi-stage on one exact Node 24 LTS release of bookworm-slim", () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const bases = stages.map((stage) => stage[0]?.args.split(/\s+/)[0] ?? "");
    for (const base of bases) expect(base).toMatch(/^node:24\.\d+\.\d+-bookworm-slim$/);
    expect(new Set(bases).size).toBe(1);
    expect(buildName).not.toBe("");
  });

  it("declares an engines range that Node 24 and this machine's Node satisfy", () => {
    const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { engines?: { node?: string } };
    const floor = Number(/^>=(\d+)/.exec(pkg.engines?.node ?? "")?.[1]);
    expect(floor).toBeLessThanOrEqual(Number(process.versions.node.split(".")[0]));
    expect(floor).toBeLessThanOrEqual(24);
  });

  it("builds with the tools better-sqlite3 needs, then prunes the devDependencies", () => {
    const runs = args(build, "RUN").join(" && ");
    expect(runs).toMatch(/apt-get install[^&]*\bpython3\b/);
    expect(runs).toMatch(/apt-get install[^&]*\bmake\b/);
    expect(runs).toMatch(/apt-get install[^&]*\bg\+\+/);
    const ci = runs.indexOf("npm ci");
    const compile = runs.indexOf("npm run build");
    const prune = runs.search(/npm prune --omit=dev|npm ci [^&]*--omit=dev/);
    expect(ci).toBeGreaterThanOrEqual(0);
    expect(compile).toBeGreaterThan(ci);
    expect(prune).toBeGreaterThan(compile);
  });

  it("copies no devDependencies, compilers or sources into the runtime stage", () => {
    const runs = args(runtime, "RUN").join(" && ");
    expect(runs).not.toMatch(/npm (ci|install)(?![^&]*--omit=dev)/);
    expect(runs).not.toMatch(/\bg\+\+|\bmake\b|python3/);
    const copies = args(runtime, "COPY");
    const fromBuild = copies.filter((c) => c.includes(`--from=${buildName}`));
    expect(fromBuild.map((c) => c.split(/\s+/)[1]).sort()).toEqual(
      ["/app/dist", "/app/node_modules"].sort(),
    );
    const fromContext = copies
      .filter((c) => !c.startsWith("--from="))
      .flatMap((c) =>
        c
          .split(/\s+/)
          .filter((a) => !a.startsWith("--"))
          .slice(0, -1),
      );
    expect(fromContext.sort()).toEqual(["config", "migrations", "package.json"].sort());
  });

  it("copies only files that exist and that .dockerignore lets through", () => {
    const ignored = readFileSync(".dockerignore", "utf8")
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line !== "" && !line.startsWith("#"));
    const sources = stages
      .flatMap((stage) => args(stage, "COPY"))
      .filter((c) => !c.startsWith("--from="))
      .flatMap((c) =>
        c
          .split(/\s+/)
          .filter((a) => !a.startsWith("--"))
          .slice(0, -1),
      );
    expect(sources.filter((s) => !existsSync(s))).toEqual([]);
    expect(sources.filter((s) => ignored.includes(s))).toEqual([]);
    expect(ignored).toEqual(
      expect.arrayContaining(["node_modules", "dist", "data", ".git", "coverage", ".env"]),
    );
  });

  it("runs as the non-root user energy (uid 10001)", () => {
    const runs = args(runtime, "RUN").join(" && ");
    expect(runs).toMatch(/useradd [^&]*--uid 10001\b[^&]* energy\b/);
    const users = args(runtime, "USER");
    expect(users.length).toBeGreaterThan(0);
    expect(users.at(-1)).toBe("energy");
    const keywords = runtime.map((i) => i.keyword);
    expect(keywords.lastIndexOf("USER")).toBeGreaterThan(keywords.lastIndexOf("RUN"));
  });

  it("keeps the state on the /data volume and serves health on 8080", () => {
    expect(args(runtime, "VOLUME")).toContain("/data");
    const env = args(runtime, "ENV").join(" ");
    expect(env).toMatch(/\bSTATE_DB=\/data\/state\.db\b/);
    expect(env).toMatch(/\bNODE_ENV=production\b/);
    expect(env).toMatch(/\bHTTP_PORT=8080\b/);
    // node's flags are dist/cli.js's first line's, in the ENTRYPOINT: not a second set here
    expect(env).not.toMatch(/\bNODE_OPTIONS=/);
    expect(args(runtime, "EXPOSE")).toEqual(["8080"]);
    // The volume is created from the image's /data, so its owner is the service's user.
    expect(args(runtime, "RUN").join(" ")).toMatch(/chown [^&]*energy[^&]* \/data\b/);
  });

  it("starts the service as the CLI's first line does (node and the flags it takes at start), CMD run", () => {
    const shebang = readFileSync("src/cli.ts", "utf8").split("\n")[0] ?? "";
    const flags = shebang.split(/\s+/).filter((word) => word.startsWith("--"));
    expect(shebang).toBe(
      `#!/usr/bin/env ${flags.length > 0 ? "-S " : ""}${["node", ...flags].join(" ")}`,
    );
    expect(execForm(args(runtime, "ENTRYPOINT").at(-1))).toEqual(["node", ...flags, "dist/cli.js"]);
    expect(execForm(args(runtime, "CMD").at(-1))).toEqual(["run"]);
  });

  describe("HEALTHCHECK", () => {
    const [healthcheck] = args(runtime, "HEALTHCHECK");
    const command = execForm(/\bCMD\s+(\[.*\])$/.exec(healthcheck ?? "")?.[1]);
    const script = command[2] ?? "";

    it("asks readiness (/readyz), not only liveness, on HTTP_PORT with node itself", () => {
      expect(command.slice(0, 2)).toEqual(["node", "-e"]);
      expect(script).toContain("/readyz");
      expect(script).toContain("process.env.HTTP_PORT");
    });

    it("passes when /readyz answers 200 and fails on not ready, an error or no answer", async () => {
      let status = 200;
      const server = new HealthServer({
        "/healthz": async () => ({ status: 200, body: JSON.stringify({ status: "ok" }) }),
        "/readyz": async () => ({ status, body: JSON.stringify({ status: "ready" }) }),
      });
      const port = await server.listen(0, "127.0.0.1");
      try {
        expect(await runHealthCheck(script, port)).toBe(0);
        status = 503;
        expect(await runHealthCheck(script, port)).toBe(1);
      } finally {
        await server.close();
      }
      expect(await runHealthCheck(script, port)).toBe(1);
    });
  });
});
