// End offsets of many partitions on one cluster, for describe, dry runs, lag waits and RPO: the
// LSO on a source (what read_committed consumers — and so the mirror — can have), the high
// watermark on a destination. Topics are read concurrently; a topic the cluster lacks is skipped.
import { isKmirrorError } from '../domain/errors.ts';
import { partitionKey } from './copier.ts';
import { IsolationLevel, type RawCluster } from './protocol.ts';

export async function endOffsets(
  cluster: RawCluster,
  topics: readonly { readonly topic: string; readonly partitions: readonly number[] }[],
  which: 'source' | 'destination',
  edge: 'earliest' | 'latest' = 'latest',
): Promise<Map<string, bigint>> {
  const out = new Map<string, bigint>();
  const isolation = which === 'source' ? IsolationLevel.READ_COMMITTED : IsolationLevel.READ_UNCOMMITTED;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < topics.length) {
      const { topic, partitions } = topics[next++]!;
      try {
        for (const [p, end] of await cluster.listOffsets(topic, partitions, edge, isolation)) out.set(partitionKey(topic, p), end);
      } catch (err) {
        if (!isKmirrorError(err, 'UNKNOWN_TOPIC')) throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(16, topics.length) }, worker));
  return out;
}
