import { PerformanceObserver } from "node:perf_hooks";
import v8 from "node:v8";

/**
 * The semi-space V8's young generation may grow to, in MB (V8's default on 64 bits: 16). Young
 * objects die in it; a larger one promotes fewer of them but is resident as a whole (2 x 16 MB
 * of a 1,000-device tick's RSS); 2 MB (the old `--max-semi-space-size=2`) promoted so much that a
 * point cost 60 % more CPU. 8: see docs/benchmarks.md.
 */
export const SEMI_SPACE_MB = 8;

/**
 * How far the old generation may grow past what survived a full collection before the next one,
 * in percent: 100 is twice the live heap. V8's own factor goes up to 4x on a machine with memory
 * to spare, which a steady 1,000-device tick filled with garbage it had promoted (its old space
 * grew from ~30 MB live to ~90 before a collection).
 */
export const OLD_SPACE_GROWTH_PERCENT = 100;

/** V8's new space now (both semi-spaces), in bytes. */
function newSpaceBytes(): number {
  const space = v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space");
  return space?.space_size ?? 0;
}

/** The node flags the process started with (its command line and NODE_OPTIONS). */
function startFlags(): string[] {
  return [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)];
}

/** What {@link limitHeapGrowth} applied. */
export interface HeapGrowth {
  /** The young generation's cap (false: sized at start by a node flag). */
  readonly young: boolean;
  /** The old generation's growth factor (false: set at start by a node flag). */
  readonly old: boolean;
}

/**
 * Bounds V8's heap by energy-etl's own code, however node was started: the young generation at
 * {@link SEMI_SPACE_MB} per semi-space, the old generation's growth at
 * {@link OLD_SPACE_GROWTH_PERCENT}. V8 takes `--max-semi-space-size` only at start (a flag before
 * the script, or NODE_OPTIONS), which neither `node dist/cli.js` nor `npm run demo` pass; but it
 * reads its growth factors whenever it grows a space. So the young generation's factor is set to
 * reach the cap in one step and, once the new space has grown to it (told by the garbage
 * collection after), to 1: it grows no more. What a node flag at start sized is left alone.
 */
export function limitHeapGrowth(
  flags: readonly string[] = startFlags(),
  setFlags: (flags: string) => void = (f) => v8.setFlagsFromString(f),
  semiSpaceMb: number = SEMI_SPACE_MB,
): HeapGrowth {
  const given = (pattern: RegExp): boolean => flags.some((flag) => pattern.test(flag));
  const old = !given(/^--heap-growing-percent/);
  if (old) setFlags(`--heap-growing-percent=${OLD_SPACE_GROWTH_PERCENT}`);
  const young = !given(/^--(max-semi-space-size|semi-space-growth-factor|max-heap-size)/);
  if (young) capYoungGeneration(semiSpaceMb, setFlags);
  return { young, old };
}

/** The young generation's cap (see {@link limitHeapGrowth}). */
function capYoungGeneration(semiSpaceMb: number, setFlags: (flags: string) => void): void {
  const capBytes = 2 * semiSpaceMb * 2 ** 20;
  const reached = (): boolean => {
    if (newSpaceBytes() < capBytes) return false;
    setFlags("--semi-space-growth-factor=1");
    return true;
  };
  if (reached()) return;
  // from the semi-space now (V8 starts at 1 MB) to the cap in one growth step
  const semiNowMb = Math.max(1, newSpaceBytes() / 2 / 2 ** 20);
  setFlags(`--semi-space-growth-factor=${Math.max(2, Math.floor(semiSpaceMb / semiNowMb))}`);
  const gcs = new PerformanceObserver(() => {
    if (reached()) gcs.disconnect();
  });
  gcs.observe({ entryTypes: ["gc"] });
}
