// The offset-preserving copier: kmirror's data plane (DESIGN §5). It copies partitions of any
// number of topics from the source cluster to the same-named topics on the destination so that a
// record at source offset o lands at destination offset o. One copier serves one copy activity: its
// fetches and produces carry every topic led by the same broker in one request.
//
// Contracts (each has an integration test in test/kafka/copier.int.test.ts):
//  1. Offsets equal. Every produce response's base offset is compared with the offset the batch
//     had on the source; a mismatch halts that partition with OFFSET_DIVERGENCE and the evidence.
//  2. Alignment. A destination partition that ends below the source's log start is advanced to it
//     with filler records, then DeleteRecords moves its log start there, so both logs start at s.
//     The last filler carries the header `kmirror.alignment`, so an alignment that was interrupted
//     before its DeleteRecords (a crash, a failed request) is recognised and finished on resync.
//  3. Gaps. Offsets the source log skips (transaction markers, aborted transactions' records,
//     records compaction removed) are taken on the destination by aborted transactions of empty
//     fillers (kafka/gap-filler.ts), so read_committed consumers see exactly the source's committed
//     records at their offsets and no source-aborted record is ever written.
//  4. Resume. The destination's end offset is the checkpoint: every start re-reads it, and every
//     recovery from an error re-reads it for the partitions whose position the error made uncertain
//     (all of them after an error that is not a Resync), then continues from there — but only
//     after the destination's last record is compared with the source's record at that offset. A
//     record written into the destination while no copier ran (a foreign write) differs there, and
//     halts the partition with OFFSET_DIVERGENCE instead of being adopted; so does an end beyond
//     the source's last stable offset (the copier never copies past it). A client reads a
//     destination's end as its high watermark, which a follower slow to replicate holds below
//     batches the leader has appended but not acknowledged (REQUEST_TIMED_OUT): the copier keeps
//     its producer id across a resync when every re-read partition ends where one of its batches
//     starts or ends, and sends from there with that batch's sequence, so the broker keeps one copy
//     of a batch sent twice (or refuses a differently cut one until the first is visible) — a
//     fresh producer id would have it appended again at the wrong offsets (the slow-follower
//     drill). Otherwise (the first start, an end elsewhere, the producer id lost or fenced, or
//     OUT_OF_ORDER_SEQUENCE_NUMBER for longer than outOfOrderPatienceMs) it takes a fresh one.
//     A fresh producer id (a new owner after a takeover, or any start) first waits until no
//     re-read partition holds records its leader appended but has not acknowledged (the log end,
//     read with OffsetForLeaderEpoch, above the high watermark): those are a predecessor's batches
//     still waiting for a slow follower, and they become the destination's end once it catches up
//     or leaves the ISR (the takeover drill). Past unacknowledgedPatienceMs: CLUSTER_UNREACHABLE.
//  5. One writer. Nothing is produced unless the lease is held (lease.validUntil() in the future,
//     checked before every produce request); a failed renewal stops production at once. The lease's
//     grace period must exceed the produce timeout (checked when the copier is built), so a new
//     owner never starts while one of our produce requests can still land.
//  6. Bounded memory. Bytes are reserved from the shared budget before a fetch (a prefetch too,
//     contract 10) and released when the destination has acknowledged them. Each produce request holds a copy of its batches (a
//     merged batch, contract 7, is written straight into it) until it is answered: at most
//     maxInFlight requests' worth on top. A round's fetch answer is given back for reuse
//     (kafka/buffer-pool.ts) when the round ends — every produce request made from it answered or
//     failed, a boundary batch in it copied out — and so is each answered produce request.
//  7. Fidelity. Source batches are copied as bytes (only producer id/epoch/sequence and the CRC
//     change), so keys, values, headers, timestamps and compression are kept. Consecutive
//     uncompressed batches are merged into one of up to mergeBatchBytes (each record's bytes kept,
//     its offset and timestamp deltas rebased), so a source written with small producer batches
//     costs the destination broker what large ones would. A batch is re-encoded only when the
//     destination already holds its head, or when it carries LogAppendTime.
//  8. Cancellation. On abort the copier stops fetching, waits for its in-flight produce to be
//     acknowledged, and returns each partition's next offset (= last mirrored offset + 1).
//  9. Positions. With `positions`, the destination end, the source leader epoch and the checksum of
//     the last copied record are handed over at most every `everyMs`, and once more at the end.
// 10. Pipelining. While a round produces from a well-filled fetch (a backlog), the next round's
//     fetch is already out, from where the round's batches end; it is used only if every partition
//     ends the round exactly there, and its bytes come from the same budget (contract 6). Measured: 1.50 → 1.91× tuned MirrorMaker 2
//     with 256 KiB source batches, 2.20 → 2.54× with 16 KiB ones (docs/benchmarks.md).
// 11. Fetch sessions. Each source leader is fetched in an incremental fetch session (KIP-227,
//     protocol.ts FetchSession): a fetch names only the partitions whose position moved, and the
//     answer holds only partitions with something new, so thousands of idle partitions cost the
//     source broker nothing per fetch. A partition the answer leaves out is unchanged: the broker
//     includes every partition with records or a moved high watermark or log start, and under
//     read_committed a last stable offset beyond the fetch offset means records to return, so an
//     omitted partition's last known LSO is still no further than its position. A session the
//     broker lost is reopened with a full fetch; the copier ends its sessions when it stops (the
//     broker's session cache is shared with its other consumers). CopyOptions.fetchSessions (default on) turns them
//     off. (They were off for a day after a CI failure in the gap-filling test; that was the test
//     copying before the source's transaction markers were written, not the sessions.)
// 12. Integrity. Every fetched batch's CRC-32C is checked before anything of it is used (the
//     copier writes a fresh CRC, so an unchecked corrupt batch would be laundered into a valid
//     one), and a batch that cannot be decoded counts as corrupt. The partition is copied up to
//     that batch and halts with CORRUPT_RECORD_BATCH and the batch's offsets; the others go on.
//     Cost: CRC-32C runs at ~11 GiB/s here (0.07–0.1 CPU-s per GiB), ~2% of the copier's own.
// 13. Gathering. After an answer that carried records but fewer than fetchGatherBytesPerPartition
//     per partition fetched, the copier waits fetchGatherWaitMs before its next fetch from that
//     leader, so the source gathers more for it; otherwise it fetches at once (and the broker
//     answers on the first byte, or after fetchMaxWaitMs when idle). With thousands of partitions
//     every fetch costs the source broker a walk over all of them, and a copier that fetches again
//     the moment it has produced sends many nearly empty fetches; the price is at most
//     fetchGatherWaitMs of lag while the source trickles. The wait is the copier's, not the
//     broker's (fetch minBytes): a fetch held in the broker for more bytes is re-examined, all its
//     partitions, on every append to any of them — measured at 2,000 partitions, the source broker
//     then spent 63 CPU-s per GiB written instead of 47.
import { setTimeout as sleep } from 'node:timers/promises';
import pRetry from 'p-retry';
import { KmirrorError, isKmirrorError } from '../domain/errors.ts';
import { kafkaFailure } from './errors.ts';
import type { ByteBudget } from './budget.ts';
import type { PartitionLease } from './lease.ts';
import { AbortedTransactions, FetchSession, IsolationLevel, KafkaAnswerError, partitionKey, partitionsByTopic, setByTopic, type FetchedPartition, type PartitionsByTopic, type ProducedPartition, type RawCluster } from './protocol.ts';
import { GapFiller } from './gap-filler.ts';
import { invisibleChecksum, recordChecksum } from './verify.ts';
import { crcValid, decodeRecords, encodeBatch, isContiguous, isMergeable, mergedBatch, nextSequence, restampBatch, type DecodedRecord, type InPlaceBatch, type RawBatch, type RecordToEncode } from './wire.ts';

export interface CopyOptions {
  /** Upper bound of one fetch response (reserved from the budget before fetching). */
  readonly fetchMaxBytes: number;
  readonly partitionMaxBytes: number;
  readonly fetchMaxWaitMs: number;
  /** Broker-side produce timeout; the lease grace must exceed it (contract 5). */
  readonly produceTimeoutMs: number;
  /** Produce requests in flight per destination leader (≤ 5: the broker's idempotence window). */
  readonly maxInFlight: number;
  /** Records per alignment filler batch. */
  readonly fillerBatchRecords: number;
  /** Consecutive small (≤ 1/8 of it) uncompressed source batches are merged into one batch of up
   *  to this many bytes (contract 7); 0 turns merging off. Keep it ≤ the destination topics' max.message.bytes:
   *  a partition whose merged batch the destination refuses as too large stops merging. */
  readonly mergeBatchBytes: number;
  /** Give up (CLUSTER_UNREACHABLE) after this long without one successful round. */
  readonly unreachableAfterMs: number;
  /** Incremental fetch sessions with the source leaders (contract 11); false: every fetch names
   *  every partition. */
  readonly fetchSessions: boolean;
  /** Contract 13: an answer of fewer bytes than this per fetched partition (0: none) makes the
   *  copier wait fetchGatherWaitMs before fetching from that leader again. */
  readonly fetchGatherBytesPerPartition: number;
  readonly fetchGatherWaitMs: number;
  /** How long a resync keeps the producer id while the destination answers
   *  OUT_OF_ORDER_SEQUENCE_NUMBER (a batch sent again before its first copy became visible) before
   *  it takes a fresh one (contract 4). */
  readonly outOfOrderPatienceMs: number;
  /** How long a resync that takes a fresh producer id waits for records the destination's leaders
   *  appended but have not acknowledged (contract 4): a stalled follower holds them until it
   *  catches up or leaves the ISR (replica.lag.time.max.ms, 30 s by default, checked every half of
   *  it). Past it: CLUSTER_UNREACHABLE (retriable). */
  readonly unacknowledgedPatienceMs: number;
}

