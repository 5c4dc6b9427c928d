/** A device's share of API_CONCURRENCY: all but one slot (one slow device never holds them all). */
export function deviceShare(concurrency: number): number {
  return Math.max(1, concurrency - 1);
}

/** At most `limit` tasks of one device at a time: one slow device never holds every slot. */
export class DeviceSlots {
  private readonly busy = new Map<string, number>();
  private readonly waiting = new Map<string, (() => void)[]>();

  constructor(readonly limit: number) {
    if (!Number.isSafeInteger(limit) || limit < 1) {
      throw new RangeError(`limit must be a positive integer, got ${limit}`);
    }
  }

  /** Runs `task` once the device has a free slot; the slot is given back when it settles. */
  async run<T>(deviceId: string, task: () => Promise<T>): Promise<T> {
    await this.take(deviceId);
    try {
      return await task();
    } finally {
      this.give(deviceId);
    }
  }

  private take(deviceId: string): Promise<void> {
    const busy = this.busy.get(deviceId) ?? 0;
    if (busy < this.limit) {
      this.busy.set(deviceId, busy + 1);
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const queue = this.waiting.get(deviceId) ?? [];
      queue.push(resolve);
      this.waiting.set(deviceId, queue);
    });
  }

  private give(deviceId: string): void {
    const next = this.waiting.get(deviceId)?.shift();
    if (next) {
      // the slot passes straight to the next waiter of the device
      next();
      return;
    }
    this.waiting.delete(deviceId);
    const busy = (this.busy.get(deviceId) ?? 1) - 1;
    if (busy <= 0) this.busy.delete(deviceId);
    else this.busy.set(deviceId, busy);
  }
}
