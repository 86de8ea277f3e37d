// The round trip A → B → A on stock Kafka (DESIGN §6): failover, writes on the new primary, failback
// (with and without a divergent tail on the old primary), promote back, and mirroring A → B again —
// with every log equal record by record where it must be, and the divergent tail archived intact.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readStream } from '../../db/event-store/read-stream.ts';
import { mirrorStreamId } from '../../domain/events.ts';
import { createTopicsAndWait, deleteTopicsAndWait } from '../../kafka/admin.ts';
import { createKafka } from '../../kafka/connection.ts';
import { readCommitted, verifyPartition } from '../../kafka/verify.ts';
import { controlPlane, operationsOn, type ControlPlane } from '../support/control-plane.ts';
import { messages, sendAll } from '../support/mirror-fixture.ts';
import { destAppConnection, randomName } from '../support/stack.ts';

let t: ControlPlane;
beforeAll(async () => {
  t = await controlPlane();
});
afterAll(async () => t?.close());

const all = (n: number) => Array.from({ length: n }, (_, i) => i);
const { run, refusal, ends, mirrored } = operationsOn(() => t);

/** A → B mirrored, failed over, and the new primary B written by its application. */
async function failedOver(): Promise<{ mirror: string; topic: string }> {
  const { mirror, topic } = await mirrored(2, 200);
  await run('failover', { mirror, allTopics: true });
  const app = createKafka(destAppConnection(), { retries: 5 }).producer();
  await app.connect();
  await app.send({ topic, messages: messages(20, 2, { from: 1_000 }) });
  await app.disconnect();
  return { mirror, topic };
}

/** The old primary takes writes after the failover point (split brain): 2 records in partition 0, 1 in 1. */
async function splitBrain(topic: string): Promise<void> {
  const stray = t.sourceKafka.producer();
  await stray.connect();
  await stray.send({ topic, messages: [{ partition: 0, key: 'late-1', value: 'written on the old primary' }, { partition: 0, key: 'late-2', value: 'also' }, { partition: 1, key: 'late-3', value: 'and here' }] });
  await stray.disconnect();
}

async function roundTrip(mirror: string, topic: string): Promise<void> {
  const reverse = `${mirror}-reverse`;
  // The old primary mirrors the new one until nothing is behind, then it is promoted back.
  await expect.poll(() => ends('source', topic, 2), { timeout: 30_000 }).toEqual(await ends('dest', topic, 2));
  const promoted = await run('promote', { mirror: reverse, allTopics: true });
  expect(promoted).toMatchObject({ states: { STOPPED: 2 } });
  for (const p of all(2)) expect(await verifyPartition(t.dest, t.source, topic, p)).toMatchObject({ equal: true });
  // A → B again: the original mirror restarts its stopped topic and continues where both logs end.
  await run('startTopics', { mirror, topics: [topic] });
  const producer = t.sourceKafka.producer();
  await producer.connect();
  await producer.send({ topic, messages: messages(10, 2, { from: 2_000 }) });
  await producer.disconnect();
  await expect.poll(() => ends('dest', topic, 2), { timeout: 30_000 }).toEqual(await ends('source', topic, 2));
  for (const p of all(2)) expect(await verifyPartition(t.source, t.dest, topic, p)).toMatchObject({ equal: true });
}

