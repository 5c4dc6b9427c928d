import { constants, PerformanceObserver } from "node:perf_hooks";
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

/**
 * The size the old generation may reach before its next mark-compact while mark-compacts come in
 * a burst, in MB (see {@link OldGenerationGrowth}): a 14-day backfill's 50-odd mark-compacts fell
 * to 7-8, its peak RSS rose by ~5 MB (as a fixed floor, 32 MB left ~30, 40 MB ~12, 48 MB 4-5).
 */
export const OLD_SPACE_FLOOR_MB = 48;

/** V8's new space now (both semi-spaces), in bytes. */
function newSpaceBytes(): number {
  const space = v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space");
  return space?.space_size ?? 0;
}

/** The node flags the process started with (its command line and NODE_OPTIONS). */
function startFlags(): string[] {
  return [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)];
}

/** V8's old generation now (every space but the young generation's and read-only), in bytes. */
function oldGenerationBytes(): number {
  let bytes = 0;
  for (const { space_name: name, space_used_size: used } of v8.getHeapSpaceStatistics()) {
    if (!name.startsWith("new_") && name !== "read_only_space") bytes += used;
  }
  return bytes;
}

/** What {@link limitHeapGrowth} aims at (tests make it small or slow). */
export interface HeapGrowthOptions {
  /** See {@link SEMI_SPACE_MB}. */
  readonly semiSpaceMb?: number;
  /** See {@link BURST_MS}. */
  readonly burstMs?: number;
}

/** What {@link limitHeapGrowth} applied. */
export interface HeapGrowth {
  /** The young generation's cap (false: sized at start by a node flag). */
  readonly young: boolean;
  /** The old generation's growth factor (false: set at start by a node flag). */
  readonly old: boolean;
  /** Stops watching the garbage collections (the flags set so far stay). */
  stop(): void;
}

/**
 * Bounds V8's heap by energy-etl's own code, however node was started: the young generation at
 * {@link SEMI_SPACE_MB} per semi-space, the old generation's growth at
 * {@link OLD_SPACE_GROWTH_PERCENT}, up to {@link OLD_SPACE_FLOOR_MB} for a while after a burst
 * of mark-compacts ({@link OldGenerationGrowth}). V8 takes `--max-semi-space-size` only at start
 * (a flag before the script, or NODE_OPTIONS), which neither `node dist/cli.js` nor
 * `npm run demo` pass; but it reads its growth factors whenever it grows a space
 * ({@link YoungGenerationCap}). What a node flag at start sized (`-` or `_` in its name) is left
 * alone.
 */
