// Consumer-group offset sync (kafka/group-offsets.ts) on the stack's two clusters: offsets are
// copied for groups with no active member on the destination, clamped to what the destination has
// (VK12) and raised to its log start, never moved backwards, and an active group is left alone.
import { beforeEach, describe, expect, it } from 'vitest';
import { deleteTopicsAndWait } from '../../kafka/admin.ts';
import { planGroupOffsets, syncGroupOffsets } from '../../kafka/group-offsets.ts';
import { sourceTopicSpecs } from '../../kafka/mirror-topics.ts';
import { messages, sendAll, useMirrorFixture, type MirrorFixture } from '../support/mirror-fixture.ts';
import { randomName } from '../support/stack.ts';

const fixture = useMirrorFixture();
let f: MirrorFixture;
beforeEach(() => {
  f = fixture();
});

const committed = async (group: string, topic: string) =>
  (await f.destAdmin.fetchOffsets({ groupId: group, topics: [topic] }))[0]!.partitions.sort((a, b) => a.partition - b.partition).map((p) => p.offset);

describe('consumer-group offset sync', () => {
  it('copies, clamps to the destination end, keeps a destination commit ahead, and skips an active group', async () => {
    const topic = await f.topicPair({ partitions: 2 });
    const src = await f.producer();
    await sendAll(src, topic, messages(200, 2)); // source: 100 per partition
    const dst = f.destKafka.producer();
    await dst.connect();
    await dst.send({ topic, messages: messages(100, 2) }); // destination: 50 per partition (the mirror lags)
    await dst.disconnect();
    const [behind, within, ahead, busy, beyond] = ['behind', 'within', 'ahead', 'busy', 'beyond'].map((n) => randomName(n));
    const commit = (cluster: typeof f.source, group: string, offset: bigint) =>
      cluster.commitGroupOffsets(group, [0, 1].map((partition) => ({ topic, partition, offset })));
    await commit(f.source, behind!, 80n); // the destination has only 50: clamped
    await commit(f.source, within!, 20n);
    await commit(f.source, ahead!, 30n);
    await commit(f.dest, ahead!, 45n); // a destination commit ahead of the target is kept
    await commit(f.source, beyond!, 30n);
    await commit(f.dest, beyond!, 70n); // … but not one beyond the destination's end (50): set back
    await commit(f.source, busy!, 10n);
    // `busy` has a member on the destination.
    const consumer = f.destKafka.consumer({ groupId: busy!, sessionTimeout: 10_000 });
    await consumer.connect();
    await consumer.subscribe({ topic });
    await consumer.run({ eachMessage: async () => {} });
    await expect.poll(async () => (await f.destAdmin.describeGroups([busy!])).groups[0]!.members.length, { timeout: 30_000 }).toBeGreaterThan(0);

    const partitions = [0, 1].map((partition) => ({ topic, partition }));
    const filter = { include: [`(${[behind, within, ahead, busy, beyond].join('|')})`], exclude: [] };
    const plans = await planGroupOffsets({ admin: f.sourceAdmin }, { admin: f.destAdmin, raw: f.dest }, partitions, filter);
    const byGroup = new Map(plans.map((p) => [p.group, p]));
    expect(byGroup.get(behind!)).toMatchObject({ status: 'synced', partitions: [{ target: 50n, clamped: true, action: 'set' }, { target: 50n, clamped: true }] });
    expect(byGroup.get(within!)).toMatchObject({ status: 'synced', partitions: [{ target: 20n, clamped: false, action: 'set' }, { target: 20n }] });
    expect(byGroup.get(ahead!)).toMatchObject({ status: 'unchanged', partitions: [{ target: 30n, destinationCommitted: 45n, action: 'kept-ahead' }, { action: 'kept-ahead' }] });
    expect(byGroup.get(busy!)).toMatchObject({ status: 'skipped-active' });
    expect(byGroup.get(beyond!)).toMatchObject({ status: 'synced', partitions: [{ target: 30n, destinationCommitted: 70n, destinationEnd: 50n, action: 'set' }, { action: 'set' }] });

    const { summary } = await syncGroupOffsets({ admin: f.sourceAdmin }, { admin: f.destAdmin, raw: f.dest }, partitions, filter);
    expect(summary).toMatchObject({ groups: 5, synced: 3, skippedActive: 1, unchanged: 1, clampedPartitions: 2 });
    expect(await committed(beyond!, topic)).toEqual(['30', '30']);
    expect(await committed(behind!, topic)).toEqual(['50', '50']);
    expect(await committed(within!, topic)).toEqual(['20', '20']);
    expect(await committed(ahead!, topic)).toEqual(['45', '45']);
    await consumer.disconnect();
    // Once the consumer has left, the group is synced too — never past what the destination has.
    const again = await syncGroupOffsets({ admin: f.sourceAdmin }, { admin: f.destAdmin, raw: f.dest }, partitions, { include: [busy!], exclude: [] });
    expect(again.summary).toMatchObject({ synced: 1 });
    expect(await committed(busy!, topic)).toEqual(['10', '10']);
    // A guard withholding partition 1 (it left the state the sync was planned for): only 0 is committed.
    await commit(f.source, within!, 25n);
    const guarded = await syncGroupOffsets({ admin: f.sourceAdmin }, { admin: f.destAdmin, raw: f.dest }, partitions, { include: [within!], exclude: [] }, (run) => run((_, partition) => partition === 0));
    expect(guarded.summary).toMatchObject({ synced: 1 });
    expect(await committed(within!, topic)).toEqual(['25', '20']);
    // The filter leaves other groups out.
    expect(await planGroupOffsets({ admin: f.sourceAdmin }, { admin: f.destAdmin, raw: f.dest }, partitions, { include: ['nothing-matches'], exclude: [] })).toEqual([]);
  });

  it("raises a commit below the destination's log start to that start (the records before it are gone there)", async () => {
    const topic = await f.topicPair({ partitions: 1 });
    const src = await f.producer();
    await sendAll(src, topic, messages(100, 1));
    const dst = f.destKafka.producer();
    await dst.connect();
    await dst.send({ topic, messages: messages(100, 1) });
    await dst.disconnect();
    await f.dest.deleteRecords(topic, new Map([[0, 40n]])); // the destination's retention moved on
    const group = randomName('early');
    await f.source.commitGroupOffsets(group, [{ topic, partition: 0, offset: 5n }]);
    const partitions = [{ topic, partition: 0 }];
    const plans = await planGroupOffsets({ admin: f.sourceAdmin }, { admin: f.destAdmin, raw: f.dest }, partitions, { include: [group], exclude: [] });
    expect(plans).toMatchObject([{ group, status: 'synced', partitions: [{ sourceCommitted: 5n, destinationEnd: 100n, target: 40n, clamped: false, action: 'set' }] }]);
    await syncGroupOffsets({ admin: f.sourceAdmin }, { admin: f.destAdmin, raw: f.dest }, partitions, { include: [group], exclude: [] });
    expect(await committed(group, topic)).toEqual(['40']);
  });

  it('a synced source topic deleted afterwards does not break the shared admin (regression: every later start failed with UNKNOWN_TOPIC)', async () => {
    const [gone, other] = [await f.topicPair({ partitions: 1 }), await f.topicPair({ partitions: 1 })];
    const src = await f.producer();
    await sendAll(src, gone, messages(10, 1));
    const group = randomName('deleted-topic');
    await f.source.commitGroupOffsets(group, [{ topic: gone, partition: 0, offset: 5n }]);
    const filter = { include: [group], exclude: [] };
    expect((await syncGroupOffsets({ admin: f.sourceAdmin }, { admin: f.destAdmin, raw: f.dest }, [{ topic: gone, partition: 0 }], filter)).summary).toMatchObject({ synced: 1 });
    // The topic's owner deletes it with an admin of its own (the shared admin must not care).
    const owner = f.sourceKafka.admin();
    await owner.connect();
    await deleteTopicsAndWait(owner, [gone]);
    await owner.disconnect();
    await expect(sourceTopicSpecs(f.sourceAdmin, [other])).resolves.toMatchObject([{ topic: other, partitionCount: 1 }]);
  });
});
