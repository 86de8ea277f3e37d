// Admin helpers over kafkajs' public Admin API. (DeleteRecords goes through RawCluster: kafkajs'
// deleteTopicRecords fails on topics its metadata cache has not seen; docs/compatibility.md.)
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
