// Failback on stock Kafka (DESIGN §6). After a failover of mirror A → B, B is the primary; the old
// primary A becomes a mirror of B again. Kafka cannot cut a log's tail, so each of A's partitions is
// compared with the position recorded at the failover (last mirrored offset LMO + checksum of the
// record before it):
//   A ends at LMO and its record there matches  → continue: mirror B's records from LMO on;
//   A ends before LMO (it lost records)           → continue when A's last record equals B's there;
//   A ends after LMO                               → a divergent tail [LMO, A's end): records A took
//                                                    after the failover point; archived to a side
//                                                    topic (or discarded on request), then the
//                                                    topic is recreated on A and mirrored in full;
//   the boundary record differs (unclean election) → recreate and mirror in full; what A holds
//                                                    from the first offset where A and B differ
//                                                    (found by bisection: the logs share a prefix,
//                                                    then part) is a divergent range like a tail;
//   no position recorded (nothing reached B before  → recreate; everything A holds is divergent
//   the failover, or a partition B never had)         (B has none of it).
// A topic is recreated when any of its partitions needs it, or when A has more partitions than B
// (those were never mirrored); when B has more, A's topic grows to B's count.
import type { Admin } from 'kafkajs';
import { createTopicsAndWait } from './admin.ts';
import { boundaryChecksum, openTransactions, partitionKey, recordsAt } from './copier.ts';
import { kafkaFailure } from './errors.ts';
import { endOffsets } from './offsets.ts';
import { IsolationLevel, KafkaAnswerError, type RawCluster } from './protocol.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { isKmirrorError } from '../domain/errors.ts';
import { readCommitted, recordChecksum } from './verify.ts';
import { encodeBatch, nextSequence, type DecodedRecord, type RecordToEncode } from './wire.ts';

export type FailbackAction = 'continue' | 'recreate';

export interface PartitionFailback {
  readonly topic: string;
  readonly partition: number;
  /** The last mirrored offset recorded at the failover (null: never recorded). */
  readonly lastMirrored: string | null;
  readonly oldPrimaryStart: string;
  readonly oldPrimaryEnd: string;
  readonly action: FailbackAction;
  readonly reason: 'in-sync' | 'behind' | 'empty' | 'divergent-tail' | 'boundary-mismatch' | 'no-position' | 'missing';
  /** [from, to) of the old primary that the new primary does not hold: the records it took after
   *  the failover point, or, on a boundary mismatch, everything from the first offset where the
   *  two logs differ. Archived (or discarded on request) before the topic is recreated; null when
   *  there is none. */
  readonly divergent: { readonly from: string; readonly to: string } | null;
}

export interface TopicFailback {
  readonly topic: string;
  readonly action: FailbackAction;
  /** The new primary's partition count: the old primary's topic grows to it when it continues. */
  readonly partitionCount: number;
  readonly partitions: readonly PartitionFailback[];
}

/** A topic's failback as prepared (activities/kafka-admin.ts prepareFailback): its divergent tails
 *  with their record counts (null: not known, an earlier attempt archived them), and the archive. */
export interface PreparedFailback extends TopicFailback {
  readonly archiveTopic: string | null;
  readonly partitions: readonly (PartitionFailback & { readonly divergent: { readonly from: string; readonly to: string; readonly records: number | null } | null })[];
}

/**
 * Compare each partition of the old primary (`oldPrimary`) with its recorded position and with the
 * new primary (`newPrimary`). Reads only.
 */
