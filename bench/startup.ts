import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { CLI, median } from "./harness.js";
import type { Row } from "./points.js";

/** The start-up goal of #41: RSS and wall time of `--version` and `--help`, each over `node -e 0`. */
const GOAL = 1.5;

/** `energy-etl` as the kernel runs it: the interpreter of dist/cli.js's first line, its rest as one argument. */
function asInstalled(): string[] {
  const line = readFileSync(CLI, "utf8").split("\n")[0] ?? "";
  const [interpreter = "", rest = ""] = line.slice(2).split(/ (.*)/s);
  return rest === "" ? [interpreter, CLI] : [interpreter, rest, CLI];
}

/** The children's environment: node (for `env -S node`) is the one running the bench. */
const ENV = {
  ...process.env,
  NODE_OPTIONS: "",
  PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}`,
};

/** Wall time of one run in ms, spawn to exit. */
function wallMs(command: readonly string[]): number {
  const started = performance.now();
  const run = spawnSync(command[0] ?? "", command.slice(1), { stdio: "ignore", env: ENV });
  const ms = performance.now() - started;
  if (run.status !== 0) throw new Error(`start-up bench: ${command.join(" ")}: exit ${run.status}`);
  return ms;
}

/**
 * Peak RSS of one run in MB, as /usr/bin/time reads it (getrusage of its child: a small parent,
 * so the child's high-water mark starts near nothing, not at the bench's RSS).
 */
function rssMb(command: readonly string[], file: string): number {
  const run = spawnSync("/usr/bin/time", ["-f", "%M", "-o", file, ...command], {
    stdio: "ignore",
    env: ENV,
  });
  if (run.status !== 0)
    throw new Error(`start-up bench: /usr/bin/time ${command.join(" ")}: ${run.status}`);
  const kb = Number(readFileSync(file, "utf8").trim().split("\n").at(-1));
  if (!Number.isFinite(kb) || kb <= 0)
    throw new Error(`start-up bench: no RSS for ${command.join(" ")}`);
  return kb / 1024;
}

interface Figures {
  readonly wallMs: number;
  readonly rssMb: number;
}

/**
 * `--version` and `--help` as `energy-etl` (through its first line) and as `node dist/cli.js`,
 * beside `node -e 0`: runs interleaved round by round (the order turning each round), the
 * median of each; a row per way and flag, its ratio the larger of RSS's and wall time's.
 */
export function benchStartup(quick: boolean): Row[] {
  const rounds = quick ? 5 : 15;
  const ways: readonly (readonly [string, readonly string[]])[] = [
    ["node -e 0", [process.execPath, "-e", "0"]],
    ["energy-etl --version", [...asInstalled(), "--version"]],
    ["energy-etl --help", [...asInstalled(), "--help"]],
    ["node dist/cli.js --version", [process.execPath, CLI, "--version"]],
    ["node dist/cli.js --help", [process.execPath, CLI, "--help"]],
  ];
  const dir = mkdtempSync(join(tmpdir(), "bench-startup-"));
  const taken = ways.map(() => ({ wall: [] as number[], rss: [] as number[] }));
  try {
    for (let round = 0; round < rounds; round++) {
      for (let k = 0; k < ways.length; k++) {
        const i = (round + k) % ways.length;
        const command = ways[i]?.[1] ?? [];
        taken[i]?.wall.push(wallMs(command));
        taken[i]?.rss.push(rssMb(command, join(dir, "rss")));
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const figures: Figures[] = taken.map(({ wall, rss }) => ({
    wallMs: median(wall),
    rssMb: median(rss),
  }));
  const [base = { wallMs: 0, rssMb: 0 }, ...runs] = figures;
  return runs.map((run, i): Row => {
    const rss = run.rssMb / base.rssMb;
    const wall = run.wallMs / base.wallMs;
    return {
      bench: `Start-up: \`${ways[i + 1]?.[0]}\`, peak RSS and wall time (median of ${rounds}, interleaved with \`node -e 0\`)`,
      measured: `${run.rssMb.toFixed(1)} MB (${rss.toFixed(2)} x), ${run.wallMs.toFixed(0)} ms (${wall.toFixed(2)} x)`,
      baseline: `${base.rssMb.toFixed(1)} MB, ${base.wallMs.toFixed(0)} ms (node -e 0)`,
      ratio: Math.max(rss, wall),
      goal: `<= ${GOAL} x both`,
      met: rss <= GOAL && wall <= GOAL,
    };
  });
}
