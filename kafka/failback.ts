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
//                                                    then part) is a divergent range like a tail.
// A topic is recreated when any of its partitions needs it.
import type { Admin } from 'kafkajs';
import { createTopicsAndWait } from './admin.ts';
import { boundaryChecksum, partitionKey, recordsAt } from './copier.ts';
import { kafkaFailure } from './errors.ts';
import { endOffsets } from './offsets.ts';
import { KafkaAnswerError, type RawCluster } from './protocol.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { readCommitted, recordChecksum } from './verify.ts';
import { encodeBatch, nextSequence, type RecordToEncode } from './wire.ts';

export type FailbackAction = 'continue' | 'recreate';

export interface PartitionFailback {
  readonly topic: string;
  readonly partition: number;
  /** The last mirrored offset recorded at the failover (null: never recorded). */
  readonly lastMirrored: string | null;
  readonly oldPrimaryStart: string;
  readonly oldPrimaryEnd: string;
  readonly action: FailbackAction;
  readonly reason: 'in-sync' | 'behind' | 'divergent-tail' | 'boundary-mismatch' | 'no-position' | 'missing';
  /** [from, to) of the old primary that the new primary does not hold: the records it took after
   *  the failover point, or, on a boundary mismatch, everything from the first offset where the
   *  two logs differ. Archived (or discarded on request) before the topic is recreated; null when
   *  there is none. */
  readonly divergent: { readonly from: string; readonly to: string } | null;
}

export interface TopicFailback {
  readonly topic: string;
  readonly action: FailbackAction;
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
  topics: readonly { readonly topic: string; readonly partitions: readonly number[] }[],
  recorded: ReadonlyMap<string, { readonly offset: bigint; readonly checksum: string } | null>,
): Promise<TopicFailback[]> {
  const [ends, starts, newStarts] = await Promise.all([
    endOffsets(oldPrimary, topics, 'destination'),
    endOffsets(oldPrimary, topics, 'destination', 'earliest'),
    endOffsets(newPrimary, topics, 'source', 'earliest'),
  ]);
  const boundaries = topics.flatMap(({ topic, partitions }) =>
    partitions.flatMap((partition) => {
      const k = partitionKey(topic, partition);
      const end = ends.get(k);
      const lmo = recorded.get(k);
      if (end === undefined || end === 0n) return [];
      // The record to compare: the one before LMO, or A's last when A ends before LMO.
      const at = lmo === null || lmo === undefined ? end - 1n : (end < lmo.offset ? end : lmo.offset) - 1n;
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
    if (lmo === null) return { ...base, action: 'recreate', reason: 'no-position', divergent: null };
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
  for (const { topic, partitions } of topics) {
    const planned: PartitionFailback[] = [];
    for (const partition of partitions) planned.push(await planPartition(topic, partition));
    plans.push({ topic, action: planned.some((p) => p.action === 'recreate') ? 'recreate' : 'continue', partitions: planned });
  }
  return plans;
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
    if (x !== undefined && y !== undefined && boundaryChecksum(x, mid) === boundaryChecksum(y, mid)) lo = mid + 1n;
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

/**
 * Copy the divergent tails of a topic into a side topic on the old primary (same partition count;
 * keys, values, headers, timestamps kept; headers `kmirror.original.topic/partition/offset` added),
 * as read_committed consumers saw them. Returns the records archived per partition.
 */
export async function archiveDivergentTails(
  cluster: RawCluster,
  admin: Admin,
  topic: string,
  partitionCount: number,
  tails: readonly { readonly partition: number; readonly from: bigint; readonly to: bigint }[],
  archiveTopic: string,
): Promise<Map<number, number>> {
  try {
    await createTopicsAndWait(admin, [{ topic: archiveTopic, partitions: partitionCount, replicationFactor: Math.min(3, (await admin.describeCluster()).brokers.length) }]);
  } catch (err) {
    throw kafkaFailure(err, `create the archive topic ${archiveTopic}`);
  }
  const counts = new Map<number, number>();
  const stamp = await cluster.initProducerId();
  for (const { partition, from, to } of tails) {
    let sequence = 0;
    let chunk: RecordToEncode[] = [];
    let count = 0;
    const flush = async (): Promise<void> => {
      if (chunk.length === 0) return;
      const batch = encodeBatch(chunk, { ...stamp, baseSequence: sequence });
      // A topic created a moment ago answers NOT_LEADER for a while: the same batch again (the same
      // sequence, so the broker keeps one copy) once the leader is known.
      for (let attempt = 0; ; attempt++) {
        const [answer] = await cluster.produce({ leader: await cluster.leaderOf(archiveTopic, partition, attempt > 0), partitions: [{ topic: archiveTopic, partition, batch }] });
        if (answer?.error === undefined) break;
        if (!answer.error.retriable || attempt >= 30) throw new KafkaAnswerError(`archive ${archiveTopic}-${partition}: ${answer.error.type}`, answer.error);
        await sleep(200);
      }
      sequence = nextSequence(sequence, chunk.length);
      chunk = [];
    };
    for await (const record of readCommitted(cluster, topic, partition, from, to)) {
      chunk.push({
        timestamp: record.timestamp,
        key: record.key,
        value: record.value,
        headers: [
          ...record.headers,
          { key: 'kmirror.original.topic', value: Buffer.from(topic) },
          { key: 'kmirror.original.partition', value: Buffer.from(String(partition)) },
          { key: 'kmirror.original.offset', value: Buffer.from(record.offset.toString()) },
        ],
      });
      count++;
      if (chunk.length >= 500) await flush();
    }
    await flush();
    counts.set(partition, count);
  }
  return counts;
}
