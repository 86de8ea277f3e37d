// One process-wide cap on record bytes fetched from a source but not yet acknowledged by the
// destination (DESIGN §5.5, KIP review VK1). Copiers reserve before they fetch and release after
// the produce is acknowledged, so waking 10,000 partitions queues them instead of allocating
// 10,000 buffers. Back-pressure, not buffering.
import { KmirrorError } from '../domain/errors.ts';

export class ByteBudget {
  private used = 0;
  private peakUsed = 0;
  private readonly waiters: { bytes: number; resolve: () => void; reject: (err: unknown) => void; signal?: AbortSignal; onAbort?: () => void }[] = [];

  constructor(readonly capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity <= 0) throw new KmirrorError('INVALID_CONFIG', `byte budget must be a positive integer (got ${capacity})`);
  }

  get inUse(): number {
    return this.used;
  }

  /** Highest reservation seen. May exceed capacity by at most one grant (see acquire). */
  get peak(): number {
    return this.peakUsed;
  }

  /**
   * Wait until `bytes` fit, FIFO. A request larger than the whole budget is granted alone (when
   * nothing else is held), so one oversized batch cannot deadlock the process.
   */
  acquire(bytes: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.waiters.length === 0 && this.fits(bytes)) {
      this.grant(bytes);
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: (typeof this.waiters)[number] = { bytes, resolve, reject };
      if (signal) {
        waiter.signal = signal;
        waiter.onAbort = () => {
          const i = this.waiters.indexOf(waiter);
          if (i >= 0) this.waiters.splice(i, 1);
          reject(signal.reason);
          this.drain();
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.waiters.push(waiter);
    });
  }

  /** Grow a reservation without waiting (a fetch returned more than reserved: the broker always
   *  returns at least one whole batch). */
  force(bytes: number): void {
    this.grant(bytes);
  }

  release(bytes: number): void {
    if (bytes <= 0) return;
    this.used = Math.max(0, this.used - bytes);
    this.drain();
  }

  private fits(bytes: number): boolean {
    return this.used + bytes <= this.capacity || this.used === 0;
  }

  private grant(bytes: number): void {
    this.used += bytes;
    if (this.used > this.peakUsed) this.peakUsed = this.used;
  }

  private drain(): void {
    while (this.waiters.length > 0 && this.fits(this.waiters[0]!.bytes)) {
      const next = this.waiters.shift()!;
      if (next.signal && next.onAbort) next.signal.removeEventListener('abort', next.onAbort);
      this.grant(next.bytes);
      next.resolve();
    }
  }
}
