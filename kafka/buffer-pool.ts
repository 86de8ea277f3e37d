// Large buffers used again instead of left to the garbage collector: fetch answers (read in place
// by kafka/socket.ts) and produce requests (encoded by kafka/protocol.ts).
//
// Why: V8 starts a full mark-compact whenever the memory held outside its heap has grown by about
// 64 MiB since the last one. A copier allocates every byte it moves twice (the fetch answer, the
// produce request), so at large batches it ran ~45 full collections per GiB copied; their
// concurrent marking and the freeing and faulting-in of the blocks cost more CPU than the copy
// itself (docs/benchmarks.md, "Reading in place, buffers used again").
//
// Contract: take() hands out a buffer no one else holds. give() returns one whose holder — and
// everything that holds a view into it — will never read or write it again; giving back a buffer
// still in use would let the next take() overwrite data that is about to be copied, so a holder
// that is not sure lets the buffer go to the garbage collector instead (never giving it is always
// safe). Only blocks this pool made are kept: give() ignores any other buffer (a small Buffer
// shares Node's slab with others), a block given twice, and blocks past the pool's limit.
export class BufferPool {
  private readonly made = new WeakSet<ArrayBuffer>();
  private readonly free: ArrayBuffer[] = [];
  private freeBytes = 0;
  readonly stats = { made: 0, reused: 0 };

  /**
   * @param minBytes    smaller requests are plain allocations (Node pools them itself)
   * @param maxFreeBytes most bytes kept between uses; blocks given back beyond it are dropped
   */
  constructor(
    readonly minBytes: number,
    readonly maxFreeBytes: number,
  ) {}

  /** `size` bytes, not initialised. A free block is used when it is large enough and at most twice
   *  the size (a small answer does not pin a large block); else a new one, rounded up to 64 KiB. */
  take(size: number): Buffer {
    if (size < this.minBytes) return Buffer.allocUnsafe(size);
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const length = this.free[i]!.byteLength;
      if (length >= size && length <= size * 2 && (best < 0 || length < this.free[best]!.byteLength)) best = i;
    }
    if (best >= 0) {
      const [block] = this.free.splice(best, 1);
      this.freeBytes -= block!.byteLength;
      this.stats.reused++;
      return Buffer.from(block!, 0, size);
    }
    const block = Buffer.allocUnsafeSlow(Math.ceil(size / BLOCK_ROUNDING) * BLOCK_ROUNDING).buffer as ArrayBuffer;
    this.made.add(block);
    this.stats.made++;
    return Buffer.from(block, 0, size);
  }

  /** True when `block` (a buffer's `.buffer`) is one of this pool's: give() would keep it. */
  owns(block: ArrayBufferLike): boolean {
    return this.made.has(block as ArrayBuffer);
  }

  /** Return `block`, the `.buffer` of a buffer from take() (see the contract above). */
  give(block: ArrayBufferLike): void {
    if (!this.owns(block) || this.free.includes(block as ArrayBuffer)) return;
    if (this.freeBytes + block.byteLength > this.maxFreeBytes) return;
    this.free.push(block as ArrayBuffer);
    this.freeBytes += block.byteLength;
  }
}

const BLOCK_ROUNDING = 64 * 1024;

/** The process's pool for fetch answers and produce requests: from 256 KiB (smaller ones are
 *  cheap), keeping at most 96 MiB free — a copier's default byte budget is 64 MiB of answers, plus
 *  its produce requests in flight. */
export const largeBuffers = new BufferPool(256 * 1024, 96 * 2 ** 20);
