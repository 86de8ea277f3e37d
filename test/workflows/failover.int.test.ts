// Failover and promote on the real stack (DESIGN §4): the destination topics become writable, the
// copies have stopped, the last mirrored positions are recorded, promote waits until nothing is
// behind, and failover works with the source gone (promote refuses then, pointing to failover).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterConnection } from '../../domain/connection.ts';
import { clientProperties, kafkaJava } from '../../scripts/stack/kafka.ts';
import { run as runProcess } from '../support/child.ts';
import type { OperationInputs } from '../../client/index.ts';
import { changeClusterConnection, registerCluster } from '../../db/cluster-store.ts';
import { executeMirrorCommand } from '../../db/mirror-store.ts';
import { createKafka } from '../../kafka/connection.ts';
import { recordChecksum, verifyPartition } from '../../kafka/verify.ts';
import { decodeRecords } from '../../kafka/wire.ts';
import { statusQuery } from '../../workflows/messages.ts';
import { mirrorStreamId } from '../../domain/events.ts';
import { readStream } from '../../db/event-store/read-stream.ts';
import { controlPlane, operationsOn, type ControlPlane } from '../support/control-plane.ts';
import { fetchBatches, messages, sendAll } from '../support/mirror-fixture.ts';
import { destAppConnection, randomName, sourceConnection } from '../support/stack.ts';

let t: ControlPlane;
beforeAll(async () => {
  t = await controlPlane({ env: { KMIRROR_GROUP_SYNC_INTERVAL_MS: '1000' } });
});
afterAll(async () => t?.close());

const all = (n: number) => Array.from({ length: n }, (_, i) => i);
const { run, refusal, ends, mirrored } = operationsOn(() => t);
/** The mirror's log apart from the positions the runner records as it copies: its decisions. */
const decisions = async (mirror: string) => (await readStream(t.db, mirrorStreamId(mirror))).filter((e) => e.type !== 'PartitionPositionRecorded').map((e) => e.type);
const partitionStates = async (mirror: string) => (await t.db.selectFrom('mirror_partitions').select('state').where('mirror', '=', mirror).orderBy('topic').orderBy('partition').execute()).map((r) => r.state);