describe('failback', () => {
  it('without a divergent tail: the old primary continues from the last mirrored offset', async () => {
    const { mirror, topic } = await failedOver();
    const dry = await run('failback', { mirror, dryRun: true });
    expect(dry.topics).toMatchObject([{ topic, action: 'continue', archiveTopic: null, partitions: [{ reason: 'in-sync', lastMirrored: '100', oldPrimaryEnd: '100' }, { reason: 'in-sync' }] }]);
    const result = await run('failback', { mirror, actor: 'oncall', reason: 'east is back' });
    expect(result).toMatchObject({ reverseMirror: `${mirror}-reverse`, started: { states: { MIRRORING: 2 } } });
    await roundTrip(mirror, topic);
    const decided = (await readStream(t.db, mirrorStreamId(mirror))).find((e) => e.type === 'FailbackTopicPrepared');
    expect(decided).toMatchObject({ data: { topic, action: 'continue', archiveTopic: null }, metadata: { actor: 'oncall', reason: 'east is back' } });
  });

  it('with a divergent tail: dry run lists it; the run archives it, recreates the topic on the old primary and re-mirrors it', async () => {
    const { mirror, topic } = await failedOver();
    await splitBrain(topic);
    const dry = await run('failback', { mirror, dryRun: true });
    expect(dry.topics).toMatchObject([
      {
        topic,
        action: 'recreate',
        partitions: [
          { reason: 'divergent-tail', divergent: { from: '100', to: '102', records: 2 } },
          { reason: 'divergent-tail', divergent: { from: '100', to: '101', records: 1 } },
        ],
      },
    ]);
    expect(dry.topics[0]!.archiveTopic).toMatch(new RegExp(`^${topic}\\.kmirror-divergent-\\d{8}-\\d{6}$`));
    expect(await ends('source', topic, 2)).toEqual([102n, 101n]); // nothing changed
    const result = await run('failback', { mirror });
    const archiveTopic = result.topics[0]!.archiveTopic!;
    t.track(archiveTopic);
    expect(result.topics[0]).toMatchObject({ action: 'recreate', partitions: [{ divergent: { records: 2 } }, { divergent: { records: 1 } }] });
    // The archive holds exactly the divergent records, with where they came from.
    const archived: string[] = [];
    for (const p of all(2)) for await (const r of readCommitted(t.source, archiveTopic, p, 0n, (await t.source.listOffsets(archiveTopic, [p], 'latest')).get(p)!)) archived.push(`${r.key}@${r.headers.find((h) => h.key === 'kmirror.original.offset')?.value}`);
    expect(archived.sort()).toEqual(['late-1@100', 'late-2@101', 'late-3@100']);
    await roundTrip(mirror, topic);
    const decided = (await readStream(t.db, mirrorStreamId(mirror))).find((e) => e.type === 'FailbackTopicPrepared');
    expect(decided?.data).toMatchObject({ topic, action: 'recreate', archiveTopic, partitions: [{ divergent: { from: '100', to: '102', records: 2 } }, { divergent: { records: 1 } }] });
  });

  it('with a divergent tail and divergent "discard": no archive, the topic recreated and re-mirrored, the decision recorded', async () => {
    const { mirror, topic } = await failedOver();
    await splitBrain(topic);
    const topicsBefore = new Set(await t.sourceAdmin.listTopics());
    const result = await run('failback', { mirror, divergent: 'discard', actor: 'oncall', reason: 'the late writes were test traffic' });
    expect(result.topics[0]).toMatchObject({ topic, action: 'recreate', archiveTopic: null, partitions: [{ divergent: { records: 2 } }, { divergent: { records: 1 } }] });
    expect((await t.sourceAdmin.listTopics()).filter((n) => !topicsBefore.has(n) && n.startsWith(topic))).toEqual([]);
    await roundTrip(mirror, topic);
    const decided = (await readStream(t.db, mirrorStreamId(mirror))).find((e) => e.type === 'FailbackTopicPrepared');
    expect(decided).toMatchObject({
      // The discarded ranges and how many records they held are recorded.
      data: { topic, action: 'recreate', archiveTopic: null, partitions: [{ divergent: { from: '100', to: '102', records: 2 } }, { divergent: { from: '100', to: '101', records: 1 } }] },
      metadata: { actor: 'oncall', reason: 'the late writes were test traffic' },
    });
  });

  it('with a boundary mismatch (the old primary rewritten, as an unclean election leaves it): its own records from where the logs part are archived, then the topic is re-mirrored', async () => {
    const { mirror, topic } = await failedOver();
    // A's partition 0 now holds the same first 60 records, then 40 of its own; partition 1 is unchanged.
    const original = messages(200, 2);
    await deleteTopicsAndWait(t.sourceAdmin, [topic]);
    await createTopicsAndWait(t.sourceAdmin, [{ topic, partitions: 2, replicationFactor: 1, configs: {} }]);
    const rewrite = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await rewrite.connect();
    const own = Array.from({ length: 40 }, (_, i) => ({ partition: 0, key: `own-${i}`, value: 'only on the old primary' }));
    await sendAll(rewrite, topic, [...original.filter((m) => m.partition === 0).slice(0, 60), ...own, ...original.filter((m) => m.partition === 1)]);
    await rewrite.disconnect();
    expect(await ends('source', topic, 2)).toEqual([100n, 100n]);

    const dry = await run('failback', { mirror, dryRun: true });
    expect(dry.topics).toMatchObject([
      { topic, action: 'recreate', partitions: [{ reason: 'boundary-mismatch', divergent: { from: '60', to: '100', records: 40 } }, { reason: 'in-sync', divergent: null }] },
    ]);
    const result = await run('failback', { mirror });
    const archiveTopic = result.topics[0]!.archiveTopic!;
    t.track(archiveTopic);
    const archived: string[] = [];
    for await (const r of readCommitted(t.source, archiveTopic, 0, 0n, (await t.source.listOffsets(archiveTopic, [0], 'latest')).get(0)!)) archived.push(`${r.key}@${r.headers.find((h) => h.key === 'kmirror.original.offset')?.value}`);
    expect(archived).toEqual(own.map((m, i) => `${m.key}@${60 + i}`));
    expect(await t.source.listOffsets(archiveTopic, [1], 'latest')).toEqual(new Map([[1, 0n]]));
    await roundTrip(mirror, topic);
  });

  it('a partition empty on both sides at the failover (no position recorded) continues with its topic instead of recreating it', async () => {
    const { mirror, topic } = await mirrored(2, 0);
    // Only partition 0 gets records before the failover; partition 1 stays empty on both sides.
    const producer = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await producer.send({ topic, messages: [0, 1, 2].map((i) => ({ partition: 0, key: `k${i}`, value: `v${i}` })) });
    await producer.disconnect();
    await expect.poll(() => ends('dest', topic, 2), { timeout: 30_000 }).toEqual([3n, 0n]);
    await run('failover', { mirror, allTopics: true });
    // The new primary's application writes both partitions, the empty one from offset 0.
    const app = createKafka(destAppConnection(), { retries: 5 }).producer();
    await app.connect();
    await app.send({ topic, messages: messages(20, 2, { from: 1_000 }) });
    await app.disconnect();
    const dry = await run('failback', { mirror, dryRun: true });
    expect(dry.topics).toMatchObject([
      { topic, action: 'continue', archiveTopic: null, partitions: [{ partition: 0, reason: 'in-sync', lastMirrored: '3' }, { partition: 1, reason: 'empty', lastMirrored: null, oldPrimaryEnd: '0', divergent: null }] },
    ]);
    await run('failback', { mirror });
    await roundTrip(mirror, topic);
  });

  it('partitions that reached the new primary with nothing, and a partition the old primary grew, are archived whole — never dropped with the recreated topic', async () => {
    // Failed over while both partitions were empty: no position is recorded for them.
    const { mirror, topic } = await mirrored(2, 0);
    await run('failover', { mirror, allTopics: true });
    // The old primary then took writes, and grew a third partition the mirror never saw.
    await t.sourceAdmin.createPartitions({ topicPartitions: [{ topic, count: 3 }] });
    await splitBrain(topic);
    const stray = t.sourceKafka.producer();
    await stray.connect();
    await stray.send({ topic, messages: [{ partition: 2, key: 'grown-1', value: 'only in the grown partition' }] });
    await stray.disconnect();

    const dry = await run('failback', { mirror, dryRun: true });
    expect(dry.topics).toMatchObject([
      {
        topic,
        action: 'recreate',
        partitionCount: 2,
        partitions: [
          { partition: 0, reason: 'no-position', lastMirrored: null, divergent: { from: '0', to: '2', records: 2 } },
          { partition: 1, reason: 'no-position', divergent: { from: '0', to: '1', records: 1 } },
          { partition: 2, reason: 'no-position', divergent: { from: '0', to: '1', records: 1 } },
        ],
      },
    ]);
    const result = await run('failback', { mirror });
    const archiveTopic = result.topics[0]!.archiveTopic!;
    t.track(archiveTopic);
    const archived: string[] = [];
    for (const p of all(3)) for await (const r of readCommitted(t.source, archiveTopic, p, 0n, (await t.source.listOffsets(archiveTopic, [p], 'latest')).get(p)!)) archived.push(`${r.key}@${p}`);
    expect(archived.sort()).toEqual(['grown-1@2', 'late-1@0', 'late-2@0', 'late-3@1']);
    // Recreated with the new primary's 2 partitions, and mirrored back.
    expect((await t.source.partitions(topic)).length).toBe(2);
    await roundTrip(mirror, topic);
  });

  it('a failback run again after it prepared a topic reuses that decision (the topic gone, the archive named) and refuses a topic the reverse mirror owns', async () => {
    const { mirror, topic } = await failedOver();
    await splitBrain(topic);
    const first = await run('failback', { mirror });
    const archiveTopic = first.topics[0]!.archiveTopic!;
    t.track(archiveTopic);
    // The reverse mirror owns the recreated topic now: a second failback must not touch it.
    expect(await refusal('failback', { mirror })).toMatchObject({ code: 'TOPIC_ALREADY_IN_CLUSTER_MIRROR', message: expect.stringContaining(`${mirror}-reverse`) });
    expect(await refusal('failback', { mirror, dryRun: true })).toMatchObject({ code: 'TOPIC_ALREADY_IN_CLUSTER_MIRROR' });
    const prepared = (await readStream(t.db, mirrorStreamId(mirror))).filter((e) => e.type === 'FailbackTopicPrepared');
    expect(prepared).toHaveLength(1);
    await roundTrip(mirror, topic);
  });

  it('refuses a mirror that never failed over', async () => {
    const mirror = randomName('m');
    const topic = await t.sourceTopic({ partitions: 1 });
    await run('createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst' });
    await run('startTopics', { mirror, topics: [topic] });
    expect(await refusal('failback', { mirror })).toMatchObject({ code: 'MIRROR_TOPIC_NOT_STOPPED', message: expect.stringContaining('fail over first') });
  });
});
