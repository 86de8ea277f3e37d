import { describe, expect, it } from 'vitest';
import { Metrics } from '../../metrics/metrics.ts';
import { ByteBudget } from '../../kafka/budget.ts';
import { emptyCopyStats, type CopyStats, type PartitionProgress } from '../../kafka/copier.ts';
import { parseExposition } from '../support/exposition.ts';

const stats = (over: Partial<CopyStats> = {}): CopyStats => ({ ...emptyCopyStats(), ...over });

const progress = (topic: string, partition: number, next: bigint, end: bigint, oldestUnmirroredMs?: number): PartitionProgress => ({
  topic,
  partition,
  nextOffset: next,
  sourceEnd: end,
  status: 'copying',
  ...(oldestUnmirroredMs === undefined ? {} : { oldestUnmirroredMs }),
});

/** name{labels} → value, from the exposition text (what Prometheus scrapes). */
const samples = async (m: Metrics) => parseExposition(await m.registry.metrics());

describe('Metrics', () => {
  it('reports lag per topic always and per partition only while behind, and drops a copy\'s series when it ends', async () => {
    const m = new Metrics({ partitionSeries: 'lagging' });
    const copy = m.copyReporter('m1');
    const old = Date.now() - 30_000;
    copy.progress([progress('t', 0, 10n, 10n), progress('t', 1, 5n, 25n, old), progress('u', 0, 7n, 7n)], stats());
    let s = await samples(m);
    expect(s.get('kmirror_topic_lag_records{mirror="m1",topic="t"}')).toBe(20);
    expect(s.get('kmirror_topic_lag_records{mirror="m1",topic="u"}')).toBe(0);
    expect(s.get('kmirror_partition_lag_records{mirror="m1",topic="t",partition="1"}')).toBe(20);
    expect(s.has('kmirror_partition_lag_records{mirror="m1",topic="t",partition="0"}')).toBe(false);
    expect(s.get('kmirror_topic_lag_seconds{mirror="m1",topic="t"}')).toBeGreaterThanOrEqual(30);
    expect(s.get('kmirror_topic_lag_seconds{mirror="m1",topic="u"}')).toBe(0);
    expect(s.get('kmirror_copy_partitions{mirror="m1"}')).toBe(3);
    // caught up: the partition series goes, the topic series reads 0
    copy.progress([progress('t', 0, 10n, 10n), progress('t', 1, 25n, 25n), progress('u', 0, 7n, 7n)], stats());
    s = await samples(m);
    expect(s.get('kmirror_topic_lag_records{mirror="m1",topic="t"}')).toBe(0);
    expect(s.get('kmirror_topic_lag_seconds{mirror="m1",topic="t"}')).toBe(0);
    expect([...s.keys()].some((k) => k.startsWith('kmirror_partition_lag'))).toBe(false);
    copy.end();
    s = await samples(m);
    expect([...s.keys()].some((k) => k.startsWith('kmirror_topic_lag') || k.startsWith('kmirror_copy_partitions{'))).toBe(false);
  });

  it('leaves out the age of a partition behind whose records have not been fetched yet (unknown, not 0)', async () => {
    const m = new Metrics({ partitionSeries: 'lagging' });
    m.copyReporter('m1').progress([progress('t', 0, 0n, 50n), progress('t', 1, 0n, 0n)], stats());
    const s = await samples(m);
    expect(s.get('kmirror_partition_lag_records{mirror="m1",topic="t",partition="0"}')).toBe(50);
    expect(s.has('kmirror_partition_lag_seconds{mirror="m1",topic="t",partition="0"}')).toBe(false);
    // nor the topic's: it is not known either (0 would say "caught up")
    expect(s.has('kmirror_topic_lag_seconds{mirror="m1",topic="t"}')).toBe(false);
  });

  it('counts the lag from sampled source ends too: a copier stuck on its destination reports no round', async () => {
    const m = new Metrics({ partitionSeries: 'lagging' });
    const copy = m.copyReporter('m1');
    copy.progress([progress('t', 0, 10n, 10n)], stats());
    copy.sourceEnds(new Map([['t\u00000', 25n], ['other\u00000', 99n]]));
    const s = await samples(m);
    expect(s.get('kmirror_partition_lag_records{mirror="m1",topic="t",partition="0"}')).toBe(15);
    // every unmirrored record came after the copier was last caught up: its age is at most that
    expect(s.get('kmirror_topic_lag_seconds{mirror="m1",topic="t"}')).toBeGreaterThanOrEqual(0);
    expect(s.get('kmirror_topic_lag_seconds{mirror="m1",topic="t"}')).toBeLessThan(5);
    expect([...s.keys()].some((k) => k.includes('topic="other"'))).toBe(false);
    // a sample older than the copier's own view never lowers it
    copy.sourceEnds(new Map([['t\u00000', 12n]]));
    expect((await samples(m)).get('kmirror_topic_lag_records{mirror="m1",topic="t"}')).toBe(15);
  });

  it('exports every partition with partitionSeries=all', async () => {
    const m = new Metrics({ partitionSeries: 'all' });
    m.copyReporter('m1').progress([progress('t', 0, 10n, 10n), progress('t', 1, 5n, 6n)], stats());
    const s = await samples(m);
    expect(s.get('kmirror_partition_lag_records{mirror="m1",topic="t",partition="0"}')).toBe(0);
    expect(s.get('kmirror_partition_lag_records{mirror="m1",topic="t",partition="1"}')).toBe(1);
  });

  it('turns each copy\'s cumulative stats into counter increments, summed over copies', async () => {
    const m = new Metrics({ partitionSeries: 'lagging' });
    const a = m.copyReporter('m1');
    const b = m.copyReporter('m1');
    a.progress([], stats({ records: 100, bytes: 1_000, fillerRecords: 3 }));
    a.progress([], stats({ records: 150, bytes: 1_500, fillerRecords: 3, resyncs: 1 }));
    b.progress([], stats({ records: 10, bytes: 100, mergedBatches: 4, reencodedBatches: 2 }));
    const s = await samples(m);
    expect(s.get('kmirror_mirrored_records_total{mirror="m1"}')).toBe(160);
    expect(s.get('kmirror_mirrored_bytes_total{mirror="m1"}')).toBe(1_600);
    expect(s.get('kmirror_filler_records_total{mirror="m1"}')).toBe(3);
    expect(s.get('kmirror_copier_resyncs_total{mirror="m1"}')).toBe(1);
    expect(s.get('kmirror_merged_batches_total{mirror="m1"}')).toBe(4);
    expect(s.get('kmirror_reencoded_batches_total{mirror="m1"}')).toBe(2);
  });

  it('reports group sync, leases, operations, the budget and partition states', async () => {
    const budget = new ByteBudget(1_000);
    await budget.acquire(300);
    const m = new Metrics({
      partitionSeries: 'lagging',
      budget,
      partitionStates: () => Promise.resolve([{ mirror: 'm1', state: 'MIRRORING', count: 5 }, { mirror: 'm1', state: 'FAILED', count: 1 }]),
    });
    m.groupSyncCompleted('m1', { groups: 4, synced: 2, skippedActive: 1, unchanged: 1, clampedPartitions: 3, durationMs: 5 });
    m.groupSyncFailed('m1');
    m.leaseTakenOver('m1', 4);
    m.leaseLost('m1');
    m.recordsLost('m1', 250n);
    m.operationFinished('startTopics', 'completed', 3.2);
    m.topicSyncRound('m1', 'configs', 2, 0);
    m.topicSyncRound('m1', 'acls', 1, 1);
    m.topicSyncRound('m1', 'acls', 0, undefined);
    m.topicAclsChanged('m1', { granted: 2, revoked: 1, denied: 1 });
    const s = await samples(m);
    expect(s.get('kmirror_topic_sync_changes_total{mirror="m1",sync="configs"}')).toBe(2);
    expect(s.get('kmirror_topic_sync_changes_total{mirror="m1",sync="acls"}')).toBe(1);
    expect(s.get('kmirror_topic_sync_failures_total{mirror="m1",sync="configs"}')).toBe(0);
    expect(s.get('kmirror_topic_sync_failures_total{mirror="m1",sync="acls"}')).toBe(2); // a topic left out, a failed round
    expect(s.get('kmirror_topic_sync_last_success_timestamp_seconds{mirror="m1",sync="configs"}')).toBeGreaterThan(Date.now() / 1000 - 60);
    expect(s.has('kmirror_topic_sync_last_success_timestamp_seconds{mirror="m1",sync="acls"}')).toBe(false);
    expect(s.get('kmirror_topic_acl_changes_total{mirror="m1",change="granted"}')).toBe(2);
    expect(s.get('kmirror_topic_acl_changes_total{mirror="m1",change="denied"}')).toBe(1);
    expect(s.get('kmirror_group_sync_groups_total{mirror="m1",result="synced"}')).toBe(2);
    expect(s.get('kmirror_group_sync_groups_total{mirror="m1",result="skipped_active"}')).toBe(1);
    expect(s.get('kmirror_group_sync_clamped_partitions_total{mirror="m1"}')).toBe(3);
    expect(s.get('kmirror_group_sync_failures_total{mirror="m1"}')).toBe(1);
    expect(s.get('kmirror_group_sync_last_success_timestamp_seconds{mirror="m1"}')).toBeGreaterThan(Date.now() / 1000 - 60);
    expect(s.get('kmirror_lease_takeovers_total{mirror="m1"}')).toBe(4);
    expect(s.get('kmirror_leases_lost_total{mirror="m1"}')).toBe(1);
    expect(s.get('kmirror_records_lost_total{mirror="m1"}')).toBe(250);
    expect(s.get('kmirror_operation_duration_seconds_count{operation="startTopics",outcome="completed"}')).toBe(1);
    expect(s.get('kmirror_operation_duration_seconds_bucket{le="5",operation="startTopics",outcome="completed"}')).toBe(1);
    expect(s.get('kmirror_byte_budget_used_bytes')).toBe(300);
    expect(s.get('kmirror_byte_budget_capacity_bytes')).toBe(1_000);
    expect(s.get('kmirror_partitions{mirror="m1",state="FAILED"}')).toBe(1);
    expect(s.get('kmirror_process_resident_memory_bytes')).toBeGreaterThan(0);
  });

  it('a failing states query leaves those series out and the scrape goes on', async () => {
    const warnings: string[] = [];
    const log = { debug: () => {}, info: () => {}, warn: (msg: string) => warnings.push(msg), error: () => {}, child: () => log, level: 'info' as const };
    const m = new Metrics({ partitionSeries: 'lagging', partitionStates: () => Promise.reject(new Error('db down')), log });
    const s = await samples(m);
    expect([...s.keys()].some((k) => k.startsWith('kmirror_partitions{'))).toBe(false);
    expect(s.get('kmirror_process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(warnings).toEqual(['metrics: reading partition states failed']);
  });
});
