/**
 * The bounded waits of the tests, one of each: a condition polled until it holds, and a promise
 * that must settle. Each has its own deadline and fails naming what did not happen, never
 * running into jest's timeout. They wait for events and counts, never for a guessed time.
 */
import { setTimeout as sleep } from "node:timers/promises";

/**
 * Polls `condition` every `intervalMs` (default 5) until it holds; throws (naming `what`) after
 * `timeoutMs` or after `timeoutMs / intervalMs + 1` polls, whichever comes first. `stopIf` ends
 * the wait early (returns false) when it holds, e.g. a child process that exited.
 */
export async function waitUntil(
  condition: () => boolean,
  what: string,
  options: { timeoutMs: number; intervalMs?: number; stopIf?: () => boolean },
): Promise<boolean> {
  const intervalMs = options.intervalMs ?? 5;
  const deadline = Date.now() + options.timeoutMs;
  const maxPolls = Math.ceil(options.timeoutMs / intervalMs) + 1;
  for (let poll = 0; poll < maxPolls && Date.now() <= deadline; poll++) {
    if (condition()) return true;
    if (options.stopIf?.()) return false;
    await sleep(intervalMs);
  }
  if (condition()) return true;
  throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${what}`);
}

/**
 * `promise`, or a rejection naming `what` once `ms` have passed (a generous bound on a wait that
 * must end, never a measured duration).
 */
export async function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