export async function planFailback(
  oldPrimary: RawCluster,
  newPrimary: RawCluster,
  mirrored: readonly { readonly topic: string; readonly partitions: readonly number[] }[],
  recorded: ReadonlyMap<string, { readonly offset: bigint; readonly checksum: string } | null>,
): Promise<TopicFailback[]> {
  // Every partition either side has: the mirror's, and any the old primary grew that were never
  // mirrored (they hold only its own records).
  const shapes = await Promise.all(
    mirrored.map(async ({ topic, partitions }) => {
      const [onOld, onNew] = await Promise.all([partitionCount(oldPrimary, topic), partitionCount(newPrimary, topic)]);
      const all = new Set([...partitions, ...Array.from({ length: onOld }, (_, i) => i)]);
      return { topic, partitions: [...all].sort((a, b) => a - b), onOld, onNew };
    }),
  );
  const topics = shapes.map(({ topic, partitions }) => ({ topic, partitions }));
  const onNewPrimary = shapes.map(({ topic, partitions, onNew }) => ({ topic, partitions: partitions.filter((p) => p < onNew) }));
  const [ends, starts, newStarts] = await Promise.all([
    endOffsets(oldPrimary, topics, 'destination'),
    endOffsets(oldPrimary, topics, 'destination', 'earliest'),
    endOffsets(newPrimary, onNewPrimary, 'source', 'earliest'),
  ]);
  const boundaries = topics.flatMap(({ topic, partitions }) =>
    partitions.flatMap((partition) => {
      const k = partitionKey(topic, partition);
      const end = ends.get(k);
      const lmo = recorded.get(k);
      // Without a position nothing is compared (all the old primary holds is its own).
      if (end === undefined || end === 0n || lmo === null || lmo === undefined) return [];
      // The record to compare: the one before LMO, or A's last when A ends before LMO.
      const at = (end < lmo.offset ? end : lmo.offset) - 1n;
      return at >= (starts.get(k) ?? 0n) ? [{ topic, partition, offset: at }] : [];
    }),
  );
  const [onOld, onNew] = await Promise.all([recordsAt(oldPrimary, boundaries), recordsAt(newPrimary, boundaries)]);
  const planPartition = async (topic: string, partition: number): Promise<PartitionFailback> => {
    const k = partitionKey(topic, partition);
    const end = ends.get(k);
    const lmo = recorded.get(k) ?? null;
    // Gone from the old primary (deleted, or recreated by an earlier run of this failback).
    if (end === undefined) return { topic, partition, lastMirrored: lmo?.offset.toString() ?? null, oldPrimaryStart: '0', oldPrimaryEnd: '0', action: 'recreate', reason: 'missing', divergent: null };
    const start = starts.get(k) ?? 0n;
    const base = { topic, partition, lastMirrored: lmo?.offset.toString() ?? null, oldPrimaryStart: start.toString(), oldPrimaryEnd: end.toString() };
    // No record reached the new primary, and the old primary holds none either (empty, or emptied by
    // retention) where the new primary's log starts: neither has a record the other lacks, so the
    // reverse mirror continues from there — an empty partition must not recreate its whole topic.
    // (Had the old primary's records run past where the new primary starts, continuing would skip
    // the new primary's records below that offset: those fall to the case below.)
    if (lmo === null && end === start && newStarts.get(k) === end) return { ...base, action: 'continue', reason: 'empty', divergent: null };
    // Nothing of this partition reached the new primary before the failover: all the old primary
    // holds is its own.
    if (lmo === null) return { ...base, action: 'recreate', reason: 'no-position', divergent: end > start ? { from: start.toString(), to: end.toString() } : null };
    const old = onOld.get(k);
    // The boundary compared: before LMO, or A's last offset when A ends before LMO.
    const at = (end < lmo.offset ? end : lmo.offset) - 1n;
    const same = (checksum: string) => old !== undefined && boundaryChecksum(old, at) === checksum;
    // A boundary mismatch: A's records from where the two logs part are A's own (never on B).
    const mismatch = async (): Promise<PartitionFailback> => {
      const newStart = newStarts.get(k) ?? 0n;
      const from = await divergencePoint(oldPrimary, newPrimary, topic, partition, start > newStart ? start : newStart, at + 1n);
      return { ...base, action: 'recreate', reason: 'boundary-mismatch', divergent: from < end ? { from: from.toString(), to: end.toString() } : null };
    };
    if (end > lmo.offset) {
      return same(lmo.checksum) ? { ...base, action: 'recreate', reason: 'divergent-tail', divergent: { from: lmo.offset.toString(), to: end.toString() } } : mismatch();
    }
    if (end === lmo.offset) {
      // Nothing below the log start to compare (retention removed it): trust the offsets.
      return old === undefined || same(lmo.checksum) ? { ...base, action: 'continue', reason: 'in-sync', divergent: null } : mismatch();
    }
    const onB = onNew.get(k);
    const match = old === undefined || (onB !== undefined && boundaryChecksum(old, at) === boundaryChecksum(onB, at));
    return match ? { ...base, action: 'continue', reason: 'behind', divergent: null } : mismatch();
  };
  // One partition at a time: a mismatch bisects with a fetch pair per step.
  const plans: TopicFailback[] = [];
  for (const { topic, partitions, onOld, onNew } of shapes) {
    const planned: PartitionFailback[] = [];
    for (const partition of partitions) planned.push(await planPartition(topic, partition));
    const recreate = planned.some((p) => p.action === 'recreate') || onOld > onNew;
    plans.push({ topic, action: recreate ? 'recreate' : 'continue', partitionCount: onNew, partitions: planned });
  }
  return plans;
}

