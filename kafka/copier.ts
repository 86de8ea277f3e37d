// The offset-preserving copier: kmirror's data plane (DESIGN §5). It copies some partitions of
// one topic from the source cluster to the same-named topic on the destination so that a record
// at source offset o lands at destination offset o.
//
// Contracts (each has an integration test in test/kafka/copier.int.test.ts):
//  1. Offsets equal. Every produce response's base offset is compared with the offset the batch
//     had on the source; a mismatch halts that partition with OFFSET_DIVERGENCE and the evidence.
//  2. Alignment. A destination partition that ends below the source's log start is advanced to it
//     with filler records, then DeleteRecords moves its log start there, so both logs start at s.
//  3. Gaps. An offset the source log skips (transaction marker, aborted data, compaction) halts the
//     partition with UNSUPPORTED_OFFSET_GAP naming the offset; data before the gap is copied.
//  4. Resume. The destination's end offset is the checkpoint: every start, and every recovery from
//     a produce error, re-reads it and continues from there with a fresh producer id.
//  5. One writer. Nothing is produced unless the lease is held (lease.validUntil() in the future);
//     a failed renewal stops production at once.
//  6. Bounded memory. Bytes are reserved from the shared budget before a fetch and released when
//     the destination has acknowledged them.
//  7. Fidelity. Source batches are copied as bytes (only producer id/epoch/sequence and the CRC
//     change), so keys, values, headers, timestamps and compression are kept. A batch is re-encoded
//     only when the destination already holds its head, or when it carries LogAppendTime.
//  8. Cancellation. On abort the copier stops fetching, waits for its in-flight produce to be
//     acknowledged, and returns each partition's next offset (= last mirrored offset + 1).
import { setTimeout as sleep } from 'node:timers/promises';
import { KmirrorError, isKmirrorError } from '../domain/errors.ts';
import type { ByteBudget } from './budget.ts';
import type { PartitionLease } from './lease.ts';
import { AbortedTransactions, IsolationLevel, type FetchedPartition, type ProducedPartition, type RawCluster } from './protocol.ts';
import { decodeRecords, encodeBatch, isContiguous, nextSequence, restampBatch, type RawBatch } from './wire.ts';

export interface CopyOptions {
  /** Upper bound of one fetch response (reserved from the budget before fetching). */
  readonly fetchMaxBytes: number;
  readonly partitionMaxBytes: number;
  readonly fetchMaxWaitMs: number;
  /** Broker-side produce timeout; the lease grace must exceed it (kafka/lease.ts). */
  readonly produceTimeoutMs: number;
  /** Produce requests in flight per destination leader (≤ 5: the broker's idempotence window). */
  readonly maxInFlight: number;
  /** Records per alignment filler batch. */
  readonly fillerBatchRecords: number;
  /** Give up (CLUSTER_UNREACHABLE) after this long without one successful round. */
  readonly unreachableAfterMs: number;
}

export const defaultCopyOptions: CopyOptions = Object.freeze({
  fetchMaxBytes: 8 * 1024 * 1024,
  partitionMaxBytes: 1024 * 1024,
  fetchMaxWaitMs: 500,
  produceTimeoutMs: 10_000,
  maxInFlight: 5,
  fillerBatchRecords: 50_000,
  unreachableAfterMs: 60_000,
});

export interface PartitionProgress {
  readonly partition: number;
  /** Next offset to copy = destination end = last mirrored offset + 1. */
  readonly nextOffset: bigint;
  /** Source last stable offset as of the latest fetch (what read_committed can copy). */
  readonly sourceEnd: bigint;
  readonly status: PartitionStatus;
}

export type PartitionStatus = 'copying' | 'caught-up' | 'stopped' | 'failed';

export interface PartitionOutcome extends PartitionProgress {
  /** Source leader epoch of the last copied batch, when one was copied in this run. */
  readonly lastLeaderEpoch?: number;
  readonly error?: KmirrorError;
}

export interface CopyStats {
  batches: number;
  records: number;
  bytes: number;
  reencodedBatches: number;
  fillerRecords: number;
  fillMs: number;
  resyncs: number;
}

