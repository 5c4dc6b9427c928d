export interface EachResult<R> {
  /** In the items' order; undefined where the item was not started or its task failed. */
  readonly results: (R | undefined)[];
  /** The first task's rejection, when one rejected: no item started after it. */
  readonly failure?: { readonly error: unknown };
}

/**
 * Runs `task` for each item, at most `limit` at a time, starting them in order; resolves once every
 * started task settled. Unlike a queue given every item up front, it holds no promise or closure
 * per waiting item. No item starts once a task rejected or `stop()` returns true.
 */
export async function eachAtMost<T, R>(
  items: readonly T[],
  limit: number,
  task: (item: T) => Promise<R>,
  stop: () => boolean = () => false,
): Promise<EachResult<R>> {
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new RangeError(`limit must be a positive integer, got ${limit}`);
  }
  const results: (R | undefined)[] = new Array<R | undefined>(items.length).fill(undefined);
  let failure: { error: unknown } | undefined;
  const entries = items.entries();
  const worker = async (): Promise<void> => {
    while (failure === undefined && !stop()) {
      const step = entries.next();
      if (step.done) return;
      const [index, item] = step.value;
      try {
        results[index] = await task(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  const workers = Math.min(limit, items.length);
  await Promise.all(Array.from({ length: workers }, worker));
  return failure === undefined ? { results } : { results, failure };
}