describe('failover', () => {
  it('dry run changes nothing; failover stops the copies, records the positions, and makes the topics writable', async () => {
    const { mirror, topic } = await mirrored(3, 900);
    const dry = await run('failover', { mirror, allTopics: true, dryRun: true });
    expect(dry).toMatchObject({ dryRun: true, source: { reachable: true } });
    expect(dry.partitions.map((p) => [p.state, p.recordsBehind])).toEqual([
      ['MIRRORING', '0'],
      ['MIRRORING', '0'],
      ['MIRRORING', '0'],
    ]);
    const result = await run('failover', { mirror, topics: [topic], actor: 'oncall', reason: 'drill' });
    expect(result).toMatchObject({ mode: 'failover', dryRun: false, states: { STOPPED: 3 }, writable: { lifted: ['User:app'] } });
    expect(result.partitions.map((p) => p.recordsBehind)).toEqual(['0', '0', '0']);
    const rows = await t.db.selectFrom('mirror_partitions').select(['partition', 'state', 'stop_mode', 'last_mirrored_offset', 'last_mirrored_checksum']).where('mirror', '=', mirror).orderBy('partition').execute();
    expect(rows.map((r) => [r.state, r.stop_mode, r.last_mirrored_offset])).toEqual([
      ['STOPPED', 'failover', 300n],
      ['STOPPED', 'failover', 300n],
      ['STOPPED', 'failover', 300n],
    ]);
    expect(rows.every((r) => /^[0-9a-f]{64}$/.test(r.last_mirrored_checksum ?? ''))).toBe(true);
    // The copies have stopped: new source data does not arrive; the app user can write now.
    const producer = t.sourceKafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: messages(30, 3, { from: 5_000 }) });
    await producer.disconnect();
    const app = createKafka(destAppConnection(), { retries: 2 }).producer();
    await app.connect();
    await expect.poll(async () => app.send({ topic, messages: [{ partition: 0, value: 'written on the new primary' }] }).then(() => 'ok', (e: unknown) => String(e)), { timeout: 20_000 }).toBe('ok');
    await app.disconnect();
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await ends('dest', topic, 3)).toEqual([301n, 300n, 300n]);
  });

  it('works with the source gone (RPO unknown); promote refuses then and points to failover', async () => {
    await registerCluster(t.db, t.config.secretKey, { cluster: 'fragile', connection: sourceConnection() }, { actor: 'test' });
    const { mirror } = await mirrored(2, 100, { sourceCluster: 'fragile' });
    // The source "goes away": its registered address now leads nowhere.
    await changeClusterConnection(t.db, t.config.secretKey, { cluster: 'fragile', connection: { bootstrap: ['127.0.0.1:1'], securityProtocol: 'PLAINTEXT' } }, { actor: 'test' });
    const before = await decisions(mirror);
    const refused = await refusal('promote', { mirror, allTopics: true });
    expect(await refusal('promote', { mirror, allTopics: true, dryRun: true })).toMatchObject({ code: 'CLUSTER_UNREACHABLE' });
    expect(refused).toMatchObject({ code: 'CLUSTER_UNREACHABLE', message: expect.stringContaining('failover') });
    // Nothing half-applied: no event, every partition still MIRRORING.
    expect(await decisions(mirror)).toEqual(before);
    expect(await partitionStates(mirror)).toEqual(['MIRRORING', 'MIRRORING']);
    const result = await run('failover', { mirror, allTopics: true });
    expect(result).toMatchObject({ source: { reachable: false }, states: { STOPPED: 2 } });
    expect(result.partitions.map((p) => p.recordsBehind)).toEqual([null, null]);
  });

  it('bad requests: unknown topic, a topic already stopped, no selection', async () => {
    const { mirror, topic } = await mirrored(1, 10);
    const before = await decisions(mirror);
    expect(await refusal('failover', { mirror, topics: ['nope'] })).toMatchObject({ code: 'TOPIC_NOT_IN_CLUSTER_MIRROR' });
    expect(await refusal('failover', { mirror } as OperationInputs['failover'])).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await refusal('failover', { mirror, include: ['('] })).toMatchObject({ code: 'INVALID_TOPIC_PATTERN' });
    expect(await refusal('failover', { mirror, topics: [topic, 'nope'] })).toMatchObject({ code: 'TOPIC_NOT_IN_CLUSTER_MIRROR' });
    expect(await refusal('failback', { mirror })).toMatchObject({ code: 'MIRROR_TOPIC_NOT_STOPPED' });
    // Nothing half-applied: no event, the partition still MIRRORING.
    expect(await decisions(mirror)).toEqual(before);
    expect(await partitionStates(mirror)).toEqual(['MIRRORING']);
    await run('failover', { mirror, topics: [topic] });
    // Run again: everything is STOPPED already; it completes without changing anything.
    expect(await run('failover', { mirror, topics: [topic] })).toMatchObject({ states: { STOPPED: 1 } });
  });
});