export interface CopyResult {
  readonly partitions: readonly PartitionOutcome[];
  readonly stats: Readonly<CopyStats>;
  /** Set when the copy stopped because the lease was lost. */
  readonly leaseLost?: KmirrorError;
}

export interface CopyRequest {
  readonly source: RawCluster;
  readonly destination: RawCluster;
  /** Same name on both clusters (mirror topics keep their name). */
  readonly topic: string;
  readonly partitions: readonly number[];
  readonly budget: ByteBudget;
  readonly lease: PartitionLease;
  readonly signal: AbortSignal;
  /** Stop each partition once it has copied everything committed at the time it is checked. */
  readonly untilCaughtUp?: boolean;
  readonly onProgress?: (progress: readonly PartitionProgress[], stats: Readonly<CopyStats>) => void;
  readonly options?: Partial<CopyOptions>;
}

interface PartitionState {
  readonly partition: number;
  next: bigint;
  sourceEnd: bigint;
  status: PartitionStatus;
  lastLeaderEpoch?: number;
  error?: KmirrorError;
}

/** One batch to produce and where the source says it must land. */
interface ProduceItem {
  readonly state: PartitionState;
  readonly expectedBase: bigint;
  readonly nextAfter: bigint;
  readonly records: number;
  /** Size of the batch as fetched (re-encoded: as decoded), for the byte count. */
  readonly bytes: number;
  readonly leaderEpoch: number;
  /** Unstamped source bytes or an encoder: stamped with the sequence at send time. */
  readonly stamp: (s: { producerId: bigint; producerEpoch: number; baseSequence: number }) => Buffer | Buffer[];
}

/** Plan for one partition out of one fetch: what to produce, and why it stops, if it does. */
interface PartitionPlan {
  readonly items: ProduceItem[];
  readonly halt?: KmirrorError;
}

/** Thrown inside a round to make the copier re-read the destination and start a fresh producer. */
class Resync extends Error {
  override readonly name = 'Resync';
}

const RESYNC_ERRORS = new Set([
  'OUT_OF_ORDER_SEQUENCE_NUMBER',
  'UNKNOWN_PRODUCER_ID',
  'INVALID_PRODUCER_EPOCH',
  'DUPLICATE_SEQUENCE_NUMBER',
  'NOT_LEADER_OR_FOLLOWER',
  'NOT_LEADER_FOR_PARTITION',
  'LEADER_NOT_AVAILABLE',
  'NOT_ENOUGH_REPLICAS',
  'NOT_ENOUGH_REPLICAS_AFTER_APPEND',
  'REQUEST_TIMED_OUT',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'KAFKA_STORAGE_ERROR',
  'FENCED_LEADER_EPOCH',
]);

export async function copy(request: CopyRequest): Promise<CopyResult> {
  return new Copier(request).run();
}

class Copier {
  private readonly options: CopyOptions;
  private readonly states: PartitionState[];
  private readonly stats: CopyStats = { batches: 0, records: 0, bytes: 0, reencodedBatches: 0, fillerRecords: 0, fillMs: 0, resyncs: 0 };
  private producer = { producerId: -1n, producerEpoch: 0 };
  private readonly sequences = new Map<number, number>();
  /** Aborted when the caller aborts or the lease is lost: stops fetching, not in-flight acks. */
  private readonly stop = new AbortController();
  private leaseLost?: KmirrorError;
  private lastSuccess = Date.now();

  constructor(private readonly req: CopyRequest) {
    this.options = { ...defaultCopyOptions, ...req.options };
    if (this.options.maxInFlight < 1 || this.options.maxInFlight > 5) {
      throw new KmirrorError('INVALID_CONFIG', `maxInFlight must be 1..5 (the broker's idempotence window), got ${this.options.maxInFlight}`);
    }
    this.states = [...new Set(req.partitions)].sort((a, b) => a - b).map((partition) => ({ partition, next: 0n, sourceEnd: 0n, status: 'copying' as const }));
  }