export const defaultCopyOptions: CopyOptions = Object.freeze({
  fetchMaxBytes: 8 * 1024 * 1024,
  partitionMaxBytes: 1024 * 1024,
  fetchMaxWaitMs: 500,
  produceTimeoutMs: 10_000,
  maxInFlight: 5,
  fillerBatchRecords: 50_000,
  mergeBatchBytes: 512 * 1024,
  unreachableAfterMs: 60_000,
  fetchSessions: true,
  fetchGatherBytesPerPartition: 1024,
  fetchGatherWaitMs: 20,
  outOfOrderPatienceMs: 60_000,
  // Below unreachableAfterMs, so a wait that gives up is retried in place once.
  unacknowledgedPatienceMs: 45_000,
});

/** Header key of the last alignment filler (contract 2); its value is the offset aligned to. */
export const ALIGNMENT_HEADER = 'kmirror.alignment';

/** An alignment filler: no timestamp (-1), an empty key (none before 2026-12-07), no value, no
 *  header but the last one's mark. */
function isAlignmentFiller(record: DecodedRecord): boolean {
  return record.timestamp === -1n && (record.key === null || record.key.length === 0) && record.value === null && record.headers.every((h) => h.key === ALIGNMENT_HEADER);
}

/** Partitions of one topic. Topics keep their name on the destination. */
export interface TopicPartitions {
  readonly topic: string;
  readonly partitions: readonly number[];
}

export interface PartitionProgress {
  readonly topic: string;
  readonly partition: number;
  /** Next offset to copy = destination end = last mirrored offset + 1. */
  readonly nextOffset: bigint;
  /** Source last stable offset as of the latest fetch (what read_committed can copy). */
  readonly sourceEnd: bigint;
  readonly status: PartitionStatus;
  /** Timestamp (ms) of the first record the latest fetch returned, while the partition is behind
   *  (sourceEnd > nextOffset): its oldest unmirrored record is no younger (an upper bound of the
   *  lag in time, like MirrorMaker's record-age-ms). LogAppendTime batches: their append time. */
  readonly oldestUnmirroredMs?: number;
}

export type PartitionStatus = 'copying' | 'caught-up' | 'stopped' | 'failed';

/** Offsets the source's retention removed before they were mirrored ([from, to)). */
export interface SkippedRange {
  readonly from: bigint;
  readonly to: bigint;
}

export interface PartitionOutcome extends PartitionProgress {
  /** Source leader epoch of the last copied batch, when one was copied in this run. */
  readonly lastLeaderEpoch?: number;
  readonly error?: KmirrorError;
  /** Set when this run aligned a destination that already held mirrored data or had been
   *  aligned before: the source log start had passed the destination end (records lost). */
  readonly skipped?: SkippedRange;
}

/** Where a partition's destination ends, for RecordLastMirrored (DESIGN §6). */
export interface MirroredPosition {
  readonly topic: string;
  readonly partition: number;
  /** The destination end offset (= last mirrored offset + 1). */
  readonly offset: bigint;
  /** Source leader epoch of the batch that held the last record. */
  readonly leaderEpoch: number;
  /** recordChecksum() of the last record (the boundary record). */
  readonly checksum: string;
}

export interface CopyStats {
  batches: number;
  records: number;
  bytes: number;
  reencodedBatches: number;
  fillerRecords: number;
  fillMs: number;
  resyncs: number;
  /** Partitions those resyncs re-read, summed: only the uncertain ones after an error (contract 4). */
  resyncedPartitions: number;
  /** Resyncs whose boundary record could not be compared (the source no longer holds it). */
  boundaryUnverified: number;
  /** Interrupted alignments finished on resync (contract 2). */
  alignmentsFinished: number;
  /** Runs of skipped source offsets filled (contract 3), and the offsets they took. */
  gapsFilled: number;
  gapOffsets: number;
  /** Partitions whose fill transaction was aborted on resync (one may have been left open). */
  openFillsAborted: number;
  /** Resyncs that kept the producer id (every re-read partition ended at a batch of ours). */
  producerKept: number;
  /** Resyncs with a fresh producer id that first waited for records a destination leader had
   *  appended but not acknowledged (contract 4). */
  unacknowledgedWaits: number;
  /** Source batches that went out merged with others (contract 7), and the partitions whose
   *  destination refused a merged batch as too large (they copy batch by batch since). */
  mergedBatches: number;
  mergingStopped: number;
  /** Fetches issued while the previous round produced (contract 10): used, and dropped because
   *  their round ended elsewhere (a failure, a resync, a partition caught up or moved). */
  prefetchesUsed: number;
  prefetchesDropped: number;
  /** Fetches that named only the partitions whose position changed (contract 11), and fetch
   *  sessions the source broker lost (evicted, or an epoch it did not expect) and that were reopened. */
  incrementalFetches: number;
  fetchSessionResets: number;
  /** Fetches sent to source leaders, and those of them sent after a gathering wait (contract 13). */
  fetches: number;
  gatheringFetches: number;
}

/** A copy's counts before it has done anything. */
export function emptyCopyStats(): CopyStats {
  return {
    batches: 0,
    records: 0,
    bytes: 0,
    reencodedBatches: 0,
    fillerRecords: 0,
    fillMs: 0,
    resyncs: 0,
    resyncedPartitions: 0,
    boundaryUnverified: 0,
    alignmentsFinished: 0,
    gapsFilled: 0,
    gapOffsets: 0,
    openFillsAborted: 0,
    producerKept: 0,
    unacknowledgedWaits: 0,
    mergedBatches: 0,
    mergingStopped: 0,
    prefetchesUsed: 0,
    prefetchesDropped: 0,
    incrementalFetches: 0,
    fetchSessionResets: 0,
    fetches: 0,
    gatheringFetches: 0,
  };
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
  readonly assignments: readonly TopicPartitions[];
  readonly budget: ByteBudget;
  readonly lease: PartitionLease;
  readonly signal: AbortSignal;
  /** Stop each partition once it has copied everything committed at the time it is checked. */
  readonly untilCaughtUp?: boolean;
  readonly onProgress?: (progress: readonly PartitionProgress[], stats: Readonly<CopyStats>) => void;
  /** Hand over advanced positions at most every `everyMs` and once at the end. `record` must not
   *  throw: reporting its own failures is its job (the copy goes on regardless). */
  readonly positions?: { readonly everyMs: number; record(positions: readonly MirroredPosition[]): Promise<void> };
  /** Told, before the destination is moved past them, of records the source's retention removed
   *  before they were mirrored; answers which of these partitions must fail (RECORDS_LOST) instead
   *  of moving on. Reporting its own failures is its job; when it cannot decide it throws a
   *  retryable error, and the copier resyncs again (as after any retriable error). Absent: all move on. */
  readonly onRecordsLost?: (losses: readonly RecordsLoss[]) => Promise<{ readonly fail: readonly RecordsLoss[] }>;
  readonly options?: Partial<CopyOptions>;
}

/** Records of one partition the source's retention removed before they were mirrored. */
export type RecordsLoss = { readonly topic: string; readonly partition: number } & SkippedRange;

/** The last batch (or re-encoded record, or filled gap) acknowledged for a partition, until its
 *  position is taken. */
type Boundary = { readonly offset: bigint; readonly leaderEpoch: number } & (ProducedBoundary | { readonly invisible: true });
/** A copied batch (its last record is the boundary: decoded only when the position is handed
 *  over), or the checksum of a re-encoded batch's last record. */
type ProducedBoundary = { readonly batch: RawBatch } | { readonly checksum: string };

interface PartitionState {
  readonly topic: string;
  readonly partition: number;
  readonly key: string;
  next: bigint;
  sourceEnd: bigint;
  status: PartitionStatus;
  lastLeaderEpoch?: number;
  error?: KmirrorError;
  skipped?: SkippedRange;
  boundary?: Boundary;
  /** Set when the destination refused a merged batch as too large: copy batches one by one. */
  noMerging?: boolean;
  /** See PartitionProgress.oldestUnmirroredMs. */
  fetchedTimestamp?: number;
  /** Under the current producer id: the sequence a batch starting at each offset carries (the
   *  starts and ends of the batches sent and not yet acknowledged, and the acknowledged end). A
   *  resync that finds the destination ending at one of them keeps the producer (contract 4). */
  sequenceAt?: Map<bigint, number>;
}

/** One batch to produce and where the source says it must land. */
interface ProduceItem {
  readonly state: PartitionState;
  readonly expectedBase: bigint;
  readonly nextAfter: bigint;
  readonly records: number;
  /** Size of the batch as fetched (re-encoded: as decoded), for the byte count. */
  readonly bytes: number;
  /** -1 for alignment fillers (not source data). */
  readonly leaderEpoch: number;
  /** Unstamped source bytes or an encoder: stamped with the sequence at send time. */
  readonly stamp: (s: { producerId: bigint; producerEpoch: number; baseSequence: number }) => Buffer | Buffer[] | InPlaceBatch;
  /** What becomes the partition's boundary once acknowledged (absent for fillers). */
  readonly boundary?: ProducedBoundary;
  /** Source batches copied as they are (more than one: merged into one batch). */
  readonly batches?: readonly RawBatch[];
}

/** Offsets [from, to) the source skips (contract 3); leaderEpoch of the batch that ends the run. */
interface Gap {
  readonly from: bigint;
  readonly to: bigint;
  readonly leaderEpoch: number;
}

/** Plan for one partition out of one fetch: segments in offset order, each some batches to produce
 *  and then, unless it is the last, a gap to fill. */
interface PartitionPlan {
  readonly segments: { items: ProduceItem[]; gap?: Gap }[];
  /** Where the partition stands once all of it is copied: after the last fetched batch, or at
   *  the corrupt batch that ended the plan. */
  readonly end: bigint;
  /** A batch that failed its CRC or could not be decoded: the segments stop before it, and the
   *  partition fails with this error once they are copied (contract 12). */
  readonly corrupt?: KmirrorError;
}

