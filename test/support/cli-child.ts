/**
 * The built CLI (`node dist/cli.js …`) as a child process of a test: its output collected, its
 * exit tracked (with the moment it happened), bounded waits for log lines, and a registry so that
 * afterEach kills whatever a failed test left running. Nothing runs from a dist/ older than src/.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { NO_ENV_DIR } from "./cli-io.js";
import { type ChildExit, trackExit } from "./reliability-bounds.js";
import { waitUntil } from "./wait.js";

const SRC = resolve("src");
const DIST = resolve("dist");

/** The first file of src/ whose build in dist/ is missing or older than it, if any. */
function staleBuild(dir = SRC): string | undefined {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      const stale = staleBuild(path);
      if (stale !== undefined) return stale;
      continue;
    }
    if (!entry.name.endsWith(".ts") || entry.name.endsWith(".d.ts")) continue;
    const built = join(DIST, relative(SRC, path)).replace(/\.ts$/, ".js");
    if (!existsSync(built)) return `${relative(".", built)} is missing`;
    if (statSync(built).mtimeMs < statSync(path).mtimeMs) {
      return `${relative(".", path)} is newer than ${relative(".", built)}`;
    }
  }
  return undefined;
}

/**
 * The path of dist/cli.js, once dist/ is checked to be built from the src/ of now (every file
 * of src/ has its .js in dist/, none older than it): a child process runs what the test is about,
 * also under `npx jest` or `--watch`, which do not build (`npm test` does, in pretest). Throws
 * otherwise, saying what to run.
 */
export function builtCli(): string {
  const stale = staleBuild();
  if (stale !== undefined) {
    throw new Error(`dist/ is older than src/ (${stale}): run npm run build (npm test does it)`);
  }
  return join(DIST, "cli.js");
}

/** A running (or ended) CLI child. */
export interface CliChild {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly stdout: () => string;
  readonly stderr: () => string;
  readonly exited: () => boolean;
  /** performance.now() of its exit, once it exited. */
  readonly exitedAt: () => number | undefined;
  /** The exit; after `ms` the child is SIGKILLed and the wait fails, naming `what`. */
  wait(ms: number, what: string): Promise<ChildExit>;
  /** The JSON log lines on stderr (other lines are skipped). */
  logs(): Record<string, unknown>[];
  /** Log entries whose `msg` is `msg`. */
  logged(msg: string): Record<string, unknown>[];
  /**
   * Waits (bounded) for a log line with `msg` on stderr; fails with the child's output when it
   * exits first or the time is up.
   */
  waitForLog(msg: string, timeoutMs: number): Promise<Record<string, unknown>>;
  /** Waits (bounded) until stdout matches `pattern`; resolves with performance.now() of the match. */
  waitForStdout(pattern: RegExp, timeoutMs: number): Promise<number>;
}

const running = new Set<CliChild>();

/**
 * Starts `node dist/cli.js …args` with `env` added to this process's environment, in `cwd`
 * (default: a directory without a .env, so a developer's own ./.env never reaches a test).
 */
export function spawnCli(
  args: readonly string[],
  env: Record<string, string>,
  options: { readonly cwd?: string } = {},
): CliChild {
  const cli = builtCli();
  const child = spawn(process.execPath, [cli, ...args], {
    cwd: options.cwd ?? NO_ENV_DIR,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return trackCli(child, args);
}

/**
 * A CLI process started some other way (the image test runs it in the image's file system) as a
 * CliChild: `args` are the CLI's own arguments, for messages. stdout and stderr must be pipes.
 */
export function trackCli(child: ChildProcess, args: readonly string[]): CliChild {
  const exit = trackExit(child);
  let out = "";
  let err = "";
  let exitedAt: number | undefined;
  const stdoutMatches: { pattern: RegExp; at?: number }[] = [];
  child.stdout?.on("data", (chunk: Buffer) => {
    out += chunk.toString("utf8");
    const now = performance.now();
    for (const m of stdoutMatches) if (m.at === undefined && m.pattern.test(out)) m.at = now;
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    err += chunk.toString("utf8");
  });
  child.once("exit", () => {
    exitedAt = performance.now();
  });
  // the output is complete once the pipes closed (they may close after the exit event)
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const logs = (): Record<string, unknown>[] =>
    err.split("\n").flatMap((line) => {
      if (!line.startsWith("{")) return [];
      try {
        const parsed: unknown = JSON.parse(line);
        return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
          ? [parsed as Record<string, unknown>]
          : [];
      } catch {
        return [];
      }
    });
  const logged = (msg: string) => logs().filter((entry) => entry.msg === msg);
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${args.join(" ")}`);
  const handle: CliChild = {
    child,
    pid,
    stdout: () => out,
    stderr: () => err,
    exited: exit.exited,
    exitedAt: () => exitedAt,
    wait: async (ms, what) => {
      const ended = await exit.wait(ms, what);
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, 2_000);
      });
      await Promise.race([closed, bound]);
      clearTimeout(timer);
      return ended;
    },
    logs,
    logged,
    waitForLog: async (msg, timeoutMs) => {
      const seen = await waitUntil(() => logged(msg).length > 0, `log "${msg}" of ${args[0]}`, {
        timeoutMs,
        intervalMs: 20,
        stopIf: exit.exited,
      });
      const entry = logged(msg)[0];
      if (!seen || entry === undefined) {
        throw new Error(
          `${args.join(" ")} exited before logging "${msg}"\nstdout:\n${out}\nstderr:\n${err.slice(-4000)}`,
        );
      }
      return entry;
    },
    waitForStdout: async (pattern, timeoutMs) => {
      const match: { pattern: RegExp; at?: number } = { pattern };
      if (pattern.test(out)) match.at = performance.now();
      stdoutMatches.push(match);
      await waitUntil(() => match.at !== undefined, `stdout ${pattern} of ${args[0]}`, {
        timeoutMs,
        intervalMs: 20,
        stopIf: exit.exited,
      });
      // the last output may come with the exit
      if (match.at === undefined && pattern.test(out)) match.at = exitedAt ?? performance.now();
      if (match.at === undefined) {
        throw new Error(
          `${args.join(" ")} exited without printing ${pattern}\nstdout:\n${out}\nstderr:\n${err.slice(-4000)}`,
        );
      }
      return match.at;
    },
  };
  running.add(handle);
  child.once("exit", () => running.delete(handle));
  return handle;
}

/** SIGKILLs every CLI child still running and waits (bounded) for each to be gone; afterEach. */
export async function killCliChildren(): Promise<void> {
  const left = [...running];
  for (const c of left) c.child.kill("SIGKILL");
  await Promise.allSettled(left.map((c) => c.wait(5_000, `child ${c.pid} after SIGKILL`)));
}

/**
 * Sends `signal` and waits (bounded by `boundMs` + 5 s) for the exit; resolves with the exit and
 * the milliseconds from the signal to the exit.
 */
export async function signalAndMeasure(
  cli: CliChild,
  signal: NodeJS.Signals,
  boundMs: number,
): Promise<ChildExit & { elapsedMs: number }> {
  const sentAt = performance.now();
  cli.child.kill(signal);
  const exit = await cli.wait(boundMs + 5_000, `exit after ${signal}`);
  const elapsedMs = Math.round((cli.exitedAt() ?? performance.now()) - sentAt);
  return { ...exit, elapsedMs };
}