/** Partitions of `topics` (all of each; topics the cluster lacks are skipped) where a transaction
 *  is open, as `topic-partition (LSO x)`. */
export async function openTransactionsIn(cluster: RawCluster, topics: readonly string[]): Promise<string[]> {
  const counts = await Promise.all(topics.map(async (topic) => [topic, await partitionCount(cluster, topic)] as const));
  const partitions = new Map(counts.filter(([, n]) => n > 0).map(([topic, n]) => [topic, Array.from({ length: n }, (_, partition) => partition)]));
  return (await openTransactions(cluster, partitions)).map((o) => `${o.topic}-${o.partition} (LSO ${o.lastStable})`);
}

/** A topic's partition count on a cluster, 0 when the cluster lacks it. */
async function partitionCount(cluster: RawCluster, topic: string): Promise<number> {
  try {
    return (await cluster.partitions(topic)).length;
  } catch (err) {
    if (isKmirrorError(err, 'UNKNOWN_TOPIC')) return 0;
    throw err;
  }
}

/**
 * The first offset in [lo, hi) where the two clusters' records differ, or hi when none does, by
 * bisection: correct for logs that share a prefix and differ from some offset on, which is how an
 * unclean leader election (or any rewrite of A after the failover point) leaves them.
 */
async function divergencePoint(a: RawCluster, b: RawCluster, topic: string, partition: number, lo: bigint, hi: bigint): Promise<bigint> {
  const k = partitionKey(topic, partition);
  while (lo < hi) {
    const mid = lo + (hi - lo) / 2n;
    const wanted = [{ topic, partition, offset: mid }];
    const [onA, onB] = await Promise.all([recordsAt(a, wanted), recordsAt(b, wanted)]);
    const x = onA.get(k);
    const y = onB.get(k);
    // An offset neither log holds (compaction removed it on both) does not tell them apart.
    const same = x === undefined ? y === undefined : y !== undefined && boundaryChecksum(x, mid) === boundaryChecksum(y, mid);
    if (same) lo = mid + 1n;
    else hi = mid;
  }
  return lo;
}

/** The records of each divergent tail of a topic, as read_committed consumers see them. */
export async function countDivergentTails(cluster: RawCluster, topic: string, tails: readonly { readonly partition: number; readonly from: bigint; readonly to: bigint }[]): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  for (const { partition, from, to } of tails) {
    let count = 0;
    for await (const _ of readCommitted(cluster, topic, partition, from, to)) count++;
    counts.set(partition, count);
  }
  return counts;
}

/** The transactional id that writes an archive: under the prefix `kmirror-fill.` kmirror's
 *  principal already holds on a mirror destination (docs/security.md). */
export const archiveTransactionalId = (archiveTopic: string): string => `kmirror-fill.archive.${archiveTopic}`;

/** An archive keeps what it holds until an operator deletes it: no retention by time or size. */
export const ARCHIVE_TOPIC_CONFIGS: Readonly<Record<string, string>> = { 'cleanup.policy': 'delete', 'retention.ms': '-1', 'retention.bytes': '-1' };

/**
 * Copy the divergent tails of a topic into a side topic on the old primary (same partition count;
 * partition p's tail goes to the archive's partition p; keys, values, headers, timestamps kept;
 * headers `kmirror.original.topic/partition/offset` added), as read_committed consumers saw them.
 * Returns the records the archive holds per partition.
 *
 * Resumable and fenced: every chunk is a committed transaction of one transactional id per
 * archive, so a later attempt (a retry after a crash or a timeout) first fences any earlier one
 * still running and aborts what it left open, then goes on after the last archived record.
 */
