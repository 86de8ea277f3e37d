// The control plane on the real stack: createMirror, startTopics, pauseTopics and resumeTopics as
// Temporal workflows run by a worker built like the product's, the runner copying, and the event
// log recording each step with who asked. Bad requests fail with their code and append nothing.
import kafkajs from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitOperation, startOperation, type OperationInputs } from '../../client/index.ts';
import { readStream } from '../../db/event-store/read-stream.ts';
import { describeMirror } from '../../db/projections/describe-mirror.ts';
import { mirrorStreamId } from '../../domain/events.ts';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { pauseUpdate, progressQuery, runnerWorkflowId, type RunnerRequest } from '../../workflows/messages.ts';
import { MirrorOperation, MirrorTopic } from '../../workflows/search-attributes.ts';
import { verifyPartition } from '../../kafka/verify.ts';
import { createTopicsAndWait } from '../../kafka/admin.ts';
import { createKafka } from '../../kafka/connection.ts';
import { messages, sendAll } from '../support/mirror-fixture.ts';
import { controlPlane, operationsOn, type ControlPlane } from '../support/control-plane.ts';
import { destAppConnection, randomName, sourceConnection } from '../support/stack.ts';
import { registerCluster } from '../../db/cluster-store.ts';

let t: ControlPlane;
beforeAll(async () => {
  t = await controlPlane({ env: { KMIRROR_DISCOVERY_INTERVAL_MS: '2000', KMIRROR_GROUP_SYNC_INTERVAL_MS: '2000' } });
});
afterAll(async () => t?.close());

const { run, refusal, ends, mirrored } = operationsOn(() => t);

/** Pause the mirror, let the source grow by `more`, cut the source's log at `cut` (DeleteRecords
 *  stands in for retention overtaking the paused partitions), resume. */
async function retentionOvertakes(mirror: string, topic: string, more: Parameters<typeof sendAll>[2], cut: Map<number, bigint>): Promise<void> {
  await run('pauseTopics', { mirror, allTopics: true });
  const producer = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  await sendAll(producer, topic, more);
  await producer.disconnect();
  await t.source.deleteRecords(topic, cut);
  await run('resumeTopics', { mirror, allTopics: true });
}

