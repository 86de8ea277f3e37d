// Seeking by time on a mirror's destination (issue #10, item 10). A broker answers offsetsForTimes
// (ListOffsets by timestamp) with the first record of any kind whose timestamp is at or after the
// one asked, control batches included. On a destination, each gap the copier filled ends in an
// ABORT marker that the destination's transaction coordinator stamps with its own clock at fill
// time — stock Kafka lets no client choose it — so after a catch-up the broker can answer an offset
// far earlier than the source would (a week of a transactional topic mirrored at once: any time in
// that week answers near its first gap). This lookup answers what a consumer seeking by time
// wants: the first record a read_committed consumer sees whose timestamp is at or after the one
// asked. It starts from the broker's answer, which is never later (every record before it is
// older), and reads committed records from there (gap fillers carry no timestamp, markers are
// never visible), so it needs only the destination: it works after a failover with the source gone.
import { isKmirrorError, KmirrorError } from '../domain/errors.ts';
import { readCommitted } from './verify.ts';
import { IsolationLevel, type PartitionsByTopic, type RawCluster } from './protocol.ts';

export interface TimeLookup {
  readonly topic: string;
  readonly partition: number;
  /** The first committed record at or after the timestamp; null when none is (a consumer seeking
   *  there starts at `end`, as Kafka's own reset does). */
  readonly offset: bigint | null;
  /** The broker's own offsetsForTimes answer; null when it has none. */
  readonly broker: bigint | null;
  /** The partition's last stable offset when read. */
  readonly end: bigint;
  /** Why this partition has no answer (its read failed twice); the others are answered. */
  readonly error?: KmirrorError;
}

/**
 * For each partition, the first record a read_committed consumer sees whose timestamp is ≥
 * `timestamp` (ms since the epoch), found from the broker's own answer onwards. `onPartition` is
 * called as each partition is done (progress on long reads).
 */
export async function offsetsForTime(
  cluster: RawCluster,
  partitions: PartitionsByTopic,
  timestamp: bigint,
  onPartition?: (done: TimeLookup) => void,
): Promise<TimeLookup[]> {
  const [answers, ends] = await Promise.all([cluster.listOffsetsOf(partitions, timestamp), cluster.listOffsetsOf(partitions, 'latest', IsolationLevel.READ_COMMITTED)]);
  const out: TimeLookup[] = [];
  for (const [topic, ps] of partitions) {
    for (const partition of ps) {
      let done: TimeLookup;
      try {
        done = await lookup(cluster, topic, partition, timestamp, answers.get(topic)?.get(partition) ?? -1n, ends.get(topic)!.get(partition)!);
      } catch {
        // Retention may have removed the broker's answer since it was read (OFFSET_OUT_OF_RANGE),
        // or the leader moved: ask again, once.
        try {
          const again = (m: Map<string, Map<number, bigint>>) => m.get(topic)?.get(partition) ?? -1n;
          const one = new Map([[topic, [partition]]]);
          const [answer, end] = await Promise.all([cluster.listOffsetsOf(one, timestamp), cluster.listOffsetsOf(one, 'latest', IsolationLevel.READ_COMMITTED)]);
          done = await lookup(cluster, topic, partition, timestamp, again(answer), again(end));
        } catch (err) {
          const error = isKmirrorError(err) ? err : new KmirrorError('CLUSTER_UNREACHABLE', `offsets-for-time ${topic}-${partition}: ${(err as Error).message}`, { topic, partition });
          done = { topic, partition, offset: null, broker: null, end: ends.get(topic)!.get(partition)!, error };
        }
      }
      out.push(done);
      onPartition?.(done);
    }
  }
  return out;
}

/** One partition: from the broker's answer (`answer`, -1 for none), the first committed record at
 *  or after `timestamp` below `end`. */
async function lookup(cluster: RawCluster, topic: string, partition: number, timestamp: bigint, answer: bigint, end: bigint): Promise<TimeLookup> {
  const broker = answer < 0n ? null : answer;
  let offset: bigint | null = null;
  if (broker !== null && broker < end) {
    // A batch whose largest timestamp is earlier holds no record at or after it: not decoded.
    for await (const record of readCommitted(cluster, topic, partition, broker, end, undefined, (batch) => batch.maxTimestamp >= timestamp)) {
      if (record.timestamp >= timestamp) {
        offset = record.offset;
        break;
      }
    }
  }
  return { topic, partition, offset, broker, end };
}