  async run(): Promise<CopyResult> {
    const onAbort = (): void => this.stop.abort(this.req.signal.reason);
    this.req.signal.addEventListener('abort', onAbort, { once: true });
    try {
      await this.req.lease.acquire(this.req.signal);
    } catch (err) {
      this.req.signal.removeEventListener('abort', onAbort);
      if (this.req.signal.aborted) return this.result('stopped');
      throw err;
    }
    const renewal = this.renewLoop();
    try {
      let needResync = true;
      while (!this.stop.signal.aborted && this.active().length > 0) {
        try {
          if (needResync) {
            await this.resync();
            needResync = false;
          }
          await this.copyRound();
          this.lastSuccess = Date.now();
        } catch (err) {
          if (this.stop.signal.aborted) break;
          if (isKmirrorError(err, 'LEASE_LOST')) {
            this.leaseLost = err;
            break;
          }
          if (!(err instanceof Resync) && !isRetriable(err)) throw err;
          if (Date.now() - this.lastSuccess > this.options.unreachableAfterMs) {
            throw new KmirrorError('CLUSTER_UNREACHABLE', `no progress copying ${this.req.topic} for ${this.options.unreachableAfterMs} ms: ${(err as Error).message}`, { topic: this.req.topic }, { cause: err });
          }
          await sleep(200);
          needResync = true;
        }
      }
    } finally {
      this.req.signal.removeEventListener('abort', onAbort);
      this.stop.abort();
      await renewal;
      if (!this.leaseLost) await this.req.lease.release().catch(() => undefined);
    }
    return this.result('stopped');
  }

  private result(finalStatus: PartitionStatus): CopyResult {
    return {
      partitions: this.states.map((s) => ({
        partition: s.partition,
        nextOffset: s.next,
        sourceEnd: s.sourceEnd,
        status: s.status === 'copying' ? finalStatus : s.status,
        ...(s.lastLeaderEpoch !== undefined ? { lastLeaderEpoch: s.lastLeaderEpoch } : {}),
        ...(s.error ? { error: s.error } : {}),
      })),
      stats: { ...this.stats },
      ...(this.leaseLost ? { leaseLost: this.leaseLost } : {}),
    };
  }

  private active(): PartitionState[] {
    return this.states.filter((s) => s.status === 'copying');
  }

  private async renewLoop(): Promise<void> {
    const { lease } = this.req;
    while (!this.stop.signal.aborted) {
      try {
        await sleep(lease.renewEveryMs, undefined, { signal: this.stop.signal });
      } catch {
        return;
      }
      try {
        await lease.renew();
      } catch (err) {
        if (isKmirrorError(err, 'LEASE_LOST')) {
          this.leaseLost = err;
          this.stop.abort(err);
          return;
        }
        // Postgres unreachable: keep trying; production stops by itself at validUntil().
      }
    }
  }

  private assertLease(): void {
    if (this.leaseLost) throw this.leaseLost;
    if (Date.now() >= this.req.lease.validUntil()) {
      throw new KmirrorError('LEASE_LOST', `lease ${this.req.lease.description} expired before it could be renewed; not producing`);
    }
  }

  private fail(state: PartitionState, error: KmirrorError): void {
    state.status = 'failed';
    state.error = error;
  }

  /**
   * Re-read where the destination ends (the checkpoint), take a fresh producer id, and align
   * partitions that end below the source's log start.
   */
  private async resync(): Promise<void> {
    this.stats.resyncs++;
    const active = this.active();
    if (active.length === 0) return;
    const ps = active.map((s) => s.partition);
    const { source, destination, topic } = this.req;
    const [destEnd, srcStart, srcEnd, srcHighWatermark] = await Promise.all([
      stableEnd(destination, topic, ps),
      source.listOffsets(topic, ps, 'earliest'),
      source.listOffsets(topic, ps, 'latest', IsolationLevel.READ_COMMITTED),
      source.listOffsets(topic, ps, 'latest'),
    ]);
    this.producer = await destination.initProducerId();
    this.sequences.clear();
    const toAlign: PartitionState[] = [];
    for (const state of active) {
      const end = destEnd.get(state.partition)!;
      const start = srcStart.get(state.partition)!;
      state.next = end;
      state.sourceEnd = srcEnd.get(state.partition)!;
      const highWatermark = srcHighWatermark.get(state.partition)!;
      if (end > highWatermark) {
        this.fail(
          state,
          new KmirrorError('OFFSET_DIVERGENCE', `destination ${topic}-${state.partition} ends at ${end}, beyond the source's end ${highWatermark}: it holds data the source does not`, {
            topic,
            partition: state.partition,
            destinationEnd: end.toString(),
            sourceEnd: highWatermark.toString(),
          }),
        );
      } else if (end < start) {
        toAlign.push(state);
      }
    }
    if (toAlign.length > 0) await this.align(toAlign, srcStart);
    this.report();
  }