describe('a mirror from the first request to copying', () => {
  const mirror = randomName('m');
  let topic: string;

  it('create, start: the destination topic is created, aligned, read-only, and the data arrives at the same offsets', async () => {
    topic = await t.sourceTopic({ partitions: 3 });
    t.track(topic);
    const producer = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await sendAll(producer, topic, messages(3_000, 3));
    const created = await run('createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst', actor: 'alice', reason: 'DR for orders' });
    expect(created).toMatchObject({ mirror, runnerWorkflowId: `mirror:${mirror}`, sourceCluster: { cluster: 'src', brokers: 1 } });

    const started = await run('startTopics', { mirror, topics: [topic], actor: 'alice', reason: 'go' });
    // The progress query of the completed start: every partition, its state and last mirrored offset.
    const startId = (await readStream(t.db, mirrorStreamId(mirror))).find((e) => e.type === 'MirrorTopicAdded')!.metadata.workflowId!;
    expect(await t.temporal.client.workflow.getHandle(startId).query(progressQuery)).toMatchObject({
      workflow: 'startTopics',
      done: true,
      total: 3,
      states: { MIRRORING: 3 },
      partitions: [0, 1, 2].map((partition) => ({ topic, partition, state: 'MIRRORING', lastMirroredOffset: expect.toBeOneOf([null, expect.stringMatching(/^\d+$/)]) })),
    });
    expect(started).toMatchObject({ mirror, partitions: 3, states: { MIRRORING: 3 }, failed: [], readOnly: { enforced: true, denied: ['User:app'] } });
    expect(started.topics).toEqual([{ topic, partitionCount: 3, replicationFactor: 1, sourceReplicationFactor: 1, created: true }]);
    await expect.poll(() => ends('dest', topic, 3), { timeout: 30_000 }).toEqual(await ends('source', topic, 3));
    // More data while it runs arrives too.
    await sendAll(producer, topic, messages(300, 3, { from: 3_000 }));
    await expect.poll(() => ends('dest', topic, 3), { timeout: 30_000 }).toEqual([1_100n, 1_100n, 1_100n]);
    for (const p of [0, 1, 2]) expect(await verifyPartition(t.source, t.dest, topic, p)).toMatchObject({ equal: true, recordsCompared: 1_100 });
    await producer.disconnect();

    // Read-only: the destination's app user can write a topic of its own, not the mirror topic.
    const app = createKafka(destAppConnection(), { retries: 0 }).producer();
    await app.connect();
    await expect(app.send({ topic, messages: [{ value: 'foreign' }] })).rejects.toMatchObject({ type: 'TOPIC_AUTHORIZATION_FAILED' });
    await app.disconnect();

    // The log says what happened and who asked.
    const events = await readStream(t.db, mirrorStreamId(mirror));
    expect(events.map((e) => e.type).slice(0, 5)).toEqual(['MirrorCreated', 'MirrorTopicAdded', 'PartitionTruncationCompleted', 'PartitionTruncationCompleted', 'PartitionTruncationCompleted']);
    expect(events[0]!.metadata).toMatchObject({ actor: 'alice', reason: 'DR for orders', workflowId: `create:${mirror}` });
    expect(events[1]!.metadata).toMatchObject({ actor: 'alice', reason: 'go' });
    expect(events[1]!.metadata.workflowId).toMatch(new RegExp(`^start:${mirror}:`));
    // Copies record their positions in batches as they go.
    await expect.poll(async () => (await readStream(t.db, mirrorStreamId(mirror))).some((e) => e.type === 'PartitionPositionRecorded'), { timeout: 20_000 }).toBe(true);
  });

  it('pause stops fetching (the destination end holds while the source grows); resume catches up', async () => {
    const pause = await startOperation(t.temporal, 'pauseTopics', { mirror, topics: [topic], actor: 'bob' });
    const paused = await awaitOperation<'pauseTopics'>(pause);
    expect(paused).toMatchObject({ partitions: 3, states: { PAUSED: 3 } });
    // Per partition, in the result and in the operation's progress query.
    expect(paused.list).toEqual([0, 1, 2].map((partition) => ({ topic, partition, state: 'PAUSED' })));
    expect(await pause.query(progressQuery)).toEqual({ workflow: 'pauseTopics', mirror, step: 'done', done: true, total: 3, states: { PAUSED: 3 }, partitions: paused.list });
    const held = await ends('dest', topic, 3);
    const producer = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await sendAll(producer, topic, messages(300, 3, { from: 10_000 }));
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await ends('dest', topic, 3)).toEqual(held);
    const resumed = await run('resumeTopics', { mirror, allTopics: true, actor: 'bob' });
    expect(resumed).toMatchObject({ partitions: 3, states: { MIRRORING: 3 } });
    await expect.poll(() => ends('dest', topic, 3), { timeout: 30_000 }).toEqual(await ends('source', topic, 3));
    for (const p of [0, 1, 2]) expect(await verifyPartition(t.source, t.dest, topic, p)).toMatchObject({ equal: true, recordsCompared: 1_200 });
    await producer.disconnect();
  });

  it("the runner's Updates refuse a malformed request and an unknown topic in their validator (nothing enters its history); every workflow carries the search attributes and answers `progress`", async () => {
    const runner = t.temporal.client.workflow.getHandle(runnerWorkflowId(mirror));
    const refused = (updateId: string, request: unknown) =>
      runner.executeUpdate(pauseUpdate, { args: [request as RunnerRequest], updateId }).then(
        () => undefined,
        (err: unknown) => err,
      );
    const malformed = await refused('bad-shape', { partitions: 'some' });
    expect(malformed).toBeInstanceOf(WorkflowUpdateFailedError);
    expect((malformed as WorkflowUpdateFailedError).cause).toMatchObject({ type: 'INVALID_ARGUMENT', message: expect.stringMatching(/^pause: expected \{"partitions"/) });
    const unknown = await refused('bad-topic', { partitions: [{ topic: 'not-in-mirror' }], actor: 'x', workflowId: 'w', runId: 'r' });
    expect((unknown as WorkflowUpdateFailedError).cause).toMatchObject({ type: 'TOPIC_NOT_IN_CLUSTER_MIRROR', message: `topic not-in-mirror is not in mirror ${mirror}` });
    // A validator's refusal is not recorded: no update event names either id.
    const { events } = await runner.fetchHistory();
    const updateIds = events!.flatMap((e) => [e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.meta?.updateId, e.workflowExecutionUpdateAdmittedEventAttributes?.request?.meta?.updateId]);
    expect(updateIds.filter((id) => id === 'bad-shape' || id === 'bad-topic')).toEqual([]);
    // The runner still works: its progress shows the partitions MIRRORING.
    expect(await runner.query(progressQuery)).toMatchObject({ workflow: 'mirrorRunner', mirror, step: 'running', done: false, total: 3, states: { MIRRORING: 3 } });
    expect(await t.temporal.client.workflow.getHandle(`create:${mirror}`).query(progressQuery)).toEqual({ workflow: 'createMirror', mirror, step: 'done', done: true, total: 0, states: {} });

    // Every workflow of this mirror is found by its name, each with its operation (and topic).
    const found = new Map<string, { operation: unknown; topic: unknown }>();
    await expect
      .poll(
        async () => {
          for await (const w of t.temporal.client.workflow.list({ query: `MirrorName = "${mirror}"` })) {
            found.set(w.type, { operation: w.typedSearchAttributes.get(MirrorOperation), topic: w.typedSearchAttributes.get(MirrorTopic) });
          }
          return [...found.keys()].sort();
        },
        { timeout: 20_000 },
      )
      .toEqual(['createMirror', 'mirrorRunner', 'pauseTopics', 'resumeTopics', 'startTopics']);
    for (const [type, { operation }] of found) expect(operation, type).toBe(type);
    // MirrorTopic when the request names exactly one topic (a resume of every topic names none).
    expect([...found].map(([type, { topic: named }]) => [type, named ?? null]).sort()).toEqual(
      [['createMirror', null], ['mirrorRunner', null], ['pauseTopics', topic], ['resumeTopics', null], ['startTopics', topic]].sort(),
    );
    const resumes: string[] = [];
    for await (const w of t.temporal.client.workflow.list({ query: `MirrorName = "${mirror}" AND MirrorOperation = "resumeTopics"` })) resumes.push(w.workflowId);
    expect(resumes).toHaveLength(1);
    expect(await t.temporal.client.workflow.getHandle(resumes[0]!).query(progressQuery)).toMatchObject({ workflow: 'resumeTopics', mirror, step: 'done', done: true, total: 3, states: { MIRRORING: 3 } });
  });

  it('retention overtaking a paused partition: the lost range is an event and describe counts it; the rest mirrors', async () => {
    const { mirror: lossMirror, topic: lossTopic } = await mirrored(2, 200, { prefix: 'loss' });
    // Retention removes partition 0's unmirrored records 100-169.
    await retentionOvertakes(lossMirror, lossTopic, messages(200, 2, { from: 200 }), new Map([[0, 170n]]));
    await expect.poll(() => ends('dest', lossTopic, 2), { timeout: 30_000 }).toEqual([200n, 200n]);
    const lost = (await readStream(t.db, mirrorStreamId(lossMirror))).filter((e) => e.type === 'PartitionRecordsLost');
    expect(lost.map((e) => e.data)).toEqual([{ topic: lossTopic, partition: 0, from: '100', to: '170' }]);
    expect(lost[0]!.metadata).toMatchObject({ actor: 'kmirror', workflowId: `mirror:${lossMirror}` });
    const described = await describeMirror(t.db, lossMirror);
    expect(described.topics[0]!.partitions.map((p) => p.recordsLost)).toEqual(['70', '0']);
    expect(await t.metrics!.registry.metrics()).toContain(`kmirror_records_lost_total{mirror="${lossMirror}"} 70\n`);
    for (const p of [0, 1]) expect(await verifyPartition(t.source, t.dest, lossTopic, p)).toMatchObject({ equal: true });
  });

  it('a mirror set to fail on records lost fails the partition (RECORDS_LOST) until an operator accepts the loss', async () => {
    const { mirror: strict, topic: strictTopic } = await mirrored(2, 200, { prefix: 'strict', create: { onRecordsLost: 'fail' } });
    await retentionOvertakes(strict, strictTopic, messages(200, 2, { from: 200 }), new Map([[1, 150n]]));
    // Partition 0 mirrors on; partition 1 fails, its destination held at the loss.
    await expect.poll(async () => (await describeMirror(t.db, strict)).topics[0]!.partitions.map((p) => [p.state, p.error?.code ?? null]), { timeout: 30_000 }).toEqual([
      ['MIRRORING', null],
      ['FAILED', 'RECORDS_LOST'],
    ]);
    await expect.poll(() => ends('dest', strictTopic, 2), { timeout: 30_000 }).toEqual([200n, 100n]);
    const failed = (await describeMirror(t.db, strict)).topics[0]!.partitions[1]!;
    expect(failed).toMatchObject({ retryable: false, recordsLost: '0' });
    expect(failed.error!.message).toMatch(/offsets 100\.\.149 .*retry with --accept-records-lost/);
    expect((await readStream(t.db, mirrorStreamId(strict))).some((e) => e.type === 'PartitionRecordsLost')).toBe(false);
    // A plain retry fails again; accepting the loss (with a reason) lets it skip the range, recorded.
    expect(await refusal('retryPartitions', { mirror: strict, acceptRecordsLost: true })).toMatchObject({ code: 'INVALID_ARGUMENT' });
    const retried = await run('retryPartitions', { mirror: strict, topics: [strictTopic], acceptRecordsLost: true, actor: 'carol', reason: 'owners agreed' });
    expect(retried).toMatchObject({ retried: 1, recordsLostAccepted: [strictTopic] });
    await expect.poll(() => ends('dest', strictTopic, 2), { timeout: 30_000 }).toEqual([200n, 200n]);
    const events = await readStream(t.db, mirrorStreamId(strict));
    expect(events.find((e) => e.type === 'RecordsLossAccepted')).toMatchObject({ data: { topics: [strictTopic] }, metadata: { actor: 'carol', reason: 'owners agreed' } });
    expect(events.filter((e) => e.type === 'PartitionRecordsLost').map((e) => e.data)).toEqual([{ topic: strictTopic, partition: 1, from: '100', to: '150' }]);
    const described = await describeMirror(t.db, strict);
    expect(described).toMatchObject({ onRecordsLost: 'fail' });
    expect(described.topics[0]!.partitions.map((p) => [p.state, p.recordsLost])).toEqual([
      ['MIRRORING', '0'],
      ['MIRRORING', '50'],
    ]);
    for (const p of [0, 1]) expect(await verifyPartition(t.source, t.dest, strictTopic, p)).toMatchObject({ equal: true });
    // The acceptance was used up: a second loss in that partition fails it again.
    await retentionOvertakes(strict, strictTopic, messages(100, 2, { from: 400 }), new Map([[1, 220n]]));
    await expect.poll(async () => (await describeMirror(t.db, strict)).topics[0]!.partitions[1]!.error?.code ?? null, { timeout: 30_000 }).toBe('RECORDS_LOST');
  });

  it('bad requests fail with their code and append nothing', async () => {
    const before = (await readStream(t.db, mirrorStreamId(mirror))).length;
    expect(await refusal('createMirror', { mirror: 'bad name!', sourceCluster: 'src', destinationCluster: 'dst' })).toMatchObject({ code: 'INVALID_CLUSTER_MIRROR_NAME' });
    expect(await refusal('createMirror', { mirror: randomName('m'), sourceCluster: 'nowhere', destinationCluster: 'dst' })).toMatchObject({ code: 'UNKNOWN_CLUSTER' });
    expect(await refusal('createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst' })).toMatchObject({ code: 'CLUSTER_MIRROR_ALREADY_EXISTS' });
    expect(await refusal('startTopics', { mirror: randomName('none'), topics: [topic] })).toMatchObject({ code: 'UNKNOWN_CLUSTER_MIRROR' });
    expect(await refusal('startTopics', { mirror, topics: ['no-such-topic'] })).toMatchObject({ code: 'UNKNOWN_TOPIC', message: expect.stringContaining('no-such-topic') });
    expect(await refusal('startTopics', { mirror, include: ['(unclosed'] })).toMatchObject({ code: 'INVALID_TOPIC_PATTERN' });
    expect(await refusal('startTopics', { mirror, topics: ['__consumer_offsets'] })).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await refusal('startTopics', { mirror, topics: [topic] })).toMatchObject({ code: 'TOPIC_ALREADY_IN_CLUSTER_MIRROR' });
    expect(await refusal('pauseTopics', { mirror, topics: ['not-in-mirror'] })).toMatchObject({ code: 'TOPIC_NOT_IN_CLUSTER_MIRROR' });
    expect(await refusal('resumeTopics', { mirror, topics: [topic] })).toMatchObject({ code: 'MIRROR_TOPIC_NOT_PAUSED' });
    expect(await refusal('pauseTopics', { mirror } as OperationInputs['pauseTopics'])).toMatchObject({ code: 'INVALID_ARGUMENT' });
    // One destination topic, one writer: a second mirror into the same cluster may not start it.
    const rival = randomName('rival');
    await run('createMirror', { mirror: rival, sourceCluster: 'src', destinationCluster: 'dst' });
    expect(await refusal('startTopics', { mirror: rival, topics: [topic] })).toMatchObject({ code: 'TOPIC_ALREADY_IN_CLUSTER_MIRROR', message: expect.stringContaining(`by mirror ${mirror}`) });
    expect((await readStream(t.db, mirrorStreamId(rival))).map((e) => e.type)).toEqual(['MirrorCreated']);
    // Two names for one cluster.
    await registerCluster(t.db, t.config.secretKey, { cluster: 'src-again', connection: sourceConnection() }, { actor: 'test' });
    expect(await refusal('createMirror', { mirror: randomName('self'), sourceCluster: 'src', destinationCluster: 'src-again' })).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('same Kafka cluster') });
    expect((await readStream(t.db, mirrorStreamId(mirror))).filter((e) => e.type !== 'PartitionPositionRecorded').length).toBe(
      (await readStream(t.db, mirrorStreamId(mirror))).slice(0, before).filter((e) => e.type !== 'PartitionPositionRecorded').length,
    );
  });
});

