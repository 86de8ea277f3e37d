// kafkajs 2.2.4 against the stack's Kafka (KAFKA_VERSION in scripts/stack/topology.ts): every
// client feature the design relies on, on the real brokers. docs/compatibility.md is the table
// of these results; a failing case here means a row there is wrong.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ConfigResourceTypes, ResourcePatternTypes, type Admin, type Kafka } from 'kafkajs';
import { createTopicsAndWait, deleteTopicsAndWait, topicOffsets } from '../../kafka/admin.ts';
import { createKafka } from '../../kafka/connection.ts';
import { IsolationLevel, RawCluster } from '../../kafka/protocol.ts';
import { controlType, decodeRecords, restampBatch } from '../../kafka/wire.ts';
import { fetchBatches } from '../support/mirror-fixture.ts';
import { destAppConnection, destConnection, randomName, sourceConnection, testClientOptions } from '../support/stack.ts';

let source: Kafka;
let dest: Kafka;
let sourceAdmin: Admin;
let destAdmin: Admin;
const raws: RawCluster[] = [];
const created: string[] = [];

function raw(kafka: Kafka): RawCluster {
  const r = new RawCluster(kafka);
  raws.push(r);
  return r;
}

beforeAll(async () => {
  source = createKafka(sourceConnection(), testClientOptions);
  dest = createKafka(destConnection(), testClientOptions);
  sourceAdmin = source.admin();
  destAdmin = dest.admin();
  await Promise.all([sourceAdmin.connect(), destAdmin.connect()]);
});

afterAll(async () => {
  await Promise.all(raws.map((r) => r.close()));
  await deleteTopicsAndWait(sourceAdmin, created);
  await deleteTopicsAndWait(destAdmin, created);
  await Promise.all([sourceAdmin.disconnect(), destAdmin.disconnect()]);
});

async function createTopic(admin: Admin, opts: { partitions?: number; configs?: Record<string, string> } = {}): Promise<string> {
  const topic = randomName('compat');
  created.push(topic);
  const ok = await createTopicsAndWait(admin, [{ topic, partitions: opts.partitions ?? 1, replicationFactor: 1, configs: opts.configs ?? {} }]);
  expect(ok).toBe(true);
  return topic;
}

/** Until partition 0 of a topic created a moment ago is served by its leader: its broker publishes
 *  the leader before loading the replica, and answers NOT_LEADER_FOR_PARTITION meanwhile (a raw
 *  fetch or produce reports that per partition; ListOffsets, through RawCluster, waits it out). */
async function served(session: RawCluster, topic: string): Promise<void> {
  expect(await session.listOffsets(topic, [0], 'latest')).toEqual(new Map([[0, 0n]]));
}