  /** Fill [destination end, source log start) with fillers, then DeleteRecords(source log start). */
  private async align(states: PartitionState[], srcStart: ReadonlyMap<number, bigint>): Promise<void> {
    const started = Date.now();
    const { destination, topic } = this.req;
    const filler = { timestamp: BigInt(Date.now()), key: null, value: null, headers: [] };
    for (const state of states) {
      const target = srcStart.get(state.partition)!;
      const items: ProduceItem[] = [];
      for (let at = state.next; at < target; ) {
        const count = Number(target - at < BigInt(this.options.fillerBatchRecords) ? target - at : BigInt(this.options.fillerBatchRecords));
        const records = Array.from({ length: count }, () => filler);
        items.push({ state, expectedBase: at, nextAfter: at + BigInt(count), records: count, bytes: 0, leaderEpoch: -1, stamp: (s) => encodeBatch(records, s) });
        at += BigInt(count);
      }
      for (const item of items) {
        await this.produceRounds([[item]]);
        if (state.status !== 'copying') return;
        this.stats.fillerRecords += item.records;
      }
      // The fillers were only a way to reach offset s; they are never visible to consumers.
      await destination.deleteRecords(topic, new Map([[state.partition, target]]));
    }
    this.stats.fillMs += Date.now() - started;
  }

  /** One fetch per source leader, then its batches produced, checked and counted. */
  private async copyRound(): Promise<void> {
    const { source, topic } = this.req;
    const byLeader = new Map<number, PartitionState[]>();
    for (const state of this.active()) {
      const leader = await source.leaderOf(topic, state.partition);
      byLeader.set(leader, [...(byLeader.get(leader) ?? []), state]);
    }
    await Promise.all([...byLeader].map(([leader, states]) => this.copyFromLeader(leader, states)));
    this.report();
  }

  private async copyFromLeader(leader: number, states: PartitionState[]): Promise<void> {
    const { source, topic, budget } = this.req;
    const reserve = Math.min(this.options.fetchMaxBytes, states.length * this.options.partitionMaxBytes);
    await budget.acquire(reserve, this.stop.signal);
    let held = reserve;
    try {
      const fetched = await source.fetch({
        leader,
        topic,
        partitions: states.map((s) => ({ partition: s.partition, fetchOffset: s.next, maxBytes: this.options.partitionMaxBytes })),
        maxWaitMs: this.options.fetchMaxWaitMs,
        maxBytes: this.options.fetchMaxBytes,
        isolationLevel: IsolationLevel.READ_COMMITTED,
      });
      const actual = fetched.reduce((n, p) => n + p.bytes, 0);
      if (actual > held) budget.force(actual - held);
      else budget.release(held - actual);
      held = actual;
      const plans: { state: PartitionState; plan: PartitionPlan }[] = [];
      let refetch = false;
      for (const p of fetched) {
        const state = states.find((s) => s.partition === p.partition);
        if (!state) continue;
        if (p.error) {
          if (p.error.type === 'OFFSET_OUT_OF_RANGE' || p.error.retriable) refetch = true;
          else this.fail(state, kafkaFailure(`fetch ${topic}-${p.partition}`, p.error.type, { topic, partition: p.partition }));
          continue;
        }
        state.sourceEnd = p.lastStableOffset;
        plans.push({ state, plan: this.plan(state, p) });
      }
      // Produce in rounds: the k-th batch of every partition together (one batch per partition
      // per request is the protocol's rule).
      const rounds: ProduceItem[][] = [];
      for (const { plan } of plans) plan.items.forEach((item, k) => (rounds[k] ??= []).push(item));
      await this.produceRounds(rounds);
      for (const { state, plan } of plans) {
        if (state.status !== 'copying') continue;
        if (plan.halt) this.fail(state, plan.halt);
        else if (this.req.untilCaughtUp && state.next >= state.sourceEnd) state.status = 'caught-up';
      }
      if (refetch) throw new Resync('source moved (leader change or log start beyond our offset)');
    } finally {
      budget.release(held);
    }
  }