describe('auto-discovery', () => {
  it('starts new source topics that match the include pattern, and mirrors partitions a topic gains', async () => {
    const mirror = randomName('m');
    const prefix = randomName('disc');
    const first = `${prefix}.a`;
    t.track(first);
    await t.sourceAdmin.createTopics({ topics: [{ topic: first, numPartitions: 1 }], waitForLeaders: true });
    await run('createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst' });
    const started = await run('startTopics', { mirror, include: [`${prefix}\\..*`], exclude: ['.*\\.skip'] });
    expect(started).toMatchObject({ partitions: 1, states: { MIRRORING: 1 } });

    // A new matching topic (and one the exclude pattern keeps out) appears on the source.
    const second = `${prefix}.b`;
    const skipped = `${prefix}.skip`;
    t.track(second);
    t.track(skipped);
    await t.sourceAdmin.createTopics({ topics: [{ topic: second, numPartitions: 2 }, { topic: skipped, numPartitions: 1 }], waitForLeaders: true });
    const producer = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await sendAll(producer, second, messages(100, 2));
    const mirrored = async () => (await readStream(t.db, mirrorStreamId(mirror))).filter((e) => e.type === 'MirrorTopicAdded').map((e) => (e.data as { topic: string }).topic);
    await expect.poll(mirrored, { timeout: 30_000 }).toEqual([first, second]);
    await expect.poll(() => ends('dest', second, 2), { timeout: 30_000 }).toEqual([50n, 50n]);
    const added = (await readStream(t.db, mirrorStreamId(mirror))).find((e) => e.type === 'MirrorTopicAdded' && (e.data as { topic: string }).topic === second)!;
    expect(added.metadata).toMatchObject({ actor: 'kmirror', reason: expect.stringContaining('auto-discovery') });

    // The first topic gains two partitions on the source: the destination grows and they are mirrored.
    await t.sourceAdmin.createPartitions({ topicPartitions: [{ topic: first, count: 3 }] });
    await sendAll(producer, first, messages(30, 3));
    await expect.poll(() => ends('dest', first, 3).catch(() => []), { timeout: 40_000 }).toEqual(await ends('source', first, 3));
    const grown = (await readStream(t.db, mirrorStreamId(mirror))).find((e) => e.type === 'MirrorTopicGrown');
    expect(grown?.data).toEqual({ topic: first, partitionCount: 3 });
    for (const p of [0, 1, 2]) expect(await verifyPartition(t.source, t.dest, first, p)).toMatchObject({ equal: true });
    await producer.disconnect();
  });
});

