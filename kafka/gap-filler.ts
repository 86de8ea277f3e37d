// Gap filling (DESIGN §5, invariant 2). The broker assigns offsets, so an offset the source log
// skips — a transaction marker, an aborted transaction's records, records compaction removed —
// must still be taken on the destination, or every later record would land one offset early. A run
// of n skipped offsets [from, to) becomes one destination transaction holding n-1 filler records,
// aborted: its ABORT marker takes the run's last offset. read_committed consumers see none of it;
// read_uncommitted consumers see empty fillers (key b'', value null, no timestamp), never a record
// the source aborted.
//
// Contracts:
//  - Nothing else is written to the partition while its transaction is open (the copier fills a
//    gap only after everything before it is acknowledged, and writes nothing after it until the
//    marker is in the log). So a transaction cut short — a crash, a lost lease, a failed request —
//    ends right after its last filler, inside the run, whoever aborts it: the coordinator's timeout,
//    or the next owner, whose InitProducerId with the same transactional id aborts and fences it:
//    `abortOpen`, called by the copier's resync for partitions with open data before it reads the
//    destination's end, and `fill`, whose first InitProducerId for a partition may abort a fill
//    that had no filler yet (its marker then lands at the gap's start: it resyncs).
//  - Each destination partition has its own transactional id, `kmirror-fill.<topic>.<partition>`
//    (ACL: WRITE and DESCRIBE on the TransactionalId prefix `kmirror-fill.`), so partitions fill
//    concurrently and one owner fences the previous one.
//  - The lease is checked before every request that writes (AddPartitionsToTxn, Produce, EndTxn).
import { setTimeout as sleep } from 'node:timers/promises';
import { KmirrorError } from '../domain/errors.ts';
import { KafkaAnswerError, type RawCluster, type TransactionalProducer } from './protocol.ts';
import { encodeBatch, nextSequence, type RecordToEncode } from './wire.ts';

/** The transactional id that fills the gaps of one destination partition. */
export const fillerTransactionalId = (topic: string, partition: number): string => `kmirror-fill.${topic}.${partition}`;

/** A gap filler: offsets only, nothing a consumer could mistake for data. */
export const GAP_FILLER: RecordToEncode = Object.freeze({ timestamp: -1n, key: Buffer.alloc(0), value: null, headers: [] });

/** Whether a record read back is a gap filler (what `verify` accepts in the destination's aborted
 *  transactions). */
export function isGapFiller(r: { readonly key: Buffer | null; readonly value: Buffer | null; readonly headers: readonly unknown[] }): boolean {
  return r.key !== null && r.key.length === 0 && r.value === null && r.headers.length === 0;
}

export interface GapFillerOptions {
  readonly produceTimeoutMs: number;
  /** Transaction timeout asked of the coordinator: how long an abandoned fill stays open. */
  readonly transactionTimeoutMs: number;
  /** Fillers per produced batch. */
  readonly batchRecords: number;
  /** How long to wait for the ABORT marker to reach the log after EndTxn. */
  readonly markerWaitMs: number;
  /** Offsets one transaction takes at most: a longer gap is filled by several aborted
   *  transactions in a row, each ending in its marker, so no fill outlives the transaction timeout
   *  (default 1,000,000: well under a minute at the measured 1.5 M offsets/s). */
  readonly maxOffsetsPerTransaction?: number;
  /** Throws when the lease is no longer held. */
  readonly assertLease: () => void;
}

export class GapFiller {
  private readonly producers = new Map<string, { producer: TransactionalProducer; sequence: number }>();

  constructor(
    private readonly destination: RawCluster,
    private readonly options: GapFillerOptions,
  ) {}

  /** Forget the producers (after a failed request): the next fill initialises again. */
  reset(): void {
    this.producers.clear();
  }

  /**
   * InitProducerId for each partition's transactional id: a fill left open by an earlier owner (or
   * an earlier attempt of ours) is aborted, its marker written, and that owner fenced.
   */
  async abortOpen(partitions: readonly { topic: string; partition: number }[]): Promise<void> {
    for (const { topic, partition } of partitions) {
      this.options.assertLease();
      const producer = await this.destination.initTransactions(fillerTransactionalId(topic, partition), this.options.transactionTimeoutMs);
      this.producers.set(fillerTransactionalId(topic, partition), { producer, sequence: 0 });
    }
  }