/** A fetch's answer and the budget bytes it holds until its round is done. */
interface Fetched {
  readonly partitions: readonly FetchedPartition[];
  readonly held: number;
}

/** A fetch issued ahead for the positions in `signature` (positionsSignature). */
interface Prefetch {
  readonly signature: string;
  readonly fetched: Promise<Fetched>;
}

/** Which partitions a fetch reads and from where, order-independent. */
function positionsSignature(positions: readonly { state: PartitionState; offset: bigint }[]): string {
  return positions
    .map(({ state, offset }) => `${state.key}@${offset}`)
    .sort()
    .join('\u0001');
}

/**
 * Thrown inside a round to make the copier re-read the destination and start a fresh producer.
 * `keys` names the partitions whose position is uncertain (a produce request that failed or was
 * answered with an error, a fetch error, a failed gap fill): only they are re-read — every other
 * partition's position is exact, since a round waits for all its requests before it throws. With
 * thousands of partitions per copier, re-reading all of them for one partition's hiccup took
 * seconds (≈3.3 s per 1,000). Absent: all partitions.
 */
class Resync extends Error {
  override readonly name = 'Resync';
  constructor(
    message: string,
    readonly keys: ReadonlySet<string> | undefined,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }

  /** This resync and `other` as one: the first message, the union of the partitions. */
  and(other: Resync): Resync {
    const keys = this.keys === undefined || other.keys === undefined ? undefined : new Set([...this.keys, ...other.keys]);
    return new Resync(this.message, keys, { cause: this.cause });
  }
}

/** Answers meaning the destination no longer knows (or fenced) the copier's producer id. */
const PRODUCER_LOST_ERRORS = new Set(['UNKNOWN_PRODUCER_ID', 'INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED']);

/** Answers to a batch above the destination topic's max.message.bytes. */
const TOO_LARGE_ERRORS = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE']);

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

/** Partitions whose gaps are filled at once (each is a transaction of its own). */
const GAP_CONCURRENCY = 32;
/** Partitions aligned at once (each round holds one filler batch per partition in memory). */
const ALIGN_SLICE = 32;

export { partitionKey };

/** Copy until aborted (or, with untilCaughtUp, until every partition has caught up). */
export async function copy(request: CopyRequest): Promise<CopyResult> {
  return new Copier(request).run(false);
}

/** Align the destination partitions to the source log start (contract 2), check their boundary
 *  records (contract 4), and stop: the LOG_TRUNCATION step of a start. Same lease rules. */
export async function align(request: Omit<CopyRequest, 'untilCaughtUp' | 'positions'>): Promise<CopyResult> {
  return new Copier(request).run(true);
}

/** Source batches that follow each other, copied as they are: one batch restamped, several merged
 *  into one (contract 7). The boundary is the last batch, whose leader epoch the item carries. */
function copyItem(state: PartitionState, batches: readonly RawBatch[]): ProduceItem {
  const first = batches[0]!;
  const last = batches[batches.length - 1]!;
  return {
    state,
    expectedBase: first.baseOffset,
    nextAfter: last.lastOffset + 1n,
    records: batches.reduce((n, b) => n + b.recordsCount, 0),
    bytes: batches.reduce((n, b) => n + b.bytes.length, 0),
    leaderEpoch: last.leaderEpoch,
    stamp: batches.length === 1 ? (s) => restampBatch(first, s) : (s) => mergedBatch(batches, s),
    boundary: { batch: last },
    batches,
  };
}

class Copier {
  private readonly options: CopyOptions;
  private readonly states: PartitionState[];
  private readonly stats: CopyStats = emptyCopyStats();
  private readonly filler: GapFiller;
  private producer = { producerId: -1n, producerEpoch: 0 };
  private readonly sequences = new Map<string, number>();
  /** The destination no longer knows our producer id (or fenced it): the next resync takes one. */
  private producerLost = true;
  /** When answers of OUT_OF_ORDER_SEQUENCE_NUMBER began (undefined: the last answer was fine): a
   *  batch sent again while its first copy is not yet visible is refused so, for a while. */
  private outOfOrderSince: number | undefined;
  /** Aborted when the caller aborts or the lease is lost: stops fetching, not in-flight acks. */
  private readonly stop = new AbortController();
  private leaseLost?: KmirrorError;
  private lastSuccess = Date.now();
  private lastRecorded = Date.now();
  /** Rotates which partitions come first in a fetch: the broker fills a response in request order. */
  private rotation = 0;
  /** Per source leader, the fetch issued while its previous round was producing (pipelining). */
  private readonly prefetches = new Map<number, Prefetch>();
  /** Record bytes of the latest answer from each source leader (contract 13). */
  private readonly lastAnswerBytes = new Map<number, number>();
  /** One incremental fetch session per source leader (contract 11). */
  private readonly fetchSessions = new Map<number, FetchSession>();

  constructor(private readonly req: CopyRequest) {
    this.options = { ...defaultCopyOptions, ...req.options };
    if (this.options.maxInFlight < 1 || this.options.maxInFlight > 5) {
      throw new KmirrorError('INVALID_CONFIG', `maxInFlight must be 1..5 (the broker's idempotence window), got ${this.options.maxInFlight}`);
    }
    if (!(req.lease.graceMs > this.options.produceTimeoutMs)) {
      throw new KmirrorError(
        'INVALID_CONFIG',
        `lease ${req.lease.description}: its grace (${req.lease.graceMs} ms) must exceed the produce timeout (${this.options.produceTimeoutMs} ms), or a new owner could start while a produce request of ours still lands`,
      );
    }
    this.filler = new GapFiller(req.destination, {
      produceTimeoutMs: this.options.produceTimeoutMs,
      transactionTimeoutMs: 60_000,
      batchRecords: this.options.fillerBatchRecords,
      markerWaitMs: this.options.produceTimeoutMs,
      assertLease: () => this.assertLease(),
    });
    const seen = new Set<string>();
    this.states = [];
    for (const { topic, partitions } of req.assignments) {
      for (const partition of [...partitions].sort((a, b) => a - b)) {
        const key = partitionKey(topic, partition);
        if (seen.has(key)) continue;
        seen.add(key);
        this.states.push({ topic, partition, key, next: 0n, sourceEnd: 0n, status: 'copying' });
      }
    }
  }

  async run(alignOnly: boolean): Promise<CopyResult> {
    const onAbort = (): void => this.stop.abort(this.req.signal.reason);
    this.req.signal.addEventListener('abort', onAbort, { once: true });
    try {
      await this.req.lease.acquire(this.req.signal);
    } catch (err) {
      this.req.signal.removeEventListener('abort', onAbort);
      if (this.req.signal.aborted) return this.result();
      throw err;
    }
    const renewal = this.renewLoop();
    try {
      // What the next resync re-reads: every partition, some (a Resync's keys), or none.
      let needResync: ReadonlySet<string> | 'all' | undefined = 'all';
      while (!this.stop.signal.aborted && this.active().length > 0) {
        try {
          if (needResync !== undefined) {
            await this.resync(needResync === 'all' ? undefined : needResync);
            needResync = undefined;
            if (alignOnly) break;
          }
          await this.copyRound();
          this.lastSuccess = Date.now();
          await this.recordPositions(false);
        } catch (err) {
          if (this.stop.signal.aborted) break;
          if (isKmirrorError(err, 'LEASE_LOST')) {
            this.leaseLost = err;
            break;
          }
          if (!(err instanceof Resync) && !isRetriable(err)) throw err;
          if (Date.now() - this.lastSuccess > this.options.unreachableAfterMs) {
            throw new KmirrorError('CLUSTER_UNREACHABLE', `no progress copying for ${this.options.unreachableAfterMs} ms: ${(err as Error).message}`, { topics: this.topicsText() }, { cause: err });
          }
          await sleep(200);
          needResync = err instanceof Resync && err.keys !== undefined && needResync !== 'all' ? new Set([...(needResync ?? []), ...err.keys]) : 'all';
        }
      }
    } finally {
      this.req.signal.removeEventListener('abort', onAbort);
      this.stop.abort();
      await Promise.all([renewal, this.dropPrefetches()]);
      await this.closeFetchSessions();
      if (!this.leaseLost) await this.req.lease.release().catch(() => undefined);
    }
    await this.recordPositions(true);
    return this.result();
  }

  /** End the fetch sessions with the source leaders (contract 11), waiting at most 2 s: the source
   *  broker's session cache is shared with its other consumers, and a copier that restarts (every
   *  runner rebalance) would otherwise leave its sessions there until evicted. */
  private async closeFetchSessions(): Promise<void> {
    const closing = [...this.fetchSessions].map(([leader, session]) => this.req.source.closeFetchSession(leader, session).catch(() => undefined));
    this.fetchSessions.clear();
    // Unreferenced: a timer left over once the sessions are closed must not hold the process.
    await Promise.race([Promise.all(closing), sleep(2_000, undefined, { ref: false })]);
  }

  private topicsText(): string {
    return [...new Set(this.states.map((s) => s.topic))].join(',').slice(0, 200);
  }