export async function archiveDivergentTails(
  cluster: RawCluster,
  admin: Admin,
  topic: string,
  partitionCount: number,
  tails: readonly { readonly partition: number; readonly from: bigint; readonly to: bigint }[],
  archiveTopic: string,
  onProgress: (archived: number) => void = () => {},
): Promise<Map<number, number>> {
  try {
    const replicationFactor = Math.min(3, (await admin.describeCluster()).brokers.length);
    await createTopicsAndWait(admin, [{ topic: archiveTopic, partitions: partitionCount, replicationFactor, configs: ARCHIVE_TOPIC_CONFIGS }]);
  } catch (err) {
    throw kafkaFailure(err, `create the archive topic ${archiveTopic}`);
  }
  const producer = await cluster.initTransactions(archiveTransactionalId(archiveTopic), 60_000);
  const counts = new Map<number, number>();
  let archived = 0;
  for (const { partition, from, to } of tails) {
    const done = await archivedSoFar(cluster, archiveTopic, partition);
    let count = done.count;
    let sequence = 0;
    let chunk: RecordToEncode[] = [];
    const commit = async (): Promise<void> => {
      if (chunk.length === 0) return;
      await cluster.addPartitionsToTxn(producer, archiveTopic, [partition]);
      const batch = encodeBatch(chunk, { producerId: producer.producerId, producerEpoch: producer.producerEpoch, baseSequence: sequence, transactional: true });
      // A topic created a moment ago answers NOT_LEADER for a while: the same batch again (the same
      // sequence, so the broker keeps one copy) once the leader is known.
      for (let attempt = 0; ; attempt++) {
        const [answer] = await cluster.produce({ leader: await cluster.leaderOf(archiveTopic, partition, attempt > 0), partitions: [{ topic: archiveTopic, partition, batch }], transactionalId: producer.transactionalId });
        if (answer?.error === undefined) break;
        if (!answer.error.retriable || attempt >= 30) throw new KafkaAnswerError(`archive ${archiveTopic}-${partition}: ${answer.error.type}`, answer.error);
        await sleep(200);
      }
      await cluster.endTxn(producer, true);
      sequence = nextSequence(sequence, chunk.length);
      count += chunk.length;
      archived += chunk.length;
      onProgress(archived);
      chunk = [];
    };
    const resumeAt = done.lastOriginalOffset === null ? from : done.lastOriginalOffset + 1n;
    for await (const record of readCommitted(cluster, topic, partition, resumeAt > from ? resumeAt : from, to)) {
      chunk.push({
        timestamp: record.timestamp,
        key: record.key,
        value: record.value,
        headers: [
          ...record.headers,
          { key: ARCHIVE_HEADERS.topic, value: Buffer.from(topic) },
          { key: ARCHIVE_HEADERS.partition, value: Buffer.from(String(partition)) },
          { key: ARCHIVE_HEADERS.offset, value: Buffer.from(record.offset.toString()) },
        ],
      });
      if (chunk.length >= 500) await commit();
    }
    await commit();
    counts.set(partition, count);
  }
  return counts;
}

/** The headers an archived record carries besides its own: where it was on the old primary. */
export const ARCHIVE_HEADERS = { topic: 'kmirror.original.topic', partition: 'kmirror.original.partition', offset: 'kmirror.original.offset' } as const;

/** What an archive partition holds already (committed): how many records, and the original offset
 *  of the last. */
async function archivedSoFar(cluster: RawCluster, archiveTopic: string, partition: number): Promise<{ readonly count: number; readonly lastOriginalOffset: bigint | null }> {
  const [start, end] = await Promise.all([
    cluster.listOffsets(archiveTopic, [partition], 'earliest').then((m) => m.get(partition)!),
    cluster.listOffsets(archiveTopic, [partition], 'latest', IsolationLevel.READ_COMMITTED).then((m) => m.get(partition)!),
  ]);
  let count = 0;
  let last: DecodedRecord | undefined;
  for await (const record of readCommitted(cluster, archiveTopic, partition, start, end)) {
    count++;
    last = record;
  }
  const header = last?.headers.find((h) => h.key === ARCHIVE_HEADERS.offset)?.value;
  return { count, lastOriginalOffset: header === undefined || header === null ? null : BigInt(header.toString()) };
}