  /** Turn one partition's fetched batches into produce items, stopping at the first gap. */
  private plan(state: PartitionState, fetched: FetchedPartition): PartitionPlan {
    const { topic } = this.req;
    const items: ProduceItem[] = [];
    const aborted = new AbortedTransactions(fetched.abortedTransactions);
    let next = state.next;
    const gap = (offset: bigint, why: string): PartitionPlan => ({
      items,
      halt: new KmirrorError(
        'UNSUPPORTED_OFFSET_GAP',
        `source ${topic}-${state.partition} skips offset ${offset} (${why}); kmirror cannot fill offset gaps yet, so the partition is halted rather than shifting offsets`,
        { topic, partition: state.partition, offset: offset.toString(), reason: why },
      ),
    });
    for (const batch of fetched.batches) {
      if (batch.lastOffset < next) continue;
      if (batch.isControl) return gap(batch.baseOffset, 'transaction marker');
      if (batch.isTransactional && aborted.isAborted(batch)) return gap(batch.baseOffset > next ? next : batch.baseOffset, 'aborted transaction');
      if (batch.baseOffset > next) return gap(next, 'records removed by compaction');
      if (!isContiguous(batch)) {
        const present = new Set(decodeRecords(batch).map((r) => r.offset));
        let missing = next;
        while (present.has(missing)) missing++;
        return gap(missing, 'records removed by compaction');
      }
      if (batch.baseOffset < next || batch.logAppendTime) {
        items.push(...this.reencode(state, batch, next));
      } else {
        items.push({
          state,
          expectedBase: batch.baseOffset,
          nextAfter: batch.lastOffset + 1n,
          records: batch.recordsCount,
          bytes: batch.bytes.length,
          leaderEpoch: batch.leaderEpoch,
          stamp: (s) => restampBatch(batch, s),
        });
      }
      next = batch.lastOffset + 1n;
    }
    return { items };
  }

  /** The records of `batch` from offset `from` on, as fresh uncompressed batches of ≤ 512 KiB. */
  private reencode(state: PartitionState, batch: RawBatch, from: bigint): ProduceItem[] {
    const records = decodeRecords(batch).filter((r) => r.offset >= from);
    const chunks: { records: typeof records; bytes: number }[] = [];
    for (const r of records) {
      const bytes = (r.key?.length ?? 0) + (r.value?.length ?? 0) + r.headers.reduce((n, h) => n + h.key.length + (h.value?.length ?? 0), 0) + 32;
      if (chunks.length === 0 || chunks[chunks.length - 1]!.bytes + bytes > 512 * 1024) chunks.push({ records: [], bytes: 0 });
      const chunk = chunks[chunks.length - 1]!;
      chunk.records.push(r);
      chunk.bytes += bytes;
    }
    this.stats.reencodedBatches += chunks.length;
    return chunks.map(({ records: chunk, bytes }) => ({
      state,
      expectedBase: chunk[0]!.offset,
      nextAfter: chunk[chunk.length - 1]!.offset + 1n,
      records: chunk.length,
      bytes,
      leaderEpoch: batch.leaderEpoch,
      stamp: (s) => encodeBatch(chunk, s),
    }));
  }