  private result(): CopyResult {
    return {
      partitions: this.states.map((s) => ({
        topic: s.topic,
        partition: s.partition,
        nextOffset: s.next,
        sourceEnd: s.sourceEnd,
        status: s.status === 'copying' ? 'stopped' : s.status,
        ...(s.lastLeaderEpoch !== undefined ? { lastLeaderEpoch: s.lastLeaderEpoch } : {}),
        ...(s.error ? { error: s.error } : {}),
        ...(s.skipped ? { skipped: s.skipped } : {}),
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

  /** Hand over the positions that advanced since last time (contract 9). */
  private async recordPositions(force: boolean): Promise<void> {
    const sink = this.req.positions;
    if (sink === undefined || (!force && Date.now() - this.lastRecorded < sink.everyMs)) return;
    this.lastRecorded = Date.now();
    const positions: MirroredPosition[] = [];
    for (const state of this.states) {
      const boundary = state.boundary;
      if (boundary === undefined) continue;
      // Drop the reference at once: it may pin a whole fetch response.
      state.boundary = undefined;
      let checksum: string;
      if ('invisible' in boundary) checksum = invisibleChecksum(boundary.offset - 1n);
      else if ('checksum' in boundary) checksum = boundary.checksum;
      else {
        const record = decodeRecords(boundary.batch).at(-1);
        if (record === undefined) continue;
        checksum = recordChecksum(record);
      }
      positions.push({ topic: state.topic, partition: state.partition, offset: boundary.offset, leaderEpoch: boundary.leaderEpoch, checksum });
    }
    if (positions.length > 0) await sink.record(positions);
  }

  /**
   * For the partitions `keys` names (all when absent): re-read where the destination starts and
   * ends (the checkpoint) and the source's offsets; then keep the producer id or take a fresh one
   * (contract 4) and, per partition: refuse a destination beyond the source,
   * finish an interrupted alignment, compare the boundary record, and align partitions that end
   * below the source's log start (contract 4).
   */
  private async resync(keys?: ReadonlySet<string>): Promise<void> {
    this.stats.resyncs++;
    await this.dropPrefetches();
    const active = this.active().filter((s) => keys === undefined || keys.has(s.key));
    if (active.length === 0) return;
    this.stats.resyncedPartitions += active.length;
    const { source, destination } = this.req;
    const partitions = partitionsByTopic(active);
    // One request per leader for all the topics (thousands of partitions in a few requests).
    const [destStart, srcStart, srcEnd, srcHighWatermark] = await pRetry(
      async () => {
        // Leaders may have moved (that is often why we resync): re-read them.
        await Promise.all([source.refreshLeaders(partitions.keys()), destination.refreshLeaders(partitions.keys())]);
        return Promise.all([
          destination.listOffsetsOf(partitions, 'earliest'),
          source.listOffsetsOf(partitions, 'earliest'),
          source.listOffsetsOf(partitions, 'latest', IsolationLevel.READ_COMMITTED),
          source.listOffsetsOf(partitions, 'latest'),
        ]);
      },
      { retries: 100, minTimeout: 50, maxTimeout: 1_000, maxRetryTime: 15_000, shouldRetry: ({ error }) => isRetriable(error) && !this.stop.signal.aborted },
    );
    const offsets = new Map<string, { destStart: bigint; srcStart: bigint; srcEnd: bigint; srcHighWatermark: bigint }>();
    for (const s of active) {
      const at = (answers: Map<string, Map<number, bigint>>) => answers.get(s.topic)!.get(s.partition)!;
      offsets.set(s.key, { destStart: at(destStart), srcStart: at(srcStart), srcEnd: at(srcEnd), srcHighWatermark: at(srcHighWatermark) });
    }
    // A gap fill left open (by a predecessor, or an attempt of ours that failed) is aborted first:
    // its marker lands inside its gap, and only then is the destination's end the checkpoint.
    this.filler.reset();
    const open = await openTransactions(destination, partitions);
    if (open.length > 0) {
      await this.filler.abortOpen(open);
      this.stats.openFillsAborted += open.length;
    }
    // (A fill with no filler written yet — only its marker to come — leaves nothing open to see
    // here; its marker lands at the end E, inside the gap at E. The gap filler aborts it before it
    // fills that gap, and resyncs: GapFiller.fill.)
    const destEnd = await stableEnds(destination, partitions);
    // Still open after that: a transaction kmirror did not start.
    const stillOpen = open.length === 0 ? [] : await openTransactions(destination, partitionsByTopic(open));
    for (const { topic, partition, lastStable } of stillOpen) {
      this.fail(
        active.find((s) => s.key === partitionKey(topic, partition))!,
        new KmirrorError('OFFSET_DIVERGENCE', `destination ${topic}-${partition} has a transaction open at offset ${lastStable} that kmirror did not start: something else writes to this mirror topic; halted`, {
          topic,
          partition,
          offset: lastStable.toString(),
        }),
      );
    }
    // Keep the producer id when every re-read partition ends where a batch of ours starts or ends:
    // a batch the destination appended but could not acknowledge yet (a follower slow to
    // replicate holds its high watermark, the end a client can read, below it) is then sent again
    // with the same sequence and kept once — the broker drops the copy, or refuses a differently
    // cut one until the first becomes visible. A fresh producer id would have it appended twice.
    if (this.outOfOrderSince !== undefined && Date.now() - this.outOfOrderSince > this.options.outOfOrderPatienceMs) this.producerLost = true;
    const resumable = !this.producerLost && active.every((st) => st.status !== 'copying' || st.sequenceAt?.has(destEnd.get(st.key)!) === true);
    if (resumable) {
      for (const st of active) {
        const end = destEnd.get(st.key)!;
        const at = st.sequenceAt;
        if (at === undefined || !at.has(end)) continue;
        this.sequences.set(st.key, at.get(end)!);
        dropBelow(at, end);
      }
      this.stats.producerKept++;
    } else {
      // Records a leader holds unacknowledged would land before anything sent with a fresh
      // producer id: once they are acknowledged, everything is read again.
      if (await this.awaitAcknowledged(active)) return this.resync(keys);
      this.producer = await destination.initProducerId();
      this.producerLost = false;
      this.outOfOrderSince = undefined;
      this.sequences.clear();
      // Every partition's sequence restarts at 0 where it ends now (the others have nothing in flight).
      for (const st of this.states) st.sequenceAt = new Map([[destEnd.get(st.key) ?? st.next, 0]]);
    }
    const toAlign: PartitionState[] = [];
    const alignmentChecks: { state: PartitionState; offset: bigint }[] = [];
    const boundaryChecks: { state: PartitionState; offset: bigint }[] = [];
    const fillerChecks: { state: PartitionState; offset: bigint }[] = [];
    for (const state of active) {
      if (state.status !== 'copying') continue;
      const o = offsets.get(state.key)!;
      const end = destEnd.get(state.key)!;
      state.next = end;
      state.sourceEnd = o.srcEnd;
      if (end > o.srcHighWatermark) {
        this.fail(
          state,
          new KmirrorError('OFFSET_DIVERGENCE', `destination ${state.topic}-${state.partition} ends at ${end}, beyond the source's end ${o.srcHighWatermark}: it holds data the source does not`, {
            topic: state.topic,
            partition: state.partition,
            destinationEnd: end.toString(),
            sourceEnd: o.srcHighWatermark.toString(),
          }),
        );
      } else if (end > o.srcEnd) {
        // The copier never copies past the source's LSO, and the LSO does not move back: a
        // destination ending beyond it holds records nothing can compare yet (the source's are in a
        // transaction still open), so they are not the mirror's.
        this.fail(
          state,
          new KmirrorError('OFFSET_DIVERGENCE', `destination ${state.topic}-${state.partition} ends at ${end}, beyond the source's last stable offset ${o.srcEnd} (a transaction is open there), which the mirror never copies past: something else wrote it`, {
            topic: state.topic,
            partition: state.partition,
            destinationEnd: end.toString(),
            sourceLastStable: o.srcEnd.toString(),
          }),
        );
      } else if (end < o.srcStart) {
        // Records in [end, srcStart) were never mirrored. A destination that holds nothing and was
        // never aligned is a new mirror partition; any other is one the source's retention overtook.
        if (end > 0n || o.destStart > 0n) state.skipped = { from: end, to: o.srcStart };
        if (end > o.destStart) fillerChecks.push({ state, offset: end - 1n });
        toAlign.push(state);
      } else {
        if (o.destStart < o.srcStart) alignmentChecks.push({ state, offset: o.srcStart - 1n });
        if (end > o.srcStart && end > o.destStart) boundaryChecks.push({ state, offset: end - 1n });
      }
    }
    // A destination whose last record is an alignment filler was being aligned when a copier
    // stopped: the range was recorded as lost then (before the fillers), and only the alignment is
    // left to finish — not a second loss.
    const lastRecords = await recordsAt(this.req.destination, fillerChecks.map((c) => ({ topic: c.state.topic, partition: c.state.partition, offset: c.offset })));
    for (const { state } of fillerChecks) {
      const last = lastRecords.get(state.key);
      if (last?.kind === 'data' && isAlignmentFiller(last.record)) delete state.skipped;
    }
    await this.finishAlignments(alignmentChecks);
    await this.checkBoundaries(boundaryChecks);
    const losses = toAlign.flatMap((s) => (s.skipped ? [{ topic: s.topic, partition: s.partition, ...s.skipped }] : []));
    const refused = losses.length === 0 || this.req.onRecordsLost === undefined ? [] : (await this.req.onRecordsLost(losses)).fail;
    for (const loss of refused) {
      const state = toAlign.find((s) => s.topic === loss.topic && s.partition === loss.partition)!;
      delete state.skipped; // not skipped: the partition stops short of the loss
      this.fail(
        state,
        new KmirrorError(
          'RECORDS_LOST',
          `source ${loss.topic}-${loss.partition} no longer holds offsets ${loss.from}..${loss.to - 1n} (its retention removed them before they were mirrored) and the mirror is set to fail rather than skip them; retry with --accept-records-lost to skip them`,
          { topic: loss.topic, partition: loss.partition, from: loss.from.toString(), to: loss.to.toString() },
        ),
      );
    }
    const aligning = toAlign.filter((s) => s.status === 'copying');
    if (aligning.length > 0) await this.align(aligning, new Map(aligning.map((s) => [s.key, offsets.get(s.key)!.srcStart])));
    this.report();
  }

  /** An alignment whose DeleteRecords never happened leaves its fillers visible below the source's
   *  log start; the marked last filler gives it away. Finish it (contract 2). */
  private async finishAlignments(checks: readonly { state: PartitionState; offset: bigint }[]): Promise<void> {
    if (checks.length === 0) return;
    const found = await recordsAt(this.req.destination, checks.map((c) => ({ topic: c.state.topic, partition: c.state.partition, offset: c.offset })));
    const unfinished = checks.filter((c) => {
      const at = found.get(c.state.key);
      return at?.kind === 'data' && at.record.headers.some((h) => h.key === ALIGNMENT_HEADER);
    });
    if (unfinished.length === 0) return;
    await this.req.destination.deleteRecordsOf(offsetsByTopic(unfinished.map((c) => ({ state: c.state, offset: c.offset + 1n }))));
    this.stats.alignmentsFinished += unfinished.length;
  }

  /** Compare the destination's last record with the source's record at the same offset (contract 4). */
  private async checkBoundaries(checks: readonly { state: PartitionState; offset: bigint }[]): Promise<void> {
    if (checks.length === 0) return;
    const wanted = checks.map((c) => ({ topic: c.state.topic, partition: c.state.partition, offset: c.offset }));
    const [onDest, onSource] = await Promise.all([recordsAt(this.req.destination, wanted), recordsAt(this.req.source, wanted)]);
    for (const { state, offset } of checks) {
      const d = onDest.get(state.key);
      const s = onSource.get(state.key);
      if (d === undefined || s === undefined) {
        // Compaction or retention removed it on one side: nothing left to compare.
        this.stats.boundaryUnverified++;
        continue;
      }
      for (const [side, r] of [['destination', d], ['source', s]] as const) {
        if (r.kind !== 'corrupt') continue;
        this.fail(state, new KmirrorError('CORRUPT_RECORD_BATCH', `${side} ${r.error.message}; halted. Repair the ${side} replica (or move leadership to a healthy one), then retry the partition`, r.error.details));
      }
      if (state.status !== 'copying') continue;
      const show = (r: BoundaryRecord): string => (r.kind === 'data' ? `record ${recordChecksum(r.record).slice(0, 16)}` : r.kind === 'control' ? 'a control record' : 'an aborted record');
      // A skipped offset (marker or aborted record) on both sides is the same: gaps are filled, not copied.
      const same = boundaryChecksum(d, offset) === boundaryChecksum(s, offset);
      if (!same) {
        this.fail(
          state,
          new KmirrorError(
            'OFFSET_DIVERGENCE',
            `destination ${state.topic}-${state.partition} holds a different record at offset ${offset} than the source (${show(d)} vs ${show(s)}): something else wrote to this mirror topic; halted rather than adopted`,
            { topic: state.topic, partition: state.partition, offset: offset.toString(), destination: show(d), source: show(s) },
          ),
        );
      }
    }
  }

  /** Fill [destination end, source log start) with fillers (the last one marked), then
   *  DeleteRecords(source log start). Partitions go in slices so memory stays bounded. */
  private async align(states: readonly PartitionState[], target: ReadonlyMap<string, bigint>): Promise<void> {
    const started = Date.now();
    // NO_TIMESTAMP (-1): a filler must not answer a timestamp lookup in place of a real record. An
    // empty key, not none: a compacted destination (compact,delete) refuses records without a key.
    const filler: RecordToEncode = { timestamp: -1n, key: Buffer.alloc(0), value: null, headers: [] };
    for (let i = 0; i < states.length; i += ALIGN_SLICE) {
      const slice = states.slice(i, i + ALIGN_SLICE);
      const rounds: ProduceItem[][] = [];
      for (const state of slice) {
        const to = target.get(state.key)!;
        let k = 0;
        for (let at = state.next; at < to; k++) {
          const count = Number(to - at < BigInt(this.options.fillerBatchRecords) ? to - at : BigInt(this.options.fillerBatchRecords));
          const last = at + BigInt(count) === to;
          const records: RecordToEncode[] = Array.from({ length: count }, () => filler);
          if (last) records[count - 1] = { ...filler, headers: [{ key: ALIGNMENT_HEADER, value: Buffer.from(to.toString()) }] };
          (rounds[k] ??= []).push({ state, expectedBase: at, nextAfter: at + BigInt(count), records: count, bytes: 0, leaderEpoch: -1, stamp: (s) => encodeBatch(records, s) });
          at += BigInt(count);
        }
      }
      await this.produceRounds(rounds);
      const done = slice.filter((s) => s.status === 'copying' && s.next === target.get(s.key));
      // The fillers were only a way to reach offset s; they are never visible to consumers.
      if (done.length > 0) await this.req.destination.deleteRecordsOf(offsetsByTopic(done.map((state) => ({ state, offset: target.get(state.key)! }))));
    }
    this.stats.fillMs += Date.now() - started;
  }

  /** One fetch per source leader (all topics it leads), then the batches produced, checked and counted. */
  private async copyRound(): Promise<void> {
    const { source } = this.req;
    const active = this.active();
    const start = this.rotation++ % Math.max(1, active.length);
    const rotated = [...active.slice(start), ...active.slice(0, start)];
    const byLeader = new Map<number, PartitionState[]>();
    for (const state of rotated) {
      const leader = await source.leaderOf(state.topic, state.partition);
      const list = byLeader.get(leader);
      if (list === undefined) byLeader.set(leader, [state]);
      else list.push(state);
    }
    for (const [leader, prefetch] of this.prefetches) {
      if (!byLeader.has(leader)) {
        this.prefetches.delete(leader);
        void this.dropPrefetch(prefetch);
      }
    }
    // Every leader's round ends before an error is thrown: a resync must not run while another
    // leader's produce requests are still in flight.
    const outcomes = await Promise.allSettled([...byLeader].map(([leader, states]) => this.copyFromLeader(leader, states)));
    this.report();
    const failed = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as unknown] : []));
    const first = failed.find((err) => !(err instanceof Resync)) ?? failed[0];
    if (first === undefined) return;
    // Only Resyncs: one, naming all their partitions. Anything else wins (lease lost, a fatal error).
    if (first instanceof Resync) throw (failed as Resync[]).reduce((a, b) => a.and(b));
    throw first;
  }

  /**
   * Fetch `positions` from a source leader, the bytes reserved from the budget first; resolves to
   * the answer and the bytes it holds (nothing when aborted while waiting for the budget).
   */
  private async fetchFrom(leader: number, positions: readonly { state: PartitionState; offset: bigint }[]): Promise<Fetched> {
    const { source, budget } = this.req;
    // Contract 13: after a small answer, let the source gather more before fetching again.
    const last = this.lastAnswerBytes.get(leader) ?? 0;
    const gather = last > 0 && last < positions.length * this.options.fetchGatherBytesPerPartition;
    if (gather) await sleep(this.options.fetchGatherWaitMs, undefined, { signal: this.stop.signal }).catch(() => undefined);
    const reserve = Math.min(this.options.fetchMaxBytes, positions.length * this.options.partitionMaxBytes);
    await budget.acquire(reserve, this.stop.signal);
    try {
      let session = this.fetchSessions.get(leader);
      if (session === undefined && this.options.fetchSessions) this.fetchSessions.set(leader, (session = new FetchSession()));
      const partitions = await source.fetch({
        leader,
        partitions: positions.map(({ state, offset }) => ({ topic: state.topic, partition: state.partition, fetchOffset: offset, maxBytes: this.options.partitionMaxBytes })),
        maxWaitMs: this.options.fetchMaxWaitMs,
        maxBytes: this.options.fetchMaxBytes,
        isolationLevel: IsolationLevel.READ_COMMITTED,
        ...(session ? { session } : {}),
      });
      this.stats.incrementalFetches = [...this.fetchSessions.values()].reduce((n, x) => n + x.stats.incremental, 0);
      this.stats.fetchSessionResets = [...this.fetchSessions.values()].reduce((n, x) => n + x.stats.resets, 0);
      const actual = partitions.reduce((n, p) => n + p.bytes, 0);
      this.lastAnswerBytes.set(leader, actual);
      this.stats.fetches++;
      if (gather) this.stats.gatheringFetches++;
      if (actual > reserve) budget.force(actual - reserve);
      else budget.release(reserve - actual);
      return { partitions, held: actual };
    } catch (err) {
      budget.release(reserve);
      throw err;
    }
  }

  /** The prefetch of `leader` if it was issued for exactly these partitions at these positions
   *  (else it is dropped: a partition failed, caught up, moved leader, or a resync re-read it). */
  private takePrefetch(leader: number, states: readonly PartitionState[]): Promise<Fetched> | undefined {
    const prefetch = this.prefetches.get(leader);
    if (prefetch === undefined) return undefined;
    this.prefetches.delete(leader);
    if (prefetch.signature === positionsSignature(states.map((state) => ({ state, offset: state.next })))) {
      this.stats.prefetchesUsed++;
      return prefetch.fetched;
    }
    void this.dropPrefetch(prefetch);
    return undefined;
  }

  private async dropPrefetch(prefetch: Prefetch): Promise<void> {
    this.stats.prefetchesDropped++;
    const fetched = await prefetch.fetched.catch(() => undefined);
    if (fetched === undefined) return;
    this.req.budget.release(fetched.held);
    this.req.source.recycle(this.req.source.pooledBuffers(fetched.partitions));
  }

  /**
   * Wait until no copying partition of `states` holds records its destination leader appended but
   * has not acknowledged (log end above the high watermark; contract 4). True when there were some.
   */
  private async awaitAcknowledged(states: readonly PartitionState[]): Promise<boolean> {
    const deadline = Date.now() + this.options.unacknowledgedPatienceMs;
    let pending = [...groupBy(states.filter((s) => s.status === 'copying'), (s) => s.topic)];
    let waited = false;
    for (;;) {
      const behind: [string, PartitionState[]][] = [];
      let first: { state: PartitionState; highWatermark: bigint; logEnd: bigint } | undefined;
      const ends = await this.req.destination.logEnds(partitionsByTopic(pending.flatMap(([, ps]) => ps)));
      for (const [topic, ps] of pending) {
        const held = ps.filter((s) => {
          const e = ends.get(topic)!.get(s.partition)!;
          if (e.logEnd > e.highWatermark) first ??= { state: s, ...e };
          return e.logEnd > e.highWatermark;
        });
        if (held.length > 0) behind.push([topic, held]);
      }
      if (first === undefined) return waited;
      if (Date.now() >= deadline) {
        const { state, highWatermark, logEnd } = first;
        throw new KmirrorError(
          'CLUSTER_UNREACHABLE',
          `destination ${state.topic}-${state.partition}: records its leader appended at offsets ${highWatermark}–${logEnd - 1n} are still not acknowledged by its followers after ${this.options.unacknowledgedPatienceMs / 1000} s (a follower in the ISR is stalled); copying resumes once they are`,
          { topic: state.topic, partition: state.partition, highWatermark: highWatermark.toString(), logEnd: logEnd.toString() },
        );
      }
      if (!waited) this.stats.unacknowledgedWaits++;
      waited = true;
      pending = behind;
      await sleep(250, undefined, { signal: this.stop.signal }).catch(() => undefined);
      this.stop.signal.throwIfAborted();
    }
  }

  /** Drop every prefetch (a resync moves positions; the copier stops): their bytes go back. */
  private async dropPrefetches(): Promise<void> {
    const all = [...this.prefetches.values()];
    this.prefetches.clear();
    await Promise.all(all.map((p) => this.dropPrefetch(p)));
  }

  private async copyFromLeader(leader: number, states: PartitionState[]): Promise<void> {
    const { budget } = this.req;
    const { partitions: fetched, held } = await (this.takePrefetch(leader, states) ?? this.fetchFrom(leader, states.map((state) => ({ state, offset: state.next }))));
    try {
      // A partition the answer leaves out has nothing new (an incremental fetch session, contract 11).
      const byKey = new Map(states.map((s) => [s.key, s]));
      const plans: { state: PartitionState; plan: PartitionPlan }[] = [];
      const refetch = new Set<string>();
      let failed = 0;
      for (const p of fetched) {
        const state = byKey.get(partitionKey(p.topic, p.partition));
        if (!state) continue;
        if (p.error) {
          if (p.error.type === 'OFFSET_OUT_OF_RANGE' || p.error.retriable) refetch.add(state.key);
          else {
            this.fail(state, new KafkaAnswerError(`fetch ${p.topic}-${p.partition} failed: ${p.error.type}`, p.error));
            failed++;
          }
          continue;
        }
        state.sourceEnd = p.lastStableOffset;
        const first = p.batches.find((b) => b.lastOffset >= state.next && !b.isControl);
        if (first !== undefined) state.fetchedTimestamp = Number(first.logAppendTime ? first.maxTimestamp : first.baseTimestamp);
        const plan = this.plan(state, p);
        if (plan.corrupt) failed++;
        plans.push({ state, plan });
      }
      // Pipelining: the next round's fetch goes out now, from where this one's batches end, and
      // is answered while this round produces. It is used only if every partition ends this round
      // exactly there (takePrefetch); the source's records at an offset do not change, so data
      // fetched early is the data a later fetch would get. Only when this fetch came back well
      // filled (a backlog): a mirror that keeps up gets small answers, and fetching ahead would
      // only double the fetches the source broker answers — each naming every partition (measured
      // on 2,000 partitions at 5 MiB/s: the source's own produce latency p50 0.6 → 29 s).
      const backlog = held >= Math.min(this.options.fetchMaxBytes, states.length * this.options.partitionMaxBytes) / 4;
      if (backlog && refetch.size === 0 && failed === 0 && !this.stop.signal.aborted) {
        const ends = new Map(plans.map(({ state, plan }) => [state.key, plan.end]));
        const positions = states.map((state) => ({ state, offset: ends.get(state.key) ?? state.next }));
        const prefetched = this.fetchFrom(leader, positions);
        prefetched.catch(() => undefined); // its error surfaces when the next round takes it
        this.prefetches.set(leader, { signature: positionsSignature(positions), fetched: prefetched });
      }
      // Phase k: the k-th segment of every partition. Its batches go in rounds — the j-th batch of
      // every partition together (one batch per partition per request is the protocol's rule) —
      // then, once all are acknowledged, the gaps that end the segments are filled.
      const phases = Math.max(0, ...plans.map(({ plan }) => plan.segments.length));
      for (let k = 0; k < phases; k++) {
        const rounds: ProduceItem[][] = [];
        for (const { plan } of plans) plan.segments[k]?.items.forEach((item, j) => (rounds[j] ??= []).push(item));
        await this.produceRounds(rounds);
        const gaps = plans.flatMap(({ state, plan }) => {
          const gap = plan.segments[k]?.gap;
          return gap !== undefined && state.status === 'copying' ? [{ state, gap }] : [];
        });
        await this.fillGaps(gaps);
      }
      // Copied up to a corrupt batch: the partition stops there (contract 12).
      for (const { state, plan } of plans) if (plan.corrupt && state.status === 'copying') this.fail(state, plan.corrupt);
      // Every partition of the fetch, not only those in the answer: one a fetch session leaves out
      // has nothing new, and may have reached the source's end in an earlier round.
      for (const state of states) {
        if (state.status === 'copying' && !refetch.has(state.key) && this.req.untilCaughtUp && state.next >= state.sourceEnd) state.status = 'caught-up';
      }
      if (refetch.size > 0) throw new Resync(`source moved for ${refetch.size} partition(s) (leader change or log start beyond our offset)`, refetch);
    } finally {
      budget.release(held);
      // A large answer's buffer is used again (contract 6): a boundary batch still in it is copied
      // out first; every produce request made from it has been encoded (produceRounds awaits them
      // all). A small answer is left to the garbage collector, its boundaries keep it alive.
      const pooled = this.req.source.pooledBuffers(fetched);
      if (pooled.size > 0) {
        for (const state of states) {
          const boundary = state.boundary;
          if (boundary !== undefined && 'batch' in boundary && pooled.has(boundary.batch.bytes.buffer)) {
            state.boundary = { ...boundary, batch: { ...boundary.batch, bytes: Buffer.from(boundary.batch.bytes) } };
          }
        }
        this.req.source.recycle(pooled);
      }
    }
  }

  /**
   * Turn one partition's fetched batches into segments: batches to produce (as fetched, or
   * re-encoded when the destination holds their head, they carry LogAppendTime, or compaction left
   * holes in them), each segment ended by the next run of offsets the source skips.
   */
  private plan(state: PartitionState, fetched: FetchedPartition): PartitionPlan {
    const segments: PartitionPlan['segments'] = [{ items: [] }];
    // Batches copied as they are, not yet pushed: merged into one item while they fit.
    const mergeLimit = state.noMerging === true ? 0 : this.options.mergeBatchBytes;
    let run: RawBatch[] = [];
    let runBytes = 0;
    const flush = (): void => {
      if (run.length > 0) segments[segments.length - 1]!.items.push(copyItem(state, run));
      run = [];
      runBytes = 0;
    };
    // Only small batches are merged: one of ≥ 1/8 of the limit is already large enough for the
    // destination, and merging it would only cost a pass over its records.
    const small = (batch: RawBatch): boolean => batch.bytes.length * 8 <= mergeLimit && isMergeable(batch);
    // A run is either one batch or small batches only, so its first batch tells which.
    const copyAsIs = (batch: RawBatch): void => {
      const fits = run.length > 0 && small(run[0]!) && small(batch) && runBytes + batch.bytes.length <= mergeLimit;
      if (!fits) flush();
      run.push(batch);
      runBytes += batch.bytes.length;
    };
    const push = (...items: ProduceItem[]): void => {
      flush();
      segments[segments.length - 1]!.items.push(...items);
    };
    const skip = (from: bigint, to: bigint, leaderEpoch: number): void => {
      if (to <= from) return;
      flush();
      const previous = segments.length > 1 ? segments[segments.length - 2]! : undefined;
      const last = segments[segments.length - 1]!;
      // Adjacent runs (an aborted batch, then its marker) are one gap.
      if (last.items.length === 0 && previous?.gap?.to === from) previous.gap = { from: previous.gap.from, to, leaderEpoch };
      else {
        last.gap = { from, to, leaderEpoch };
        segments.push({ items: [] });
      }
    };
    const aborted = new AbortedTransactions(fetched.abortedTransactions);
    let next = state.next;
    let corrupt: KmirrorError | undefined;
    for (const batch of fetched.batches) {
      // Checked before its header is trusted; a batch wholly before `next` is not copied.
      if (batch.lastOffset >= next && !crcValid(batch)) {
        corrupt = corruptBatch(state, batch, 'its CRC-32C does not match its bytes');
        break;
      }
      // Every batch goes through the filter, in order: it tracks which producers are aborting.
      const hidden = aborted.isAborted(batch);
      if (batch.lastOffset < next) continue;
      let records: DecodedRecord[] | undefined;
      if (!hidden && !(batch.baseOffset >= next && isContiguous(batch) && !batch.logAppendTime)) {
        try {
          records = decodeRecords(batch);
        } catch (err) {
          if (!isKmirrorError(err, 'CORRUPT_RECORD_BATCH')) throw err;
          corrupt = corruptBatch(state, batch, err.message);
          break;
        }
      }
      skip(next, batch.baseOffset, batch.leaderEpoch); // records compaction removed between batches
      const from = batch.baseOffset > next ? batch.baseOffset : next;
      if (hidden) skip(from, batch.lastOffset + 1n, batch.leaderEpoch); // a marker, or aborted records
      else if (records === undefined) copyAsIs(batch);
      else {
        // Record by record: contiguous runs re-encoded, holes compaction left skipped.
        let at = from;
        let run: DecodedRecord[] = [];
        for (const record of records) {
          if (record.offset < at) continue;
          if (record.offset > at) {
            push(...this.reencode(state, run, batch.leaderEpoch));
            run = [];
            skip(at, record.offset, batch.leaderEpoch);
          }
          run.push(record);
          at = record.offset + 1n;
        }
        push(...this.reencode(state, run, batch.leaderEpoch));
        skip(at, batch.lastOffset + 1n, batch.leaderEpoch);
      }
      next = batch.lastOffset + 1n;
    }
    // Past the good batches, one whose header is damaged: what came before is copied, then halt.
    if (corrupt === undefined && fetched.corrupt !== undefined && fetched.corrupt.offset >= next) {
      corrupt = corruptBatch(state, { baseOffset: fetched.corrupt.offset }, fetched.corrupt.reason);
    }
    flush();
    return { segments, end: next, ...(corrupt ? { corrupt } : {}) };
  }

  /** Contiguous records as fresh uncompressed batches of ≤ 512 KiB. */
  private reencode(state: PartitionState, records: readonly DecodedRecord[], leaderEpoch: number): ProduceItem[] {
    const chunks: { records: DecodedRecord[]; bytes: number }[] = [];
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
      leaderEpoch,
      stamp: (s) => encodeBatch(chunk, s),
      boundary: { checksum: recordChecksum(chunk[chunk.length - 1]!) },
    }));
  }

  /**
   * Fill each partition's gap (contract 3), partitions concurrently. A partition the gap does not
   * start at its end was stopped by an earlier failure in this phase. A retriable failure resyncs
   * (which aborts the fills left open); any other fails that partition.
   */
  private async fillGaps(gaps: readonly { state: PartitionState; gap: Gap }[]): Promise<void> {
    let resync: Resync | undefined;
    await forEachLimit(gaps, GAP_CONCURRENCY, async ({ state, gap }) => {
      if (state.status !== 'copying') return;
      if (state.next !== gap.from) {
        const r = new Resync(`${state.topic}-${state.partition} ends at ${state.next}, not at its gap ${gap.from}`, new Set([state.key]));
        resync = resync?.and(r) ?? r;
        return;
      }
      try {
        const { fillers } = await this.filler.fill(state.topic, state.partition, gap.from, gap.to);
        state.next = gap.to;
        // Our producer's next batch goes on after the gap with the sequence it had before it.
        state.sequenceAt = new Map([[gap.to, this.sequences.get(state.key) ?? state.sequenceAt?.get(gap.from) ?? 0]]);
        state.boundary = { offset: gap.to, leaderEpoch: gap.leaderEpoch, invisible: true };
        state.lastLeaderEpoch = gap.leaderEpoch;
        this.stats.gapsFilled++;
        this.stats.gapOffsets += Number(gap.to - gap.from);
        this.stats.fillerRecords += fillers;
      } catch (caught) {
        // Coordinator calls throw kafkajs' errors: through the one mapping, so a final refusal
        // (a missing kmirror-fill. ACL) fails the partition instead of resyncing for ever.
        const err = kafkaFailure(caught, `fill ${state.topic}-${state.partition} [${gap.from}, ${gap.to})`);
        if (err.code === 'LEASE_LOST') throw err;
        if (!err.retryable) this.fail(state, err);
        else {
          const r = new Resync(`filling ${state.topic}-${state.partition} [${gap.from}, ${gap.to}): ${err.message}`, new Set([state.key]), { cause: err });
          resync = resync?.and(r) ?? r;
        }
      }
    });
    if (resync) throw resync;
  }

  /**
   * Send rounds of produce items, up to maxInFlight requests per destination leader, in order; one
   * request per leader carries every topic it leads. Each acknowledged batch is checked against the
   * offset it must land at. The lease is checked before every request (contract 5).
   */
  private async produceRounds(rounds: ProduceItem[][]): Promise<void> {
    const { destination } = this.req;
    // Each promise here settles (never rejects) once its request is answered or has failed.
    const inFlight: Promise<void>[] = [];
    let resync: Resync | undefined;
    let leaseLost: KmirrorError | undefined;
    try {
      for (const round of rounds) {
        const live = round.filter((item) => item.state.status === 'copying');
        if (live.length === 0 || resync) continue;
        const byLeader = new Map<number, ProduceItem[]>();
        for (const item of live) {
          const leader = await destination.leaderOf(item.state.topic, item.state.partition);
          const list = byLeader.get(leader);
          if (list === undefined) byLeader.set(leader, [item]);
          else list.push(item);
        }
        for (const [leader, items] of byLeader) {
          this.assertLease();
          const batches = items.map((item) => {
            const baseSequence = this.sequences.get(item.state.key) ?? 0;
            const after = nextSequence(baseSequence, item.records);
            this.sequences.set(item.state.key, after);
            const at = (item.state.sequenceAt ??= new Map());
            at.set(item.expectedBase, baseSequence);
            at.set(item.nextAfter, after);
            return { topic: item.state.topic, partition: item.state.partition, batch: item.stamp({ ...this.producer, baseSequence }) };
          });
          const sent = destination
            // The lease is checked again once the connection is up, right before the request is
            // written: (re)connecting to a leader can take longer than the lease has left.
            .produce({ leader, partitions: batches, timeoutMs: this.options.produceTimeoutMs, beforeSend: () => this.assertLease() })
            .then((responses) => this.acknowledge(items, responses))
            .catch((err: unknown) => {
              if (isKmirrorError(err, 'LEASE_LOST')) {
                leaseLost = err;
                return;
              }
              // A request that failed as a whole leaves every partition in it uncertain.
              const r = err instanceof Resync ? err : new Resync(`produce failed: ${(err as Error).message}`, new Set(items.map((i) => i.state.key)), { cause: err });
              resync = resync?.and(r) ?? r;
            });
          inFlight.push(sent);
          if (inFlight.length >= this.options.maxInFlight) await inFlight.shift();
        }
      }
    } finally {
      // Also when the lease is lost or a leader lookup fails mid-way: the requests already made
      // are encoded from the fetch answer's buffer, which is used again once this returns.
      await Promise.all(inFlight);
    }
    if (leaseLost) throw leaseLost;
    if (resync) throw resync;
  }

  /** Take a produce request's answers: each acknowledged batch moves its partition on; a partition
   *  answered with a retriable error (or not at all) is uncertain, and once every answer is taken
   *  they are thrown as one Resync naming them. */
  private acknowledge(items: readonly ProduceItem[], responses: readonly ProducedPartition[]): void {
    const byKey = new Map(responses.map((r) => [partitionKey(r.topic, r.partition), r]));
    const uncertain = new Map<string, string>();
    for (const item of items) {
      const state = item.state;
      const { topic, partition } = state;
      const response = byKey.get(state.key);
      if (state.status !== 'copying') continue;
      if (!response) {
        uncertain.set(state.key, `no produce response for ${topic}-${partition}`);
        continue;
      }
      if (response.error) {
        if (TOO_LARGE_ERRORS.has(response.error.type) && (item.batches?.length ?? 0) > 1) {
          // The destination topic's max.message.bytes is below mergeBatchBytes: copy one by one.
          state.noMerging = true;
          this.stats.mergingStopped++;
          uncertain.set(state.key, `produce ${topic}-${partition}: ${response.error.type} for a merged batch of ${item.bytes} bytes; merging stopped for this partition`);
          continue;
        }
        if (RESYNC_ERRORS.has(response.error.type) || response.error.retriable) {
          if (PRODUCER_LOST_ERRORS.has(response.error.type)) this.producerLost = true;
          if (response.error.type === 'OUT_OF_ORDER_SEQUENCE_NUMBER') this.outOfOrderSince ??= Date.now();
          uncertain.set(state.key, `produce ${topic}-${partition}: ${response.error.type}`);
          continue;
        }
        this.fail(state, new KafkaAnswerError(`produce ${topic}-${partition} failed: ${response.error.type}${response.errorMessage ? ` (${response.errorMessage})` : ''}`, response.error));
        continue;
      }
      if (response.baseOffset !== item.expectedBase) {
        this.fail(
          state,
          new KmirrorError(
            'OFFSET_DIVERGENCE',
            `destination ${topic}-${partition} appended a batch at offset ${response.baseOffset}, expected ${item.expectedBase}: something else writes to this mirror topic; halted`,
            { topic, partition, expected: item.expectedBase.toString(), got: response.baseOffset.toString() },
          ),
        );
        continue;
      }
      state.next = item.nextAfter;
      this.outOfOrderSince = undefined;
      if (state.sequenceAt !== undefined) dropBelow(state.sequenceAt, item.nextAfter);
      if (item.boundary !== undefined) {
        state.lastLeaderEpoch = item.leaderEpoch;
        state.boundary = { offset: item.nextAfter, leaderEpoch: item.leaderEpoch, ...item.boundary };
        this.stats.batches++;
        this.stats.records += item.records;
        this.stats.bytes += item.bytes;
        if ((item.batches?.length ?? 0) > 1) this.stats.mergedBatches += item.batches!.length;
      } else {
        this.stats.fillerRecords += item.records;
      }
    }
    if (uncertain.size > 0) throw new Resync(`${[...uncertain.values()][0]}${uncertain.size > 1 ? ` (and ${uncertain.size - 1} more)` : ''}`, new Set(uncertain.keys()));
  }

  private report(): void {
    this.req.onProgress?.(
      this.states.map((s) => ({
        topic: s.topic,
        partition: s.partition,
        nextOffset: s.next,
        sourceEnd: s.sourceEnd,
        status: s.status,
        ...(s.sourceEnd > s.next && s.fetchedTimestamp !== undefined ? { oldestUnmirroredMs: s.fetchedTimestamp } : {}),
      })),
      this.stats,
    );
  }
}