export function limitHeapGrowth(
  flags: readonly string[] = startFlags(),
  setFlags: (flags: string) => void = (f) => v8.setFlagsFromString(f),
  { semiSpaceMb = SEMI_SPACE_MB, burstMs = BURST_MS }: HeapGrowthOptions = {},
): HeapGrowth {
  const names = flags.map((flag) => flag.replaceAll("_", "-"));
  const given = (pattern: RegExp): boolean => names.some((flag) => pattern.test(flag));
  const old = !given(/^--heap-growing-percent/);
  const growth = old
    ? new OldGenerationGrowth(OLD_SPACE_FLOOR_MB * 2 ** 20, setFlags, burstMs)
    : undefined;
  const young = !given(
    /^--(max-semi-space-size|min-semi-space-size|semi-space-growth-factor|max-heap-size)/,
  );
  let cap = young ? new YoungGenerationCap(2 * semiSpaceMb * 2 ** 20, setFlags) : undefined;
  if (cap && !cap.observe(newSpaceBytes())) cap = undefined;
  let stop = (): void => undefined;
  if (growth || cap) {
    const gcs = new PerformanceObserver((entries) => {
      if (cap && !cap.observe(newSpaceBytes())) cap = undefined;
      for (const entry of entries.getEntries()) {
        if (growth && "detail" in entry && isMajor(entry.detail)) {
          growth.observe(entry.startTime, oldGenerationBytes());
        }
      }
      if (!growth && !cap) gcs.disconnect();
    });
    gcs.observe({ entryTypes: ["gc"] });
    stop = () => gcs.disconnect();
  }
  return { young, old, stop };
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

/** True for the detail of a mark-compact's performance entry. */
function isMajor(detail: unknown): boolean {
  return (
    typeof detail === "object" &&
    detail !== null &&
    "kind" in detail &&
    detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR
  );
}

/**
 * Sets the old generation's growth after each mark-compact, told when it started and the old
 * generation's size after it: {@link OLD_SPACE_GROWTH_PERCENT} of that size; but after a burst of
 * mark-compacts ({@link BURST_COUNT} within {@link BURST_MS}), for {@link RAISED_MS}, as much as
 * takes that size to the floor (at most {@link MAX_GROWTH_PERCENT}). V8 reads the percent when it
 * sets the next limit, during a mark-compact, and this is told after one: a percent applies from
 * the mark-compact after, to the size that one leaves (a heap that grew meanwhile may pass the
 * floor once; it gets 100 % again once it lives past half the floor), and the raise outlasts
 * {@link RAISED_MS} by one mark-compact. A backfill longer than that makes a short burst again
 * every {@link RAISED_MS}. V8 counts the ArrayBuffers allocated since its last mark-compact
 * against the old generation's room: where answers' bytes arrive fast (a backfill, ~140 a point)
 * and the live heap is small (~14 MB), the room filled with them in ~0.1 s and full collections
 * followed each other, each freeing little: a fifth of a backfill's CPU. Steady ticks, whose
 * mark-compacts are seconds apart, keep the growth at {@link OLD_SPACE_GROWTH_PERCENT} and their
 * memory as it was.
 */
export class OldGenerationGrowth {
  private percent: number | undefined;
  /** When the last mark-compacts started (at most {@link BURST_COUNT}), in ms. */
  private readonly starts: number[] = [];
  private raisedUntilMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly floorBytes: number,
    private readonly setFlags: (flags: string) => void,
    private readonly burstMs = BURST_MS,
  ) {
    this.set(OLD_SPACE_GROWTH_PERCENT);
  }

  /** A mark-compact that started at `startMs` left the old generation at `liveBytes`. */
  observe(startMs: number, liveBytes: number): void {
    this.starts.push(startMs);
    if (this.starts.length > BURST_COUNT) this.starts.shift();
    const first = this.starts[0] ?? startMs;
    if (this.starts.length === BURST_COUNT && startMs - first <= this.burstMs) {
      this.raisedUntilMs = startMs + RAISED_MS;
    }
    if (startMs >= this.raisedUntilMs) {
      this.set(OLD_SPACE_GROWTH_PERCENT);
      return;
    }
    const toFloor = Math.ceil((this.floorBytes / Math.max(liveBytes, 1) - 1) * 100);
    this.set(Math.min(MAX_GROWTH_PERCENT, Math.max(OLD_SPACE_GROWTH_PERCENT, toFloor)));
  }

  private set(percent: number): void {
    if (percent === this.percent) return;
    this.percent = percent;
    this.setFlags(`--heap-growing-percent=${percent}`);
  }
}

/** Mark-compacts within {@link BURST_MS} that make a burst. */
export const BURST_COUNT = 4;
/** See {@link BURST_COUNT}. */
export const BURST_MS = 1000;
/** How long the growth stays raised after a burst, in ms. */
export const RAISED_MS = 30_000;
/** The most growth {@link OldGenerationGrowth} sets, in percent (V8's own highest is 300). */
export const MAX_GROWTH_PERCENT = 300;

/** V8's own growth factor of the new space. */
const DEFAULT_GROWTH_FACTOR = 2;
/** V8's first semi-space (64-bit), which a new space of 1 MB (one half committed) has too. */
const MIN_SEMI_SPACE_BYTES = 2 ** 20;