  /**
   * Take offsets [from, to) of the partition, whose destination ends at `from`: to-from-1 fillers
   * in a transaction, then its ABORT marker at to-1. Returns once the destination ends at `to`.
   * OFFSET_DIVERGENCE when a filler or the marker lands elsewhere; a retriable error when a request
   * failed (the copier resyncs, which aborts what this left open).
   */
  async fill(topic: string, partition: number, from: bigint, to: bigint): Promise<{ fillers: number }> {
    if (to <= from) throw new KmirrorError('INTERNAL', `empty gap [${from}, ${to}) of ${topic}-${partition}`);
    const most = BigInt(this.options.maxOffsetsPerTransaction ?? 1_000_000);
    let fillers = 0;
    for (let at = from; at < to; ) {
      const end = to - at > most ? at + most : to;
      fillers += (await this.fillInOneTransaction(topic, partition, at, end)).fillers;
      at = end;
    }
    return { fillers };
  }

  private async fillInOneTransaction(topic: string, partition: number, from: bigint, to: bigint): Promise<{ fillers: number }> {
    const id = fillerTransactionalId(topic, partition);
    let entry = this.producers.get(id);
    if (entry === undefined) {
      this.options.assertLease();
      entry = { producer: await this.destination.initTransactions(id, this.options.transactionTimeoutMs), sequence: 0 };
      this.producers.set(id, entry);
      // InitProducerId aborted whatever fill of this partition an earlier owner left open; one
      // with no filler yet had its marker to come, which has now landed at `from`: start over.
      const end = (await this.destination.listOffsets(topic, [partition], 'latest')).get(partition)!;
      if (end !== from) {
        throw new KmirrorError('OFFSET_DIVERGENCE', `destination ${topic}-${partition} ends at ${end}, not at its gap ${from}: a fill an earlier owner left open was aborted there; resyncing`, {
          topic,
          partition,
          expected: from.toString(),
          got: end.toString(),
        }, { retryable: true });
      }
    }
    const { producer } = entry;
    try {
      this.options.assertLease();
      await this.destination.addPartitionsToTxn(producer, topic, [partition]);
      let at = from;
      const last = to - 1n;
      while (at < last) {
        const count = Number(last - at < BigInt(this.options.batchRecords) ? last - at : BigInt(this.options.batchRecords));
        const batch = encodeBatch(Array.from({ length: count }, () => GAP_FILLER), { producerId: producer.producerId, producerEpoch: producer.producerEpoch, baseSequence: entry.sequence, transactional: true });
        this.options.assertLease();
        const leader = await this.destination.leaderOf(topic, partition);
        const [answer] = await this.destination.produce({ leader, partitions: [{ topic, partition, batch }], timeoutMs: this.options.produceTimeoutMs, transactionalId: producer.transactionalId, beforeSend: this.options.assertLease });
        if (answer === undefined) throw new KmirrorError('CLUSTER_UNREACHABLE', `no produce answer for ${topic}-${partition}`, { topic, partition });
        if (answer.error) throw new KafkaAnswerError(`gap fillers for ${topic}-${partition}: ${answer.error.type}${answer.errorMessage ? ` (${answer.errorMessage})` : ''}`, answer.error);
        entry.sequence = nextSequence(entry.sequence, count);
        if (answer.baseOffset !== at) throw divergence(topic, partition, `gap fillers landed at ${answer.baseOffset}, expected ${at}`, at, answer.baseOffset);
        at += BigInt(count);
      }
      this.options.assertLease();
      await this.destination.endTxn(producer, false);
      await this.markerWritten(topic, partition, to);
      return { fillers: Number(last - from) };
    } catch (err) {
      // The transaction may be open: the resync aborts it (abortOpen) before anything else is written.
      this.producers.delete(id);
      throw err;
    }
  }

  /** The marker is written after EndTxn returns: wait until the destination ends at `to`. */
  private async markerWritten(topic: string, partition: number, to: bigint): Promise<void> {
    const deadline = Date.now() + this.options.markerWaitMs;
    for (let wait = 1; ; wait = Math.min(wait * 2, 100)) {
      const end = (await this.destination.listOffsets(topic, [partition], 'latest')).get(partition)!;
      if (end === to) return;
      if (end > to) throw divergence(topic, partition, `after the gap's ABORT marker it ends at ${end}, expected ${to}`, to, end);
      if (Date.now() >= deadline) {
        throw new KmirrorError('CLUSTER_UNREACHABLE', `the ABORT marker of the gap before ${to} in ${topic}-${partition} was not written within ${this.options.markerWaitMs} ms (end ${end})`, { topic, partition });
      }
      await sleep(wait);
    }
  }
}

function divergence(topic: string, partition: number, what: string, expected: bigint, got: bigint): KmirrorError {
  return new KmirrorError('OFFSET_DIVERGENCE', `destination ${topic}-${partition}: ${what}: something else writes to this mirror topic; halted`, {
    topic,
    partition,
    expected: expected.toString(),
    got: got.toString(),
  });
}
