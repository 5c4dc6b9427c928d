/**
 * Helpers of the reliability suite (test/reliability/): a seeded random source, and child
 * processes whose exit is tracked and waited for within a bound (the waits: test/support/wait.ts).
 */
import type { ChildProcess } from "node:child_process";
import { withDeadline } from "./wait.js";

/** A seeded pseudo-random source (mulberry32): the same seed gives the same sequence. */
export function seededRandom(seed: number): {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max] (inclusive). */
  int(min: number, max: number): number;
  /** One of the items. */
  pick<T>(items: readonly T[]): T;
} {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number): number => min + Math.floor(next() * (max - min + 1));
  const pick = <T>(items: readonly T[]): T => {
    const item = items[int(0, items.length - 1)];
    if (item === undefined) throw new Error("pick from an empty list");
    return item;
  };
  return { next, int, pick };
}

/** How a child process ended. */
export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** Tracks a child's exit from the moment it is spawned (no exit event can be missed). */
export function trackExit(child: ChildProcess): {
  readonly exited: () => boolean;
  /** The exit; after `ms` the child is SIGKILLed and the wait fails, naming `what`. */
  readonly wait: (ms: number, what: string) => Promise<ChildExit>;
} {
  let exit: ChildExit | undefined;
  const done = new Promise<ChildExit>((resolve) => {
    child.once("exit", (code, signal) => {
      exit = { code, signal };
      resolve(exit);
    });
  });
  return {
    exited: () => exit !== undefined,
    wait: async (ms, what) => {
      try {
        return await withDeadline(done, ms, what);
      } catch (error) {
        if (exit === undefined) child.kill("SIGKILL");
        throw error;
      }
    },
  };
}

/** Collects a stream's text (a child's stdout or stderr). */
export function collect(stream: NodeJS.ReadableStream | null): () => string {
  let text = "";
  stream?.on("data", (chunk: Buffer) => {
    text += chunk.toString("utf8");
  });
  return () => text;
}