  /**
   * Send rounds of produce items, up to maxInFlight requests per destination leader, in order.
   * Each acknowledged batch is checked against the offset it must land at.
   */
  private async produceRounds(rounds: ProduceItem[][]): Promise<void> {
    const { destination, topic } = this.req;
    const inFlight: Promise<void>[] = [];
    let resync: Resync | undefined;
    for (const round of rounds) {
      const live = round.filter((item) => item.state.status === 'copying');
      if (live.length === 0 || resync) continue;
      this.assertLease();
      const byLeader = new Map<number, ProduceItem[]>();
      for (const item of live) {
        const leader = await destination.leaderOf(topic, item.state.partition);
        byLeader.set(leader, [...(byLeader.get(leader) ?? []), item]);
      }
      for (const [leader, items] of byLeader) {
        const batches = items.map((item) => {
          const baseSequence = this.sequences.get(item.state.partition) ?? 0;
          this.sequences.set(item.state.partition, nextSequence(baseSequence, item.records));
          return { partition: item.state.partition, batch: item.stamp({ ...this.producer, baseSequence }) };
        });
        const sent = destination
          .produce({ leader, topic, partitions: batches, timeoutMs: this.options.produceTimeoutMs })
          .then((responses) => this.acknowledge(items, responses))
          .catch((err: unknown) => {
            resync ??= err instanceof Resync ? err : new Resync(`produce failed: ${(err as Error).message}`, { cause: err });
          });
        inFlight.push(sent);
        if (inFlight.length >= this.options.maxInFlight) await inFlight.shift();
      }
    }
    await Promise.all(inFlight);
    if (resync) throw resync;
  }

  private acknowledge(items: readonly ProduceItem[], responses: readonly ProducedPartition[]): void {
    const { topic } = this.req;
    for (const item of items) {
      const response = responses.find((r) => r.partition === item.state.partition);
      const state = item.state;
      if (state.status !== 'copying') continue;
      if (!response) throw new Resync(`no produce response for ${topic}-${state.partition}`);
      if (response.error) {
        if (RESYNC_ERRORS.has(response.error.type) || response.error.retriable) throw new Resync(`produce ${topic}-${state.partition}: ${response.error.type}`);
        this.fail(state, kafkaFailure(`produce ${topic}-${state.partition}`, response.error.type, { topic, partition: state.partition, message: response.errorMessage ?? '' }));
        continue;
      }
      if (response.baseOffset !== item.expectedBase) {
        this.fail(
          state,
          new KmirrorError(
            'OFFSET_DIVERGENCE',
            `destination ${topic}-${state.partition} appended a batch at offset ${response.baseOffset}, expected ${item.expectedBase}: something else writes to this mirror topic; halted`,
            { topic, partition: state.partition, expected: item.expectedBase.toString(), got: response.baseOffset.toString() },
          ),
        );
        continue;
      }
      state.next = item.nextAfter;
      if (item.leaderEpoch >= 0) {
        state.lastLeaderEpoch = item.leaderEpoch;
        this.stats.batches++;
        this.stats.records += item.records;
        this.stats.bytes += item.bytes;
      }
    }
  }

  private report(): void {
    this.req.onProgress?.(
      this.states.map((s) => ({ partition: s.partition, nextOffset: s.next, sourceEnd: s.sourceEnd, status: s.status })),
      this.stats,
    );
  }
}

/** The destination end once it has stopped moving (an acknowledged-late write settles first). */
async function stableEnd(cluster: RawCluster, topic: string, partitions: readonly number[]): Promise<Map<number, bigint>> {
  let previous = await cluster.listOffsets(topic, partitions, 'latest');
  for (let i = 0; i < 10; i++) {
    await sleep(100);
    const current = await cluster.listOffsets(topic, partitions, 'latest');
    if ([...current].every(([p, o]) => previous.get(p) === o)) return current;
    previous = current;
  }
  return previous;
}

function kafkaFailure(what: string, type: string, details: Record<string, string | number>): KmirrorError {
  return new KmirrorError(type.includes('AUTHORIZATION') ? 'CLUSTER_MIRROR_AUTHORIZATION_FAILED' : 'INVALID_ARGUMENT', `${what} failed: ${type}`, { ...details, kafkaError: type });
}

function isRetriable(err: unknown): boolean {
  if (isKmirrorError(err)) return err.code === 'CLUSTER_UNREACHABLE';
  const e = err as { retriable?: boolean; name?: string };
  return e.retriable === true || e.name === 'KafkaJSConnectionError' || e.name === 'KafkaJSRequestTimeoutError' || e.name === 'KafkaJSConnectionClosedError';
}
