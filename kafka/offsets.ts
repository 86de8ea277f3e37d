// End offsets of many partitions on one cluster, for describe, dry runs, lag waits and RPO: the
// LSO on a source (what read_committed consumers — and so the mirror — can have), the high
// watermark on a destination. One ListOffsets request per leader; a topic the cluster lacks is
// skipped.
import { partitionKey } from './copier.ts';
import { IsolationLevel, type RawCluster } from './protocol.ts';

export async function endOffsets(
  cluster: RawCluster,
  topics: readonly { readonly topic: string; readonly partitions: readonly number[] }[],
  which: 'source' | 'destination',
  edge: 'earliest' | 'latest' = 'latest',
): Promise<Map<string, bigint>> {
  const isolation = which === 'source' ? IsolationLevel.READ_COMMITTED : IsolationLevel.READ_UNCOMMITTED;
  const answers = await cluster.listOffsetsOf(new Map(topics.map((t) => [t.topic, t.partitions])), edge, isolation, true);
  const out = new Map<string, bigint>();
  for (const [topic, ends] of answers) for (const [p, end] of ends) out.set(partitionKey(topic, p), end);
  return out;
}