describe('topics and configs', () => {
  it('creates a topic with configs and replication factor, and describes its configs', async () => {
    const topic = await createTopic(destAdmin, { partitions: 3, configs: { 'retention.ms': '123456789', 'cleanup.policy': 'compact' } });
    const described = await destAdmin.describeConfigs({
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms', 'cleanup.policy'] }],
      includeSynonyms: false,
    });
    const entries = Object.fromEntries(described.resources[0]!.configEntries.map((e) => [e.configName, e.configValue]));
    expect(entries).toEqual({ 'retention.ms': '123456789', 'cleanup.policy': 'compact' });
  });

  it('alters some configs of a topic and leaves the others (IncrementalAlterConfigs, RawCluster); an unknown config is refused (KAFKA_ERROR naming INVALID_CONFIG)', async () => {
    const topic = await createTopic(destAdmin, { configs: { 'retention.ms': '123456789', 'segment.ms': '3600000', 'min.insync.replicas': '1' } });
    const session = raw(dest);
    await session.alterTopicConfigs(topic, { 'retention.ms': '222222222', 'max.message.bytes': '3000000' }, ['segment.ms']);
    const { resources } = await destAdmin.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }], includeSynonyms: false });
    const own = Object.fromEntries(resources[0]!.configEntries.filter((e) => e.configSource === 1).map((e) => [e.configName, e.configValue]));
    expect(own).toEqual({ 'retention.ms': '222222222', 'max.message.bytes': '3000000', 'min.insync.replicas': '1' });
    await expect(session.alterTopicConfigs(topic, { 'no.such.config': 'x' }, [])).rejects.toMatchObject({ code: 'KAFKA_ERROR', message: expect.stringContaining('INVALID_CONFIG') });
  });

  it('reads topic metadata with replicas and ISR', async () => {
    const topic = await createTopic(destAdmin, { partitions: 2 });
    const { topics } = await destAdmin.fetchTopicMetadata({ topics: [topic] });
    const partitions = topics[0]!.partitions.sort((a, b) => a.partitionId - b.partitionId);
    expect(partitions.map((p) => p.partitionId)).toEqual([0, 1]);
    for (const p of partitions) {
      expect(p.replicas).toHaveLength(1);
      expect(p.isr).toEqual(p.replicas);
      expect(p.leader).toBe(p.replicas[0]);
    }
  });

  it('a raw session keeps working after a topic it looked up is deleted; the deleted one is UNKNOWN_TOPIC', async () => {
    // kafkajs' own cluster metadata fails every refresh once one of its topics is gone; RawCluster
    // reads metadata per topic so a long-lived session is not poisoned by a deleted mirror topic.
    const session = raw(source);
    const doomed = await createTopic(sourceAdmin, { partitions: 1 });
    expect(await session.leaderOf(doomed, 0)).toBeGreaterThanOrEqual(0);
    await sourceAdmin.deleteTopics({ topics: [doomed], timeout: 30_000 });
    const other = await createTopic(sourceAdmin, { partitions: 2 });
    expect((await session.listOffsets(other, [0, 1], 'latest')).size).toBe(2);
    // The broker's metadata cache learns of the deletion a moment after DeleteTopics returns.
    await expect
      .poll(() => session.partitions(doomed).then(() => 'still listed', (err: { code: string; message: string }) => `${err.code}: ${err.message}`), { timeout: 30_000 })
      .toMatch(new RegExp(`^UNKNOWN_TOPIC: .*${doomed}`));
    await expect(session.partitions(randomName('never-created'))).rejects.toMatchObject({ code: 'UNKNOWN_TOPIC' });
  });

  it('a raw session keeps the broker list, not the metadata of every topic kafkajs reads with it', async () => {
    // kafkajs reads the broker list only with the metadata of all the cluster's topics and keeps
    // it (~0.5 KiB per partition, per session: 150 MiB in a copier process of 40 sessions on a
    // cluster of 10,000 partitions, docs/benchmarks.md). Pinned kafkajs internals: brokerPool.
    await createTopic(sourceAdmin, { partitions: 3 });
    const session = raw(source);
    await session.connect();
    const pool = (session as unknown as { cluster: { brokerPool: { metadata: { brokers: unknown[]; topicMetadata: unknown[] } } } }).cluster.brokerPool;
    expect(pool.metadata.brokers.length).toBeGreaterThan(0);
    expect(pool.metadata.topicMetadata).toEqual([]);
  });
});

