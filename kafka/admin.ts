// Admin helpers over kafkajs' public Admin API. (DeleteRecords goes through RawCluster: kafkajs'
// deleteTopicRecords fails on topics its metadata cache has not seen; docs/compatibility.md.)
import { setTimeout as sleep } from 'node:timers/promises';
import type { Admin } from 'kafkajs';
import { KmirrorError } from '../domain/errors.ts';

/** Offsets of a partition: log start, high watermark. */
export interface PartitionOffsets {
  readonly partition: number;
  readonly logStart: bigint;
  readonly highWatermark: bigint;
}

export async function topicOffsets(admin: Admin, topic: string): Promise<PartitionOffsets[]> {
  const offsets = await admin.fetchTopicOffsets(topic);
  return offsets
    .map((o) => ({ partition: o.partition, logStart: BigInt(o.low), highWatermark: BigInt(o.high) }))
    .sort((a, b) => a.partition - b.partition);
}

export interface TopicSpec {
  readonly topic: string;
  readonly partitions: number;
  readonly replicationFactor: number;
  readonly configs?: Readonly<Record<string, string>>;
}

/**
 * CreateTopics, then wait until every partition of every topic has a leader in the metadata.
 * kafkajs' own `waitForLeaders` gives up at once when a broker answers UNKNOWN_TOPIC_OR_PARTITION,
 * which a busy broker does for a moment after the create (its metadata cache lags the
 * controller). Returns false when a topic already existed (kafkajs' createTopics answer).
 */
export async function createTopicsAndWait(admin: Admin, specs: readonly TopicSpec[], timeoutMs = 60_000): Promise<boolean> {
  const created = await admin.createTopics({
    topics: specs.map((s) => ({
      topic: s.topic,
      numPartitions: s.partitions,
      replicationFactor: s.replicationFactor,
      configEntries: Object.entries(s.configs ?? {}).map(([name, value]) => ({ name, value })),
    })),
    waitForLeaders: false,
  });
  const deadline = Date.now() + timeoutMs;
  const names = specs.map((s) => s.topic);
  for (;;) {
    let lastError = 'partitions without a leader';
    try {
      const { topics } = await admin.fetchTopicMetadata({ topics: names });
      const ready = specs.every((s) => {
        const partitions = topics.find((t) => t.name === s.topic)?.partitions ?? [];
        return partitions.length >= s.partitions && partitions.every((p) => p.leader >= 0);
      });
      if (ready) return created;
    } catch (err) {
      if (!(err as { retriable?: boolean }).retriable) throw err;
      lastError = (err as Error).message;
    }
    if (Date.now() >= deadline) {
      throw new KmirrorError('CLUSTER_UNREACHABLE', `topics ${names.join(', ')} were created but have no leaders after ${timeoutMs} ms (${lastError})`, { topics: names.join(',') });
    }
    await sleep(100);
  }
}

/** Delete the topics that exist, then wait until the cluster no longer lists them (a topic of the
 *  same name can be created again after that). */
export async function deleteTopicsAndWait(admin: Admin, topics: readonly string[], timeoutMs = 60_000): Promise<void> {
  const listed = async (): Promise<string[]> => {
    const existing = new Set(await admin.listTopics());
    return topics.filter((t) => existing.has(t));
  };
  let remaining = await listed();
  if (remaining.length === 0) return;
  await admin.deleteTopics({ topics: remaining, timeout: timeoutMs });
  const deadline = Date.now() + timeoutMs;
  while ((remaining = await listed()).length > 0) {
    if (Date.now() >= deadline) throw new KmirrorError('CLUSTER_UNREACHABLE', `topics ${remaining.join(', ')} are still listed ${timeoutMs} ms after their deletion`, { topics: remaining.join(',') });
    await sleep(250);
  }
}
