// Admin helpers over kafkajs' public Admin API, with the kafkajs caveats found by
// test/kafka/compat.int.test.ts handled in one place (docs/compatibility.md).
import type { Admin } from 'kafkajs';

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

/**
 * DeleteRecords: move each partition's log start up to `before`. kafkajs finds the leaders in
 * its cached metadata, which lacks topics the admin has not looked at yet (it then fails with
 * "Could not find the leader"); fetching the topic's offsets first loads them.
 */
export async function deleteRecordsBefore(admin: Admin, topic: string, partitions: ReadonlyMap<number, bigint>): Promise<void> {
  await admin.fetchTopicOffsets(topic);
  await admin.deleteTopicRecords({
    topic,
    partitions: [...partitions].map(([partition, before]) => ({ partition, offset: before.toString() })),
  });
}
