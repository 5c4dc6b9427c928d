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
 * reads its growth factors whenever it grows a space ({@link YoungGenerationCap}). What a node
 * flag at start sized (`-` or `_` in its name) is left alone.
 */
export function limitHeapGrowth(
  flags: readonly string[] = startFlags(),
  setFlags: (flags: string) => void = (f) => v8.setFlagsFromString(f),
  semiSpaceMb: number = SEMI_SPACE_MB,
): HeapGrowth {
  const names = flags.map((flag) => flag.replaceAll("_", "-"));
  const given = (pattern: RegExp): boolean => names.some((flag) => pattern.test(flag));
  const old = !given(/^--heap-growing-percent/);
  if (old) setFlags(`--heap-growing-percent=${OLD_SPACE_GROWTH_PERCENT}`);
  const young = !given(
    /^--(max-semi-space-size|min-semi-space-size|semi-space-growth-factor|max-heap-size)/,
  );
  if (young) {
    const cap = new YoungGenerationCap(2 * semiSpaceMb * 2 ** 20, setFlags);
    if (cap.observe(newSpaceBytes())) {
      const gcs = new PerformanceObserver(() => {
        if (!cap.observe(newSpaceBytes())) gcs.disconnect();
      });
      gcs.observe({ entryTypes: ["gc"] });
    }
  }
  return { young, old };
}

/**
 * Holds V8's new space at a cap through its growth factor, told the new space's size after every
 * garbage collection: below the cap, a factor that reaches it in one growth step; at the cap, 1
 * (it grows no more). V8 shrinks an idle process's new space (its memory reducer), so the factor
 * goes up again when the size falls. A new space found past the cap means this V8 does not take a
 * factor of 1 (newer ones hold it at 2 at least): the cap is given up, V8's own factor restored.
 */
export class YoungGenerationCap {
  private factor: number | undefined;

  constructor(
    private readonly capBytes: number,
    private readonly setFlags: (flags: string) => void,
  ) {}

  /** The new space's size now; false once the cap is given up (nothing more to observe). */
  observe(newSpaceBytes: number): boolean {
    if (newSpaceBytes > this.capBytes) {
      if (this.factor !== undefined) this.set(DEFAULT_GROWTH_FACTOR);
      return false;
    }
    // growth multiplies a semi-space; V8's first is 1 MB, committed one half at a time
    const semiBytes = Math.max(MIN_SEMI_SPACE_BYTES, newSpaceBytes / 2);
    const factor =
      newSpaceBytes >= this.capBytes ? 1 : Math.max(2, Math.floor(this.capBytes / 2 / semiBytes));
    if (factor !== this.factor) this.set(factor);
    return true;
  }

  private set(factor: number): void {
    this.factor = factor;
    this.setFlags(`--semi-space-growth-factor=${factor}`);
  }
}

/** V8's own growth factor of the new space. */
const DEFAULT_GROWTH_FACTOR = 2;
/** V8's first semi-space (64-bit), which a new space of 1 MB (one half committed) has too. */
const MIN_SEMI_SPACE_BYTES = 2 ** 20;