describe('promote', () => {
  it('with a producer still writing: waits until the lag is 0, stops, and loses nothing', async () => {
    const { mirror, topic } = await mirrored(2, 200);
    let writing = true;
    let sent = 200;
    const writer = (async () => {
      const producer = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
      await producer.connect();
      while (writing) {
        await producer.send({ topic, messages: messages(20, 2, { from: sent }) });
        sent += 20;
        await new Promise((r) => setTimeout(r, 20));
      }
      await producer.disconnect();
    })();
    const promoting = run('promote', { mirror, allTopics: true, timeoutSeconds: 60 });
    // The producers are stopped a moment later, as a planned switchover does.
    await new Promise((r) => setTimeout(r, 3_000));
    writing = false;
    await writer;
    const result = await promoting;
    expect(result).toMatchObject({ mode: 'promote', states: { STOPPED: 2 } });
    expect(result.partitions.map((p) => p.recordsBehind)).toEqual(['0', '0']);
    expect((await ends('dest', topic, 2)).reduce((a, b) => a + b, 0n)).toBe(BigInt(sent));
    for (const p of all(2)) expect(await verifyPartition(t.source, t.dest, topic, p)).toMatchObject({ equal: true });
  });

  it('times out with PROMOTE_TIMEOUT when the lag cannot reach 0 (a stuck writer holds the lease), pointing to failover; nothing stopped', async () => {
    const { mirror, topic } = await mirrored(1, 10);
    // Another owner takes the partition's lease for an hour: the copy loses it at its next renewal
    // and its successors wait, so nothing is copied while the source grows.
    await t.db
      .updateTable('partition_leases')
      .set((eb) => ({ owner: 'stuck-worker', epoch: eb('epoch', '+', 1n), expires_at: new Date(Date.now() + 3_600_000) }))
      .where('mirror', '=', mirror)
      .execute();
    await new Promise((r) => setTimeout(r, 7_000)); // past the lease ttl (6 s): the copy has noticed
    const producer = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await sendAll(producer, topic, messages(50, 1, { from: 10 }));
    await producer.disconnect();
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await ends('dest', topic, 1)).toEqual([10n]);
    const before = (await t.db.selectFrom('events').select('position').where('stream_id', '=', mirrorStreamId(mirror)).execute()).length;
    const refused = await refusal('promote', { mirror, allTopics: true, timeoutSeconds: 2 });
    expect(refused).toMatchObject({ code: 'PROMOTE_TIMEOUT', message: expect.stringMatching(/lag \(50 records in 1 partitions\) did not reach 0 within 2 s.*kmirror failover/) });
    const rows = await t.db.selectFrom('mirror_partitions').select('state').where('mirror', '=', mirror).execute();
    expect(rows.map((r) => r.state)).toEqual(['MIRRORING']);
    expect((await t.db.selectFrom('events').select('position').where('stream_id', '=', mirrorStreamId(mirror)).execute()).length).toBe(before);
    // The stuck owner gone, mirroring catches up by itself.
    await t.db.updateTable('partition_leases').set({ owner: null, expires_at: null }).where('mirror', '=', mirror).execute();
    await expect.poll(() => ends('dest', topic, 1), { timeout: 60_000 }).toEqual([60n]);
  });

  it('promote waits while a transaction is open on the source (its records could still be committed): PROMOTE_TIMEOUT names it; once it commits, promote completes with its records', async () => {
    const { mirror, topic } = await mirrored(1, 10);
    const producer = t.sourceKafka.producer({ transactionalId: randomName('open-txn'), idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const txn = await producer.transaction();
    await txn.send({ topic, messages: messages(5, 1, { from: 10 }) });
    // The source's LSO stays at 10, so the lag alone is 0: only the open transaction holds promote.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await ends('dest', topic, 1)).toEqual([10n]);
    const refused = await refusal('promote', { mirror, allTopics: true, timeoutSeconds: 2 });
    expect(refused).toMatchObject({ code: 'PROMOTE_TIMEOUT', message: expect.stringMatching(/^1 partitions still have a transaction open on the source .* within 2 s; stop the producers/) });
    const dry = await run('promote', { mirror, allTopics: true, dryRun: true });
    expect(dry.partitions.map((p) => [p.recordsBehind, p.transactionOpenOnSource])).toEqual([['0', true]]);
    expect((await t.db.selectFrom('mirror_partitions').select('state').where('mirror', '=', mirror).execute()).map((r) => r.state)).toEqual(['MIRRORING']);

    const promoting = run('promote', { mirror, allTopics: true, timeoutSeconds: 60 });
    await new Promise((r) => setTimeout(r, 2_000));
    await txn.commit();
    await producer.disconnect();
    const result = await promoting;
    expect(result).toMatchObject({ mode: 'promote', states: { STOPPED: 1 } });
    expect(result.partitions.map((p) => [p.recordsBehind, p.transactionOpenOnSource])).toEqual([['0', false]]);
    expect(await ends('dest', topic, 1)).toEqual(await ends('source', topic, 1)); // 16: 10 + 5 + the commit marker
    expect(await verifyPartition(t.source, t.dest, topic, 0)).toMatchObject({ equal: true, recordsCompared: 15 });
  });

  it('a failover with records not mirrored yet reports them (the RPO) per partition, in the dry run and the result; the recorded position is the last mirrored record, its leader epoch and checksum', async () => {
    const { mirror, topic } = await mirrored(2, 200);
    // Copying stops (pause), the source goes on: 30 records on partition 0 and 20 on partition 1 are not mirrored.
    await run('pauseTopics', { mirror, allTopics: true });
    const producer = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await sendAll(producer, topic, [...messages(30, 1, { from: 1_000 }), ...messages(20, 1, { from: 2_000 }).map((m) => ({ ...m, partition: 1 }))]);
    await producer.disconnect();
    const dry = await run('failover', { mirror, allTopics: true, dryRun: true });
    expect(dry.partitions.map((p) => [p.partition, p.state, p.recordsBehind])).toEqual([
      [0, 'PAUSED', '30'],
      [1, 'PAUSED', '20'],
    ]);
    const result = await run('failover', { mirror, allTopics: true });
    expect(result).toMatchObject({ dryRun: false, states: { STOPPED: 2 } });
    expect(result.partitions.map((p) => p.recordsBehind)).toEqual(['30', '20']);
    expect(await ends('dest', topic, 2)).toEqual([100n, 100n]);
    const rows = await t.db.selectFrom('mirror_partitions').select(['partition', 'last_mirrored_offset', 'last_mirrored_epoch', 'last_mirrored_checksum']).where('mirror', '=', mirror).orderBy('partition').execute();
    for (const row of rows) {
      // The source's record 99 (the last one mirrored): its batch's leader epoch and its checksum.
      const fetched = await fetchBatches(t.source, topic, row.partition, { from: 99n });
      const batch = fetched.batches.find((b) => b.baseOffset <= 99n && b.lastOffset >= 99n)!;
      const record = decodeRecords(batch).find((r) => r.offset === 99n)!;
      expect([row.last_mirrored_offset, row.last_mirrored_epoch, row.last_mirrored_checksum], `partition ${row.partition}`).toEqual([100n, batch.leaderEpoch, recordChecksum(record)]);
    }
  });

  it('refuses while a partition is PAUSED (its lag cannot reach 0), and changes nothing', async () => {
    const { mirror } = await mirrored(1, 10);
    await run('pauseTopics', { mirror, allTopics: true });
    const refused = await refusal('promote', { mirror, allTopics: true, timeoutSeconds: 2 });
    expect(refused).toMatchObject({ code: 'INVALID_CLUSTER_MIRROR_STATES', message: expect.stringContaining('PAUSED') });
    // Its dry run says so too, rather than "would stop 1 partition".
    expect(await refusal('promote', { mirror, allTopics: true, dryRun: true })).toMatchObject({ code: 'INVALID_CLUSTER_MIRROR_STATES' });
    const rows = await t.db.selectFrom('mirror_partitions').select('state').where('mirror', '=', mirror).execute();
    expect(rows.map((r) => r.state)).toEqual(['PAUSED']);
  });
});

describe('consumer-group offsets', () => {
  it('the runner syncs committed offsets while mirroring, and failover syncs them once more', async () => {
    const { mirror, topic } = await mirrored(2, 200);
    const group = randomName('app');
    await t.source.commitGroupOffsets(group, [0, 1].map((partition) => ({ topic, partition, offset: 40n })));
    const committed = async () => (await t.destAdmin.fetchOffsets({ groupId: group, topics: [topic] }))[0]!.partitions.sort((a, b) => a.partition - b.partition).map((p) => p.offset);
    await expect.poll(committed, { timeout: 20_000 }).toEqual(['40', '40']);
    const status = await t.temporal.client.workflow.getHandle(`mirror:${mirror}`).query(statusQuery);
    expect(status.lastGroupSync).toMatchObject({ groups: expect.any(Number) });
    // The consumers moved on just before the disaster; the failover carries that over.
    await t.source.commitGroupOffsets(group, [0, 1].map((partition) => ({ topic, partition, offset: 90n })));
    const result = await run('failover', { mirror, allTopics: true });
    expect(result.groupSync).toMatchObject({ synced: expect.any(Number) });
    expect(await committed()).toEqual(['90', '90']);
  });

  it("an application's consumer group moves across a promote: on the destination it goes on at the next record, none missed, none read twice (Java consumers)", async () => {
    const { mirror, topic } = await mirrored(2, 200);
    const group = randomName('app');
    /** Apache Kafka's console consumer in `group`: the keys it read, one per record. max.poll.records=1
     *  so that what it commits on close is exactly what it printed. */
    const consume = async (connection: ClusterConnection, maxMessages: number): Promise<string[]> => {
      const config = clientProperties(`failover-${connection.sasl ? 'app' : 'source'}`, connection, { 'max.poll.records': '1' });
      const java = kafkaJava(
        'org.apache.kafka.tools.consumer.ConsoleConsumer',
        ['--bootstrap-server', connection.bootstrap.join(','), '--consumer.config', config, '--topic', topic, '--group', group, '--from-beginning', '--max-messages', String(maxMessages), '--timeout-ms', '30000', '--property', 'print.key=true', '--property', 'print.value=false'],
        '256m',
      );
      const r = await runProcess(java.command, java.args, { timeout: 90_000 });
      expect(r.code, r.stderr).toBe(0);
      return r.stdout.split('\n').filter((l) => l.startsWith('key-'));
    };
    const before = await consume(sourceConnection(), 120);
    expect(before).toHaveLength(120);
    // Promote: the runner's syncs, and the final one, carry the group's position over.
    expect(await run('promote', { mirror, allTopics: true })).toMatchObject({ states: { STOPPED: 2 } });
    // The application, now a client of the destination (its own user there), resumes.
    const after = await consume(destAppConnection(), 80);
    expect(after).toHaveLength(80);
    const all200 = Array.from({ length: 200 }, (_, n) => `key-${n}`);
    expect([...before, ...after].sort()).toEqual(all200.sort());
    expect(new Set(after).size).toBe(80);
  });
});

describe('retry and delete', () => {
  it('an operator retry brings FAILED partitions back to copying (attempts reset)', async () => {
    const { mirror, topic } = await mirrored(2, 100);
    // A final failure, recorded the way the runner records a copy's (FailPartitions).
    await executeMirrorCommand(t.db, { type: 'FailPartitions', mirror, partitions: [{ topic }], error: { code: 'KAFKA_ERROR', message: 'injected by the test' }, retryable: false }, { actor: 'test' });
    await run('retryPartitions', { mirror, topics: [topic], reason: 'noticed, nothing to fix' }).then(() => undefined);
    const producer = t.sourceKafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: messages(20, 2, { from: 1_000 }) });
    await producer.disconnect();
    await expect.poll(() => ends('dest', topic, 2), { timeout: 30_000 }).toEqual(await ends('source', topic, 2));
    const rows = await t.db.selectFrom('mirror_partitions').select(['state', 'retry_attempt', 'error_code']).where('mirror', '=', mirror).execute();
    expect(rows.map((r) => [r.state, r.retry_attempt, r.error_code])).toEqual([
      ['MIRRORING', 0, null],
      ['MIRRORING', 0, null],
    ]);
  });

  it('an ISR wait override needs a reason and is recorded with it', async () => {
    const { mirror, topic } = await mirrored(1, 10);
    expect(await refusal('retryPartitions', { mirror, overrideIsrWait: true })).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('reason') });
    const result = await run('retryPartitions', { mirror, overrideIsrWait: true, actor: 'oncall', reason: 'broker 3 is being replaced' });
    expect(result).toMatchObject({ retried: 0, isrWaitOverridden: [topic] });
    const events = await t.db.selectFrom('events').select(['data', 'metadata']).where('stream_id', '=', `mirror:${mirror}`).where('type', '=', 'IsrWaitOverridden').execute();
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ data: { topics: [topic] }, metadata: { actor: 'oncall', reason: 'broker 3 is being replaced' } });
  });

  it('delete is refused while a partition is not STOPPED; after a failover it deletes and stops the runner; the name can be used again', async () => {
    const { mirror, topic } = await mirrored(1, 10);
    const before = await decisions(mirror);
    expect(await refusal('deleteMirror', { mirror })).toMatchObject({ code: 'CLUSTER_MIRROR_NOT_EMPTY', message: expect.stringContaining('MIRRORING') });
    // Nothing half-applied: no event, the runner still running, the partition still MIRRORING.
    expect(await decisions(mirror)).toEqual(before);
    expect(await partitionStates(mirror)).toEqual(['MIRRORING']);
    expect((await t.temporal.client.workflow.getHandle(`mirror:${mirror}`).describe()).status.name).toBe('RUNNING');
    await run('failover', { mirror, topics: [topic] });
    expect(await run('deleteMirror', { mirror, reason: 'done' })).toEqual({ mirror, deleted: true });
    const runner = await t.temporal.client.workflow.getHandle(`mirror:${mirror}`).describe();
    expect(runner.status.name).toBe('CANCELLED');
    expect((await t.db.selectFrom('mirrors').select('state').where('name', '=', mirror).executeTakeFirstOrThrow()).state).toBe('deleted');
    await run('createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst' });
    expect((await t.temporal.client.workflow.getHandle(`mirror:${mirror}`).describe()).status.name).toBe('RUNNING');
  });
});