/** A record found at an offset: data a read_committed consumer sees (decoded), a control record
 *  (transaction marker) or a record of an aborted transaction, with the leader epoch of its batch. */
export type BoundaryRecord =
  | { readonly kind: 'control' | 'aborted'; readonly leaderEpoch: number }
  | { readonly kind: 'data'; readonly record: DecodedRecord; readonly leaderEpoch: number }
  /** The batch holding the offset fails its CRC or cannot be decoded: CORRUPT_RECORD_BATCH for
   *  this partition only (the others of the same request are answered). */
  | { readonly kind: 'corrupt'; readonly error: KmirrorError; readonly leaderEpoch: number };

/** What a boundary comparison compares: the record's checksum, or — for an offset read_committed
 *  consumers skip (a marker, an aborted record; on the destination, a filled gap) — the offset's.
 *  A corrupt batch has nothing to compare: its CORRUPT_RECORD_BATCH is thrown. */
export function boundaryChecksum(found: BoundaryRecord, offset: bigint): string {
  if (found.kind === 'corrupt') throw found.error;
  return found.kind === 'data' ? recordChecksum(found.record) : invisibleChecksum(offset);
}

/**
 * The record at `offset` of each partition, read up to the last stable offset; undefined when the
 * log no longer holds that offset (retention, compaction) or it is not yet stable. Partitions are
 * fetched together per leader; one whose batch did not fit is fetched again on its own (the broker
 * always returns a whole first batch).
 */