describe('producing', () => {
  it('an idempotent producer returns the base offset of each produced batch', async () => {
    const topic = await createTopic(destAdmin);
    const producer = dest.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    try {
      const first = await producer.send({ topic, messages: [{ value: 'a' }, { value: 'b' }, { value: 'c' }] });
      const second = await producer.send({ topic, messages: [{ value: 'd' }] });
      expect(first[0]!.baseOffset).toBe('0');
      expect(second[0]!.baseOffset).toBe('3');
    } finally {
      await producer.disconnect();
    }
  });

  it('a transactional producer commits and aborts; a read_committed fetch skips the aborted records', async () => {
    const topic = await createTopic(sourceAdmin);
    const producer = source.producer({ transactionalId: randomName('txn'), idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    try {
      const committed = await producer.transaction();
      await committed.send({ topic, messages: [{ value: 'kept-1' }, { value: 'kept-2' }] });
      await committed.commit();
      const aborted = await producer.transaction();
      await aborted.send({ topic, messages: [{ value: 'dropped-1' }, { value: 'dropped-2' }, { value: 'dropped-3' }] });
      await aborted.abort();
    } finally {
      await producer.disconnect();
    }
    // Log: 0-1 committed data, 2 commit marker, 3-5 aborted data, 6 abort marker.
    const session = raw(source);
    const [p] = await session.fetch({
      leader: await session.leaderOf(topic, 0),
      partitions: [{ topic, partition: 0, fetchOffset: 0n, maxBytes: 1 << 20 }],
      maxWaitMs: 100,
      maxBytes: 1 << 20,
      isolationLevel: IsolationLevel.READ_COMMITTED,
    });
    expect(p!.highWatermark).toBe(7n);
    expect(p!.lastStableOffset).toBe(7n);
    // read_committed returns aborted batches too, with the abort list the client must apply
    expect(p!.abortedTransactions).toHaveLength(1);
    expect(p!.abortedTransactions[0]!.firstOffset).toBe(3n);
    const abortedPid = p!.abortedTransactions[0]!.producerId;
    const visible = p!.batches
      .filter((b) => !b.isControl && !(b.isTransactional && b.producerId === abortedPid && b.baseOffset >= 3n))
      .flatMap((b) => decodeRecords(b))
      .map((r) => r.value?.toString());
    expect(visible).toEqual(['kept-1', 'kept-2']);
    expect(p!.batches.filter((b) => b.isControl).map((b) => b.baseOffset)).toEqual([2n, 6n]);

    // kafkajs' own consumer (read_committed) agrees.
    const consumer = source.consumer({ groupId: randomName('g'), readUncommitted: false });
    await consumer.connect();
    const seen: string[] = [];
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timeout, saw ${seen.join(',')}`)), 30_000);
        void consumer.run({
          eachMessage: async ({ message }) => {
            seen.push(message.value!.toString());
            if (seen.length === 2) {
              clearTimeout(timer);
              resolve();
            }
          },
        });
      });
    } finally {
      await consumer.disconnect();
    }
    expect(seen).toEqual(['kept-1', 'kept-2']);
  });

  it('at the protocol level: a transaction that added a partition but wrote nothing to it leaves an ABORT marker there; InitProducerId aborts an open one', async () => {
    const topic = await createTopic(sourceAdmin);
    const session = raw(source);
    const id = randomName('fill');
    const producer = await session.initTransactions(id, 60_000);
    await session.addPartitionsToTxn(producer, topic, [0]);
    await session.endTxn(producer, false);
    // EndTxn returns before the marker is written.
    await expect.poll(async () => (await session.listOffsets(topic, [0], 'latest')).get(0), { timeout: 5_000, interval: 20 }).toBe(1n);
    // A transaction left open is aborted (its marker written) by the next InitProducerId.
    const again = await session.initTransactions(id, 60_000);
    await session.addPartitionsToTxn(again, topic, [0]);
    const fenced = await session.initTransactions(id, 60_000);
    expect(fenced.producerEpoch).toBeGreaterThan(again.producerEpoch);
    expect((await session.listOffsets(topic, [0], 'latest')).get(0)).toBe(2n);
    const p = await fetchBatches(session, topic, 0);
    expect(p.batches.map((b) => [b.baseOffset, b.isControl, controlType(b)])).toEqual([
      [0n, true, 'abort'],
      [1n, true, 'abort'],
    ]);
  });
});

describe('fetching without a consumer group', () => {
  it('returns whole batches with leader epoch, offsets, high watermark, last stable offset and log start', async () => {
    const topic = await createTopic(sourceAdmin);
    const producer = source.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await producer.send({ topic, messages: [{ key: 'k1', value: 'v1', headers: { h: 'x' } }, { key: null, value: null }] });
    // An explicit timestamp, an hour old: an older one would fall to the 7-day time retention.
    const explicit = BigInt(Date.now() - 3_600_000);
    await producer.send({ topic, messages: [{ key: 'k3', value: 'v3', timestamp: explicit.toString() }] });
    await producer.disconnect();
    const session = raw(source);
    const [p] = await session.fetch({
      leader: await session.leaderOf(topic, 0),
      partitions: [{ topic, partition: 0, fetchOffset: 1n, maxBytes: 1 << 20 }],
      maxWaitMs: 100,
      maxBytes: 1 << 20,
      isolationLevel: IsolationLevel.READ_COMMITTED,
    });
    expect(p!.error).toBeUndefined();
    expect([p!.highWatermark, p!.lastStableOffset, p!.logStartOffset]).toEqual([3n, 3n, 0n]);
    // The batch holding offset 1 comes back whole, from its base offset 0.
    expect(p!.batches.map((b) => [b.baseOffset, b.lastOffset])).toEqual([
      [0n, 1n],
      [2n, 2n],
    ]);
    expect(p!.batches[0]!.leaderEpoch).toBeGreaterThanOrEqual(0);
    const records = p!.batches.flatMap((b) => decodeRecords(b));
    expect(records.map((r) => [r.offset, r.key?.toString() ?? null, r.value?.toString() ?? null])).toEqual([
      [0n, 'k1', 'v1'],
      [1n, null, null],
      [2n, 'k3', 'v3'],
    ]);
    expect(records[0]!.headers).toEqual([{ key: 'h', value: Buffer.from('x') }]);
    expect(records[2]!.timestamp).toBe(explicit);
  });

  it('an out-of-range fetch offset is reported per partition, not thrown', async () => {
    const topic = await createTopic(sourceAdmin);
    const session = raw(source);
    await served(session, topic);
    const [p] = await session.fetch({
      leader: await session.leaderOf(topic, 0),
      partitions: [{ topic, partition: 0, fetchOffset: 42n, maxBytes: 1024 }],
      maxWaitMs: 10,
      maxBytes: 1024,
      isolationLevel: IsolationLevel.READ_COMMITTED,
    });
    expect(p!.error?.type).toBe('OFFSET_OUT_OF_RANGE');
  });
});

describe('raw produce of a restamped batch', () => {
  it('keeps null header values and duplicate header keys in order (kafkajs producer cannot)', async () => {
    const srcTopic = await createTopic(sourceAdmin);
    const dstTopic = await createTopic(destAdmin);
    // Build the source batch through our own raw path: a kafkajs producer cannot write a null
    // header value (Buffer.byteLength(null) throws in its record encoder).
    const nullHeader = source.producer();
    await nullHeader.connect();
    await expect(nullHeader.send({ topic: srcTopic, messages: [{ value: 'x', headers: { h: null as unknown as string } }] })).rejects.toThrow();
    await nullHeader.send({ topic: srcTopic, messages: [{ value: 'x', headers: { a: ['1', '2'], b: 'z' } }] });
    await nullHeader.disconnect();

    const src = raw(source);
    const dst = raw(dest);
    const [fetched] = await src.fetch({
      leader: await src.leaderOf(srcTopic, 0),
      partitions: [{ topic: srcTopic, partition: 0, fetchOffset: 0n, maxBytes: 1 << 20 }],
      maxWaitMs: 100,
      maxBytes: 1 << 20,
      isolationLevel: IsolationLevel.READ_COMMITTED,
    });
    const stamp = await dst.initProducerId();
    await served(dst, dstTopic);
    const produced = await dst.produce({
      leader: await dst.leaderOf(dstTopic, 0),
      partitions: [{ topic: dstTopic, partition: 0, batch: restampBatch(fetched!.batches[0]!, { ...stamp, baseSequence: 0 }) }],
    });
    expect(produced[0]!.error).toBeUndefined();
    expect(produced[0]!.baseOffset).toBe(0n);
    // A replayed sequence is de-duplicated by the broker (idempotence), not appended twice.
    const replay = await dst.produce({
      leader: await dst.leaderOf(dstTopic, 0),
      partitions: [{ topic: dstTopic, partition: 0, batch: restampBatch(fetched!.batches[0]!, { ...stamp, baseSequence: 0 }) }],
    });
    expect(replay[0]!.error).toBeUndefined();
    expect(await dst.listOffsets(dstTopic, [0], 'latest')).toEqual(new Map([[0, 1n]]));
    const [copied] = await dst.fetch({
      leader: await dst.leaderOf(dstTopic, 0),
      partitions: [{ topic: dstTopic, partition: 0, fetchOffset: 0n, maxBytes: 1 << 20 }],
      maxWaitMs: 100,
      maxBytes: 1 << 20,
      isolationLevel: IsolationLevel.READ_COMMITTED,
    });
    expect(decodeRecords(copied!.batches[0]!)).toEqual(decodeRecords(fetched!.batches[0]!));
    expect(decodeRecords(copied!.batches[0]!)[0]!.headers.map((h) => [h.key, h.value?.toString()])).toEqual([
      ['a', '1'],
      ['a', '2'],
      ['b', 'z'],
    ]);
  });
});

describe('offsets and records', () => {
  it('lists earliest/latest offsets and deletes records below an offset', async () => {
    const topic = await createTopic(destAdmin);
    const producer = dest.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await producer.send({ topic, messages: Array.from({ length: 10 }, (_, i) => ({ value: String(i) })) });
    await producer.disconnect();
    // kafkajs' deleteTopicRecords alone fails on a topic its metadata cache has not seen yet.
    const fresh = dest.admin();
    await fresh.connect();
    await expect(fresh.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '7' }] })).rejects.toThrow(/Topic metadata not loaded|deleting records/);
    await fresh.disconnect();
    const session = raw(dest);
    await session.deleteRecords(topic, new Map([[0, 7n]]));
    expect(await topicOffsets(destAdmin, topic)).toEqual([{ partition: 0, logStart: 7n, highWatermark: 10n }]);
    expect(await session.listOffsets(topic, [0], 'earliest')).toEqual(new Map([[0, 7n]]));
    expect(await session.listOffsets(topic, [0], 'latest', IsolationLevel.READ_COMMITTED)).toEqual(new Map([[0, 10n]]));
  });

  it("reads partitions' log ends at their leader beside their high watermarks, several topics in one request each (ListOffsets v4 + OffsetForLeaderEpoch v3)", async () => {
    const [topic, other] = [await createTopic(destAdmin, { partitions: 2 }), await createTopic(destAdmin, { partitions: 1 })];
    const producer = dest.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await producer.send({ topic, messages: Array.from({ length: 6 }, (_, i) => ({ partition: 0, value: String(i) })) });
    await producer.send({ topic: other, messages: [{ partition: 0, value: 'x' }] });
    await producer.disconnect();
    // One broker: everything appended is acknowledged at once (the slow-follower drill holds them apart).
    expect(await raw(dest).logEnds(new Map([[topic, [0, 1]], [other, [0]]]))).toEqual(
      new Map([
        [topic, new Map([[0, { highWatermark: 6n, logEnd: 6n }], [1, { highWatermark: 0n, logEnd: 0n }]])],
        [other, new Map([[0, { highWatermark: 1n, logEnd: 1n }]])],
      ]),
    );
  });

  it('lists offsets of and deletes records in several topics at once; a missing topic is UNKNOWN_TOPIC, or left out when asked', async () => {
    const [a, b] = [await createTopic(destAdmin, { partitions: 2 }), await createTopic(destAdmin, { partitions: 1 })];
    const producer = dest.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await producer.send({ topic: a, messages: [{ partition: 1, value: 'x' }, { partition: 1, value: 'y' }] });
    await producer.send({ topic: b, messages: [{ partition: 0, value: 'z' }] });
    await producer.disconnect();
    const session = raw(dest);
    const latest = await session.listOffsetsOf(new Map([[a, [0, 1]], [b, [0]]]), 'latest');
    expect(latest).toEqual(new Map([[a, new Map([[0, 0n], [1, 2n]])], [b, new Map([[0, 1n]])]]));
    const gone = `${a}-missing`;
    // Concurrently: each waits a few seconds for the missing topic to appear before giving up on it.
    const [refused, skipped, left] = await Promise.allSettled([
      session.listOffsetsOf(new Map([[a, [1]], [gone, [0]]]), 'latest'),
      session.listOffsetsOf(new Map([[a, [1]], [gone, [0]]]), 'latest', IsolationLevel.READ_UNCOMMITTED, true),
      session.refreshLeaders([a, gone, b], true),
    ]);
    expect(refused).toMatchObject({ status: 'rejected', reason: { code: 'UNKNOWN_TOPIC' } });
    expect(skipped).toEqual({ status: 'fulfilled', value: new Map([[a, new Map([[1, 2n]])]]) });
    expect(left).toEqual({ status: 'fulfilled', value: new Set([gone]) });
    await session.deleteRecordsOf(new Map([[a, new Map([[1, 1n]])], [b, new Map([[0, 1n]])]]));
    expect(await session.listOffsetsOf(new Map([[a, [0, 1]], [b, [0]]]), 'earliest')).toEqual(new Map([[a, new Map([[0, 0n], [1, 1n]])], [b, new Map([[0, 1n]])]]));
  });
});

describe('ACLs on the secured destination', () => {
  it("creates, describes and deletes ACLs; a topic DENY overrides the app user's grants", async () => {
    const topic = await createTopic(destAdmin);
    const app = createKafka(destAppConnection(), { retries: 0 });
    const appProducer = app.producer({ retry: { retries: 0 } });
    const appSend = (): Promise<string> =>
      appProducer.send({ topic, messages: [{ value: 'x' }] }).then(
        () => 'ok',
        // kafkajs reports the refusal itself or, when it fails the metadata request, as the cause.
        (err: { type?: string; cause?: { type?: string } }) => err.type ?? err.cause?.type ?? String(err),
      );
    await appProducer.connect();
    try {
      // `stack up` grants app an application's rights (WRITE on every topic, among others).
      await expect.poll(appSend, { timeout: 15_000 }).toBe('ok');
      const deny = {
        resourceType: AclResourceTypes.TOPIC,
        resourceName: topic,
        resourcePatternType: ResourcePatternTypes.LITERAL,
        principal: 'User:app',
        host: '*',
        operation: AclOperationTypes.WRITE,
        permissionType: AclPermissionTypes.DENY,
      };
      await destAdmin.createAcls({ acl: [deny] });
      const described = await destAdmin.describeAcls(deny);
      expect(described.resources).toHaveLength(1);
      expect(described.resources[0]!.acls).toEqual([{ principal: 'User:app', host: '*', operation: AclOperationTypes.WRITE, permissionType: AclPermissionTypes.DENY }]);
      // ACL changes take effect through the metadata log; allow them a moment.
      await expect.poll(appSend, { timeout: 15_000 }).toBe('TOPIC_AUTHORIZATION_FAILED');
      const deleted = await destAdmin.deleteAcls({ filters: [deny] });
      expect(deleted.filterResponses[0]!.matchingAcls).toHaveLength(1);
      await expect.poll(appSend, { timeout: 15_000 }).toBe('ok');
    } finally {
      await appProducer.disconnect();
    }
  });
});

describe('consumer group offsets', () => {
  it('lists, describes, fetches and sets committed offsets of a group', async () => {
    const topic = await createTopic(sourceAdmin, { partitions: 2 });
    const producer = source.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await producer.send({ topic, messages: Array.from({ length: 6 }, (_, i) => ({ value: String(i), partition: i % 2 })) });
    await producer.disconnect();
    const groupId = randomName('group');
    const consumer = source.consumer({ groupId });
    await consumer.connect();
    let consumed = 0;
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('consumer timeout')), 30_000);
      void consumer.run({
        eachMessage: async () => {
          if (++consumed === 6) {
            clearTimeout(timer);
            resolve();
          }
        },
      });
    });
    await consumer.commitOffsets([
      { topic, partition: 0, offset: '3' },
      { topic, partition: 1, offset: '3' },
    ]);
    const { groups } = await sourceAdmin.listGroups();
    expect(groups.map((g) => g.groupId)).toContain(groupId);
    const active = await sourceAdmin.describeGroups([groupId]);
    expect(active.groups[0]!.state).toBe('Stable');
    expect(active.groups[0]!.members).toHaveLength(1);
    await consumer.disconnect();

    const fetched = await sourceAdmin.fetchOffsets({ groupId, topics: [topic] });
    expect(fetched[0]!.partitions.sort((a, b) => a.partition - b.partition).map((p) => p.offset)).toEqual(['3', '3']);
    await sourceAdmin.setOffsets({ groupId, topic, partitions: [{ partition: 0, offset: '1' }] });
    const after = await sourceAdmin.fetchOffsets({ groupId, topics: [topic] });
    expect(after[0]!.partitions.find((p) => p.partition === 0)!.offset).toBe('1');
    const idle = await sourceAdmin.describeGroups([groupId]);
    expect(idle.groups[0]!.state).toBe('Empty');
  });
});
