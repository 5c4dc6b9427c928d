/**
 * The built CLI as a child process whose stdout is read by a reader that closes its end right
 * after the first line, as `| head -1` does (#35): each run's exit code, stderr and first line.
 */
import { spawn } from "node:child_process";

/** What one run left. */
export interface HeadOneRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderr: string;
  /** What the reader saw before it closed (the first line, maybe a little more). */
  readonly seen: string;
}

/** How a run ends beyond its own doing. */
export interface HeadOneOptions {
  /** Sent once the first line is read: a server (simulate) stops on it. */
  readonly signalAfterFirstLine?: NodeJS.Signals;
  /** A run still going after this is SIGKILLed (its signal says so); default 60 s. */
  readonly boundMs?: number;
}

/** Runs `node cli …args` once with `env` in `cwd`, its stdout closed after its first line. */
export function headOne(
  cli: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
  options: HeadOneOptions = {},
): Promise<HeadOneRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], {
      env,
      cwd,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    let seen = "";
    const bound = setTimeout(() => child.kill("SIGKILL"), options.boundMs ?? 60_000);
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    child.stdout.on("data", (d: Buffer) => {
      seen += d.toString();
      if (!seen.includes("\n") || child.stdout.destroyed) return;
      child.stdout.destroy();
      if (options.signalAfterFirstLine) child.kill(options.signalAfterFirstLine);
    });
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(bound);
      resolve({ code, signal, stderr, seen });
    });
  });
}

/** `runs` calls of `one(i)`, `parallel` at a time; the results in order. */
export async function inBatches<T>(
  runs: number,
  parallel: number,
  one: (i: number) => Promise<T>,
): Promise<T[]> {
  const results: T[] = [];
  for (let start = 0; start < runs; start += parallel) {
    const batch = Array.from({ length: Math.min(parallel, runs - start) }, (_, k) =>
      one(start + k),
    );
    results.push(...(await Promise.all(batch)));
  }
  return results;
}

/** Whether stderr holds what an unhandled error prints (a stack frame, EPIPE, "Unhandled"). */
export const looksLikeStackTrace = (stderr: string): boolean =>
  /\n\s+at |EPIPE|Unhandled/.test(stderr);