export async function recordsAt(cluster: RawCluster, wanted: readonly { topic: string; partition: number; offset: bigint }[]): Promise<Map<string, BoundaryRecord | undefined>> {
  const out = new Map<string, BoundaryRecord | undefined>();
  const pick = (p: FetchedPartition, offset: bigint): BoundaryRecord | undefined | 'retry' => {
    if (p.error) {
      if (p.error.type === 'OFFSET_OUT_OF_RANGE') return undefined;
      throw new KafkaAnswerError(`fetch ${p.topic}-${p.partition} at ${offset}: ${p.error.type}`, p.error);
    }
    const aborted = new AbortedTransactions(p.abortedTransactions);
    for (const batch of p.batches) {
      const hidden = aborted.isAborted(batch); // every batch, in order
      if (offset < batch.baseOffset) return undefined; // between batches: compaction removed it
      if (offset > batch.lastOffset) continue;
      const corrupt = (reason: string): BoundaryRecord => ({
        kind: 'corrupt',
        leaderEpoch: batch.leaderEpoch,
        error: new KmirrorError(
          'CORRUPT_RECORD_BATCH',
          `${p.topic}-${p.partition}: the record batch at offsets ${batch.baseOffset}–${batch.lastOffset} is corrupt (${reason}); its record at offset ${offset} cannot be compared`,
          { topic: p.topic, partition: p.partition, baseOffset: batch.baseOffset.toString(), lastOffset: batch.lastOffset.toString() },
        ),
      });
      if (!crcValid(batch)) return corrupt('its CRC-32C does not match its bytes');
      if (batch.isControl) return { kind: 'control', leaderEpoch: batch.leaderEpoch };
      if (hidden) return { kind: 'aborted', leaderEpoch: batch.leaderEpoch };
      let records: DecodedRecord[];
      try {
        records = decodeRecords(batch);
      } catch (err) {
        if (!isKmirrorError(err, 'CORRUPT_RECORD_BATCH')) throw err;
        return corrupt(err.message);
      }
      const record = records.find((r) => r.offset === offset);
      return record === undefined ? undefined : { kind: 'data', record, leaderEpoch: batch.leaderEpoch };
    }
    // The offset lies in or after a batch whose header is damaged (the batches before it were read).
    if (p.corrupt !== undefined && offset >= p.corrupt.offset) {
      return {
        kind: 'corrupt',
        leaderEpoch: -1,
        error: new KmirrorError('CORRUPT_RECORD_BATCH', `${p.topic}-${p.partition}: the record batch at offset ${p.corrupt.offset} is corrupt (${p.corrupt.reason}); its record at offset ${offset} cannot be compared`, {
          topic: p.topic,
          partition: p.partition,
          baseOffset: p.corrupt.offset.toString(),
        }),
      };
    }
    return 'retry';
  };
  const offsetAt = new Map(wanted.map((w) => [partitionKey(w.topic, w.partition), w.offset]));
  const leaders = await cluster.byLeader(partitionsByTopic(wanted));
  const byLeader = new Map(
    [...leaders].map(([leader, byTopic]) => [leader, [...byTopic].flatMap(([topic, ps]) => ps.map((partition) => ({ topic, partition, offset: offsetAt.get(partitionKey(topic, partition))! })))]),
  );
  const fetchAt = (leader: number, ws: readonly typeof wanted[number][], maxBytes: number) =>
    cluster.fetch({
      leader,
      partitions: ws.map((w) => ({ topic: w.topic, partition: w.partition, fetchOffset: w.offset, maxBytes })),
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 64 * 1024 * 1024,
      isolationLevel: IsolationLevel.READ_COMMITTED,
    });
  await Promise.all(
    [...byLeader].map(async ([leader, ws]) => {
      const retry: typeof wanted[number][] = [];
      for (const p of await fetchAt(leader, ws, 256 * 1024)) {
        const key = partitionKey(p.topic, p.partition);
        const offset = offsetAt.get(key);
        if (offset === undefined) continue;
        const found = pick(p, offset);
        if (found === 'retry') retry.push({ topic: p.topic, partition: p.partition, offset });
        else out.set(key, found);
      }
      for (const w of retry) {
        const [p] = await fetchAt(leader, [w], 16 * 1024 * 1024);
        const found = p === undefined ? undefined : pick(p, w.offset);
        out.set(partitionKey(w.topic, w.partition), found === 'retry' ? undefined : found);
      }
    }),
  );
  return out;
}