describe('destination topics', () => {
  it('start copies the source topic configs minus the exclude list; mirror topics are CreateTime', async () => {
    const mirror = randomName('m');
    await run('createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst' });
    const topic = await t.sourceTopic({ configs: { 'retention.ms': '123456789', 'max.message.bytes': '2000000', 'min.insync.replicas': '1', 'message.timestamp.type': 'LogAppendTime' } });
    await run('startTopics', { mirror, topics: [topic] });
    const { resources } = await t.destAdmin.describeConfigs({ resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: topic }], includeSynonyms: false });
    const entry = (name: string) => resources[0]!.configEntries.find((e) => e.configName === name);
    const TOPIC_CONFIG = 1; // DescribeConfigs source DYNAMIC_TOPIC_CONFIG: set on the topic itself
    expect(entry('retention.ms')).toMatchObject({ configValue: '123456789', configSource: TOPIC_CONFIG });
    expect(entry('max.message.bytes')).toMatchObject({ configValue: '2000000', configSource: TOPIC_CONFIG });
    expect(entry('message.timestamp.type')).toMatchObject({ configValue: 'CreateTime', configSource: TOPIC_CONFIG });
    expect(entry('min.insync.replicas')!.configSource).not.toBe(TOPIC_CONFIG); // the destination's own choice
  });

  it("the runner keeps the mirror topic's configs in step with the source's: changed, added and removed ones follow; excluded ones stay the destination's; each sync is an event; a topic the destination refuses does not hold up the others", async () => {
    const mirror = randomName('m');
    await run('createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst' });
    const topic = await t.sourceTopic({ configs: { 'retention.ms': '123456789', 'segment.ms': '3600000' } });
    // A second topic, then deleted on the destination by hand: describing it there fails.
    const gone = await t.sourceTopic();
    await run('startTopics', { mirror, topics: [gone, topic] });
    await t.destAdmin.deleteTopics({ topics: [gone] });
    await t.sourceAdmin.alterConfigs({ validateOnly: false, resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: gone, configEntries: [{ name: 'retention.ms', value: '7777777' }] }] });
    const own = async (admin: typeof t.destAdmin) => {
      const { resources } = await admin.describeConfigs({ resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: topic }], includeSynonyms: false });
      return Object.fromEntries(resources[0]!.configEntries.filter((e) => e.configSource === 1).map((e) => [e.configName, e.configValue]));
    };
    const alter = (admin: typeof t.destAdmin, configs: Record<string, string>) =>
      admin.alterConfigs({ validateOnly: false, resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: topic, configEntries: Object.entries(configs).map(([name, value]) => ({ name, value })) }] });
    // The destination's own choice of an excluded config (AlterConfigs replaces the whole set).
    await alter(t.destAdmin, { ...(await own(t.destAdmin)), 'min.insync.replicas': '1' });
    // On the source: one value changed, one added, one removed, and an excluded one set.
    await alter(t.sourceAdmin, { 'retention.ms': '222222222', 'max.message.bytes': '3000000', 'unclean.leader.election.enable': 'true' });
    await expect
      .poll(() => own(t.destAdmin), { timeout: 30_000, interval: 500 })
      .toEqual({ 'retention.ms': '222222222', 'max.message.bytes': '3000000', 'message.timestamp.type': 'CreateTime', 'min.insync.replicas': '1' });
    const synced = (await readStream(t.db, mirrorStreamId(mirror))).filter((e) => e.type === 'MirrorTopicConfigsSynced');
    expect(synced.map((e) => e.data)).toEqual([{ topic, set: { 'retention.ms': '222222222', 'max.message.bytes': '3000000' }, removed: ['segment.ms'] }]);
    expect(synced[0]!.metadata).toMatchObject({ actor: 'kmirror', reason: expect.stringContaining('config sync') });
    // In step: later rounds change and record nothing more.
    await new Promise((r) => setTimeout(r, 5_000));
    expect((await readStream(t.db, mirrorStreamId(mirror))).filter((e) => e.type === 'MirrorTopicConfigsSynced')).toHaveLength(1);
  });

  it("ACL sync: off by default; turned on with alterMirror, the source's ACLs on a mirror topic for the filtered principals are granted on the destination and revoked with the source's (never one it did not grant); a writer granted after start is denied at the next round; after failover nothing is put back", async () => {
    const mirror = randomName('m');
    const { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes } = kafkajs;
    await run('createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst' });
    const topic = await t.sourceTopic();
    const acl = (name: string, principal: string, operation: 'READ' | 'WRITE', pattern: 'LITERAL' | 'PREFIXED' = 'LITERAL', permission: 'ALLOW' | 'DENY' = 'ALLOW') => ({
      resourceType: AclResourceTypes.TOPIC,
      resourceName: name,
      resourcePatternType: ResourcePatternTypes[pattern],
      principal,
      host: '*',
      operation: AclOperationTypes[operation],
      permissionType: AclPermissionTypes[permission],
    });
    const reader = acl(topic, 'User:sync-reader', 'READ');
    await t.sourceAdmin.createAcls({
      acl: [reader, acl(topic.slice(0, 8), 'User:sync-writer', 'WRITE', 'PREFIXED'), acl(topic, 'User:sync-admin', 'READ'), acl(topic, 'User:other', 'READ')],
    });
    // The destination's ACLs on the topic, literal ones, as "principal operation permission".
    const onDestination = async () => {
      const { resources } = await t.destAdmin.describeAcls({ resourceType: AclResourceTypes.TOPIC, resourceName: topic, resourcePatternType: ResourcePatternTypes.LITERAL, operation: AclOperationTypes.ANY, permissionType: AclPermissionTypes.ANY });
      const name = (n: number, of: Record<string, number | string>) => Object.keys(of).find((k) => of[k] === n);
      return resources.flatMap((r) => r.acls.map((a) => `${a.principal} ${name(a.operation, AclOperationTypes)} ${name(a.permissionType, AclPermissionTypes)}`)).sort();
    };
    try {
      await run('startTopics', { mirror, topics: [topic] });
      // Off: two discovery rounds later the topic has the start's guard only.
      await new Promise((r) => setTimeout(r, 5_000));
      expect(await onDestination()).toEqual(['User:app WRITE DENY']);

      // An ACL an operator made on the destination for a principal the filter will select: ACL sync
      // never revokes it (it revokes only what it granted).
      await t.destAdmin.createAcls({ acl: [acl(topic, 'User:sync-ops', 'READ')] });
      // alterMirror: a bad pattern is refused before anything is recorded; then the filter is set.
      const before = (await readStream(t.db, mirrorStreamId(mirror))).length;
      expect(await refusal('alterMirror', { mirror, acls: { include: ['User:('] } })).toMatchObject({ code: 'INVALID_TOPIC_PATTERN' });
      expect(await refusal('alterMirror', { mirror: randomName('none'), acls: { include: ['User:.*'] } })).toMatchObject({ code: 'UNKNOWN_CLUSTER_MIRROR' });
      expect((await readStream(t.db, mirrorStreamId(mirror))).length).toBe(before);
      const altered = await run('alterMirror', { mirror, acls: { include: ['User:sync-.*'], exclude: ['User:sync-admin'] }, actor: 'alice', reason: 'consumers fail over too' });
      expect(altered).toEqual({ mirror, groups: { include: ['.*'], exclude: [] }, acls: { include: ['User:sync-.*'], exclude: ['User:sync-admin'] }, changed: ['acls'] });
      expect(await run('alterMirror', { mirror, acls: { include: ['User:sync-.*'] } })).toMatchObject({ changed: [] });
      const filterEvents = (await readStream(t.db, mirrorStreamId(mirror))).filter((e) => e.type === 'MirrorAclFilterChanged');
      expect(filterEvents.map((e) => [e.data, e.metadata.actor, e.metadata.reason])).toEqual([[{ include: ['User:sync-.*'], exclude: ['User:sync-admin'] }, 'alice', 'consumers fail over too']]);

      // Synced (the prefixed grant as a literal one on the topic), and the synced writer denied.
      await expect
        .poll(onDestination, { timeout: 30_000, interval: 500 })
        .toEqual(['User:app WRITE DENY', 'User:sync-ops READ ALLOW', 'User:sync-reader READ ALLOW', 'User:sync-writer WRITE ALLOW', 'User:sync-writer WRITE DENY']);
      const synced = (await readStream(t.db, mirrorStreamId(mirror))).filter((e) => e.type === 'MirrorTopicAclsSynced');
      expect(synced.map((e) => e.data)).toEqual([
        {
          topic,
          granted: [
            { principal: 'User:sync-reader', host: '*', operation: 'READ', permission: 'ALLOW' },
            { principal: 'User:sync-writer', host: '*', operation: 'WRITE', permission: 'ALLOW' },
          ],
          revoked: [],
          denied: ['User:sync-writer'],
        },
      ]);
      expect(synced[0]!.metadata).toMatchObject({ actor: 'kmirror', reason: expect.stringContaining('ACL sync') });
      const exposed = await t.metrics!.registry.metrics();
      expect(exposed).toContain(`kmirror_topic_acl_changes_total{mirror="${mirror}",change="granted"} 2\n`);
      expect(exposed).toContain(`kmirror_topic_acl_changes_total{mirror="${mirror}",change="denied"} 1\n`);
      expect(exposed).toMatch(new RegExp(`kmirror_topic_sync_last_success_timestamp_seconds\\{mirror="${mirror}",sync="acls"\\} \\d`));

      // Revoked on the source → revoked on the destination; a writer granted on the destination by
      // hand after the start is denied.
      await t.sourceAdmin.deleteAcls({ filters: [reader] });
      await t.destAdmin.createAcls({ acl: [acl(topic, 'User:late-writer', 'WRITE')] });
      await expect
        .poll(onDestination, { timeout: 30_000, interval: 500 })
        .toEqual(['User:app WRITE DENY', 'User:late-writer WRITE ALLOW', 'User:late-writer WRITE DENY', 'User:sync-ops READ ALLOW', 'User:sync-writer WRITE ALLOW', 'User:sync-writer WRITE DENY']);

      // Failover lifts every DENY WRITE; the rounds after it leave the failed-over topic alone.
      await run('failover', { mirror, topics: [topic] });
      expect(await onDestination()).toEqual(['User:late-writer WRITE ALLOW', 'User:sync-ops READ ALLOW', 'User:sync-writer WRITE ALLOW']);
      const events = (await readStream(t.db, mirrorStreamId(mirror))).length;
      await new Promise((r) => setTimeout(r, 5_000));
      expect(await onDestination()).toEqual(['User:late-writer WRITE ALLOW', 'User:sync-ops READ ALLOW', 'User:sync-writer WRITE ALLOW']);
      expect((await readStream(t.db, mirrorStreamId(mirror))).length).toBe(events);
    } finally {
      await t.sourceAdmin.deleteAcls({ filters: [acl(topic, 'User:sync-reader', 'READ'), acl(topic.slice(0, 8), 'User:sync-writer', 'WRITE', 'PREFIXED'), acl(topic, 'User:sync-admin', 'READ'), acl(topic, 'User:other', 'READ')] });
      await t.destAdmin.deleteAcls({ filters: [acl(topic, 'User:sync-writer', 'WRITE'), acl(topic, 'User:late-writer', 'WRITE'), acl(topic, 'User:sync-ops', 'READ')] });
    }
  });

  it('start refuses a destination topic that is not an exact prefix of its source, appending nothing; a prefix is continued', async () => {
    const mirror = randomName('m');
    await run('createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst' });
    const sourceProducer = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    const destProducer = t.destKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await Promise.all([sourceProducer.connect(), destProducer.connect()]);
    // Recent timestamps: older ones would fall to the source's 7-day time retention mid-test.
    const base = Date.now() - 60_000;
    const record = (i: number) => ({ partition: 0, key: `k${i}`, value: `v${i}`, timestamp: String(base + i) });
    const pair = async (destPartitions: number, destRecords: ReturnType<typeof record>[]) => {
      const topic = await t.sourceTopic();
      await sourceProducer.send({ topic, messages: [0, 1, 2, 3].map(record) });
      await createTopicsAndWait(t.destAdmin, [{ topic, partitions: destPartitions, replicationFactor: 1, configs: {} }]);
      if (destRecords.length > 0) await destProducer.send({ topic, messages: destRecords });
      return topic;
    };
    const differs = await pair(1, [record(0), { ...record(1), value: 'written by someone else' }]);
    const longer = await pair(1, [0, 1, 2, 3, 4].map(record));
    const partitions = await pair(2, []);
    const before = (await readStream(t.db, mirrorStreamId(mirror))).length;
    expect(await refusal('startTopics', { mirror, topics: [differs] })).toMatchObject({ code: 'OFFSET_DIVERGENCE', message: expect.stringContaining('differ from the source\'s at offset 1') });
    expect(await refusal('startTopics', { mirror, topics: [longer] })).toMatchObject({ code: 'OFFSET_DIVERGENCE', message: expect.stringContaining('beyond the source\'s end 4') });
    expect(await refusal('startTopics', { mirror, topics: [partitions] })).toMatchObject({ code: 'OFFSET_DIVERGENCE', message: expect.stringContaining('exists with 2 partitions') });
    expect((await readStream(t.db, mirrorStreamId(mirror))).length).toBe(before);

    // The same first two records on both sides: the mirror goes on from offset 2.
    const prefix = await pair(1, [record(0), record(1)]);
    expect(await run('startTopics', { mirror, topics: [prefix] })).toMatchObject({ partitions: 1, states: { MIRRORING: 1 }, topics: [{ topic: prefix, created: false }] });
    await expect.poll(() => ends('dest', prefix, 1), { timeout: 30_000 }).toEqual([4n]);
    expect(await verifyPartition(t.source, t.dest, prefix, 0)).toMatchObject({ equal: true, recordsCompared: 4 });
    await Promise.all([sourceProducer.disconnect(), destProducer.disconnect()]);
  });
});

describe('consumer-group offset sync', () => {
  it("the runner syncs only the groups the mirror's include and exclude patterns select", async () => {
    const prefix = randomName('g');
    const { topic } = await mirrored(1, 100, { create: { groups: { include: [`${prefix}-.*`], exclude: [`${prefix}-skip-.*`] } } });
    const [kept, excluded, other] = [`${prefix}-app`, `${prefix}-skip-app`, randomName('other')];
    for (const group of [kept, excluded, other]) await t.source.commitGroupOffsets(group, [{ topic, partition: 0, offset: 40n }]);
    const committed = async (groupId: string) => (await t.destAdmin.fetchOffsets({ groupId, topics: [topic] }))[0]!.partitions[0]!.offset;
    await expect.poll(() => committed(kept), { timeout: 30_000 }).toBe('40');
    // The same sync round saw the other two and left them alone; so do the next ones.
    await new Promise((r) => setTimeout(r, 5_000));
    expect(await Promise.all([committed(excluded), committed(other)])).toEqual(['-1', '-1']);
  });
});
