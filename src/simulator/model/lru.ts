/** A small least-recently-used cache with a weight budget (1 per entry unless told otherwise). */
export class LruCache<K, V> {
  private readonly entries = new Map<K, V>();
  private weight = 0;

  constructor(
    readonly capacity: number,
    private readonly weigh: (value: V) => number = () => 1,
  ) {}

  /** Entries held. */
  get size(): number {
    return this.entries.size;
  }

  /** The value of `key`, now the most recently used; undefined when not held. */
  get(key: K): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  /** Holds `value` under `key`, dropping the least recently used entries past the budget (never the newest). */
  set(key: K, value: V): void {
    const old = this.entries.get(key);
    if (old !== undefined) {
      this.entries.delete(key);
      this.weight -= this.weigh(old);
    }
    this.entries.set(key, value);
    this.weight += this.weigh(value);
    while (this.weight > this.capacity && this.entries.size > 1) {
      const oldest = this.entries.entries().next();
      if (oldest.done === true) break;
      this.entries.delete(oldest.value[0]);
      this.weight -= this.weigh(oldest.value[1]);
    }
  }
}