/** Partitions with a transaction open on `cluster` (last stable offset below the high watermark). */
export async function openTransactions(cluster: RawCluster, partitions: PartitionsByTopic): Promise<{ topic: string; partition: number; lastStable: bigint }[]> {
  const [stable, high] = await Promise.all([cluster.listOffsetsOf(partitions, 'latest', IsolationLevel.READ_COMMITTED), cluster.listOffsetsOf(partitions, 'latest')]);
  const out: { topic: string; partition: number; lastStable: bigint }[] = [];
  for (const [topic, ps] of partitions) {
    for (const partition of ps) {
      const lastStable = stable.get(topic)!.get(partition)!;
      if (lastStable < high.get(topic)!.get(partition)!) out.push({ topic, partition, lastStable });
    }
  }
  return out;
}

/** Destination ends once they have stopped moving (an acknowledged-late write settles first). */
async function stableEnds(cluster: RawCluster, partitions: PartitionsByTopic): Promise<Map<string, bigint>> {
  const read = async (): Promise<Map<string, bigint>> => {
    const out = new Map<string, bigint>();
    for (const [topic, ends] of await cluster.listOffsetsOf(partitions, 'latest')) for (const [p, end] of ends) out.set(partitionKey(topic, p), end);
    return out;
  };
  let previous = await read();
  for (let i = 0; i < 10; i++) {
    await sleep(100);
    const current = await read();
    if ([...current].every(([k, o]) => previous.get(k) === o)) return current;
    previous = current;
  }
  return previous;
}

/** Offsets of partitions, by topic, then partition. */
function offsetsByTopic(at: readonly { state: PartitionState; offset: bigint }[]): Map<string, Map<number, bigint>> {
  const out = new Map<string, Map<number, bigint>>();
  for (const { state, offset } of at) setByTopic(out, state.topic, state.partition, offset);
  return out;
}

function groupBy<T, K>(items: Iterable<T>, keyOf: (item: T) => K): Map<K, T[]> {
  const out = new Map<K, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const list = out.get(key);
    if (list === undefined) out.set(key, [item]);
    else list.push(item);
  }
  return out;
}

/** Run `fn` over `items` with at most `limit` in flight. */
async function forEachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** Whether a failure may be retried in place (a resync): the one retry table, through the one
 *  Kafka mapping for kafkajs' errors. A held lease is not: the copy waits for it elsewhere. */
function isRetriable(err: unknown): boolean {
  const failure = kafkaFailure(err, 'copy');
  return failure.retryable && failure.code !== 'LEASE_HELD';
}

/** Forget the sequences of offsets below `offset` (the destination holds them for good). */
function dropBelow(sequenceAt: Map<bigint, number>, offset: bigint): void {
  for (const o of [...sequenceAt.keys()]) if (o < offset) sequenceAt.delete(o);
}

/** The error that halts a partition at a corrupt source batch (contract 12). */
function corruptBatch(state: PartitionState, batch: { readonly baseOffset: bigint; readonly lastOffset?: bigint }, reason: string): KmirrorError {
  const { baseOffset, lastOffset } = batch;
  return new KmirrorError(
    'CORRUPT_RECORD_BATCH',
    `source ${state.topic}-${state.partition}: the record batch at ${lastOffset === undefined ? `offset ${baseOffset}` : `offsets ${baseOffset}–${lastOffset}`} is corrupt (${reason}); mirrored up to offset ${baseOffset}, halted. ` +
      'Repair the source replica (or move leadership to a healthy one), then retry the partition',
    { topic: state.topic, partition: state.partition, baseOffset: baseOffset.toString(), ...(lastOffset === undefined ? {} : { lastOffset: lastOffset.toString() }) },
  );
}
