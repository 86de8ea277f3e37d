// The least Kafka ACLs kmirror needs (docs/security.md), checked as an operator would apply them:
// the commands of the doc's two `kafka-acls.sh` blocks are run as written (Kafka's own AclCommand
// from the stack's jars, variables filled in) for the stack's `mirror` user, which has no other
// grant, on the source (its SASL listener; StandardAuthorizer) and on the secured destination. A
// mirror registered with that user's credentials then runs its whole course: start (a plain and a
// transactional topic, so gap fillers are written), read-only ACLs placed, pause, resume, group-offset
// sync, promote (ACLs lifted) and a record-by-record verify. Before the grants the same start is
// refused with a code and nothing is appended; without the optional cluster grants kmirror still
// mirrors and says that the read-only guard is not enforced; ACL sync reads the source's ACLs only
// with the doc's optional source grant.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import kafkajs from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerCluster } from '../../db/cluster-store.ts';
import { readStream } from '../../db/event-store/read-stream.ts';
import { mirrorStreamId } from '../../domain/events.ts';
import { createKafka } from '../../kafka/connection.ts';
import { verifyPartition } from '../../kafka/verify.ts';
import { clientProperties, kafkaJava, mirrorUserConnection } from '../../scripts/stack/kafka.ts';
import { MIRROR_USER, projectRoot } from '../../scripts/stack/topology.ts';
import { controlPlane, operationsOn, type ControlPlane } from '../support/control-plane.ts';
import { allPartitions, messages, sendAll } from '../support/mirror-fixture.ts';
import { interleaving, LibrdkafkaProducers } from '../support/second-client.ts';
import { destAppConnection, destConnection, randomName, sourceConnection } from '../support/stack.ts';

const { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ConfigResourceTypes, ResourcePatternTypes } = kafkajs;
const PRINCIPAL = `User:${MIRROR_USER}`;
const PARTITIONS = 3;

let t: ControlPlane;
const { run, refusal, ends } = operationsOn(() => t);
/** Every mirrored topic and synced group of this file starts with these (the doc's $TOPICS, $GROUPS). */
const topicPrefix = `${randomName('lp')}.`;
const groupPrefix = `${randomName('lpg')}.`;
const escaped = topicPrefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// --- the doc's commands ------------------------------------------------------------------------
type Block = 'source' | 'source-acl-sync' | 'destination';

/** Shell words of a line: "…" and '…' quoting, $NAME filled in from `vars` (outside single quotes). */
function shellWords(line: string, vars: Readonly<Record<string, string>>): string[] {
  const fill = (s: string): string =>
    s.replace(/\$([A-Z_]+)/g, (_, name: string) => {
      const value = vars[name];
      if (value === undefined) throw new Error(`docs/security.md uses $${name}, which this test does not define`);
      return value;
    });
  return [...line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((m) => (m[2] !== undefined ? m[2] : fill(m[1] ?? m[3]!)));
}

/** The `kafka-acls.sh` commands of one of the doc's least-privilege blocks, as argument lists. */
function docCommands(block: Block, vars: Readonly<Record<string, string>>): string[][] {
  const doc = readFileSync(join(projectRoot, 'docs', 'security.md'), 'utf8');
  const at = doc.indexOf(`<!-- least-privilege: ${block} -->`);
  const body = at < 0 ? undefined : /```sh\n([\s\S]*?)```/.exec(doc.slice(at))?.[1];
  if (body === undefined) throw new Error(`docs/security.md has no least-privilege block for the ${block}`);
  const commands = body
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => shellWords(l, vars));
  for (const c of commands) expect(c[0], 'each line of the block is a kafka-acls.sh command').toBe('kafka-acls.sh');
  return commands.map((c) => c.slice(1));
}

/** Kafka's AclCommand (kafka-acls.sh) with these arguments; fails the test on a non-zero exit. */
function kafkaAcls(args: readonly string[]): void {
  const java = kafkaJava('org.apache.kafka.tools.AclCommand', args, '256m');
  const result = spawnSync(java.command, java.args, { encoding: 'utf8', timeout: 90_000 });
  if (result.status !== 0) throw new Error(`kafka-acls.sh ${args.join(' ')} failed: ${result.stdout}${result.stderr}`);
}

const adminConfig: Record<Block, () => { readonly config: string } & Record<string, string>> = {
  source: () => ({ SOURCE: sourceConnection().bootstrap.join(','), config: clientProperties('least-privilege-source-admin', sourceConnection()) }),
  'source-acl-sync': () => adminConfig.source(),
  destination: () => ({ DEST: destConnection().bootstrap.join(','), config: clientProperties('least-privilege-dest-admin', destConnection()) }),
};

/** Run a block's commands as the cluster's administrator (--command-config replaced by the stack's). */
function grant(block: Block, filter: (args: readonly string[]) => boolean = () => true, action: '--add' | '--remove' = '--add'): number {
  const admin = adminConfig[block]();
  const commands = docCommands(block, { ...admin, KMIRROR: PRINCIPAL, TOPICS: topicPrefix, GROUPS: groupPrefix }).filter(filter);
  for (const args of commands) {
    const withConfig = args.map((a, i) => (args[i - 1] === '--command-config' ? admin.config : a === '--add' ? action : a));
    kafkaAcls(action === '--remove' ? [...withConfig, '--force'] : withConfig);
  }
  return commands.length;
}

/** Remove every ACL of the `mirror` user on both clusters (a clean slate before and after). */
async function revokeAll(): Promise<void> {
  for (const admin of [t.sourceAdmin, t.destAdmin]) {
    await admin.deleteAcls({
      filters: [
        {
          resourceType: AclResourceTypes.ANY,
          resourcePatternType: ResourcePatternTypes.ANY,
          principal: PRINCIPAL,
          host: '*',
          operation: AclOperationTypes.ANY,
          permissionType: AclPermissionTypes.ANY,
        },
      ],
    });
  }
}

async function sourceTopic(suffix: string): Promise<string> {
  const topic = `${topicPrefix}${suffix}`;
  t.track(topic);
  await t.sourceAdmin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }], waitForLeaders: true });
  return topic;
}

const caughtUp = async (topic: string): Promise<void> => {
  await expect.poll(() => ends('dest', topic, PARTITIONS), { timeout: 60_000, interval: 500 }).toEqual(await ends('source', topic, PARTITIONS));
};

async function verified(topic: string): Promise<void> {
  for (const p of allPartitions(PARTITIONS)) expect(await verifyPartition(t.source, t.dest, topic, p), `${topic}-${p}`).toMatchObject({ equal: true });
}

/** Whether the destination's `app` user (an ordinary producer with ALLOW WRITE on '*') may write `topic`. */
async function appMayWrite(topic: string): Promise<boolean | string> {
  const producer = createKafka(destAppConnection(), { retries: 0 }).producer({ allowAutoTopicCreation: false });
  await producer.connect();
  try {
    await producer.send({ topic, messages: [{ key: 'app', value: 'a foreign write' }], acks: -1 });
    return true;
  } catch (err) {
    return (err as { type?: string }).type ?? String(err);
  } finally {
    await producer.disconnect();
  }
}

beforeAll(async () => {
  // Discovery (and config sync with it) every 2 s, so the config sync below is seen soon.
  t = await controlPlane({ env: { KMIRROR_DISCOVERY_INTERVAL_MS: '2000' } });
  await revokeAll();
  const who = { actor: 'test-setup' };
  await registerCluster(t.db, t.config.secretKey, { cluster: 'lp-src', connection: mirrorUserConnection('source') }, who);
  await registerCluster(t.db, t.config.secretKey, { cluster: 'lp-dst', connection: mirrorUserConnection('dest') }, who);
}, 120_000);

afterAll(async () => {
  if (t === undefined) return;
  await revokeAll().catch(() => undefined);
  await t.close();
});

describe('kmirror with exactly the Kafka ACLs docs/security.md lists', () => {
  const mirror = randomName('lp');
  let plain: string;
  let transactional: string;

  it('without any grant, start is refused (UNKNOWN_TOPIC, naming the missing Describe grant); with the source grants only, CLUSTER_AUTHORIZATION_FAILED; nothing is appended', async () => {
    plain = await sourceTopic('plain');
    await run('createMirror', { mirror, sourceCluster: 'lp-src', destinationCluster: 'lp-dst' });
    const before = await readStream(t.db, mirrorStreamId(mirror));
    const refused = await refusal('startTopics', { mirror, topics: [plain] });
    // Kafka lists only the topics a principal may Describe, so the topic looks absent; the message says why it may be.
    expect(refused).toMatchObject({ code: 'UNKNOWN_TOPIC', message: expect.stringContaining('may not Describe it') });
    expect((await readStream(t.db, mirrorStreamId(mirror))).length).toBe(before.length);
    // With the source's grants but none on the destination, creating the mirror topic is refused
    // by Kafka's ACLs: CLUSTER_AUTHORIZATION_FAILED naming Kafka's refusal (not kmirror's own
    // CLUSTER_MIRROR_AUTHORIZATION_FAILED), nothing appended.
    expect(grant('source')).toBe(2);
    const denied = await refusal('startTopics', { mirror, topics: [plain] });
    expect(denied).toMatchObject({ code: 'CLUSTER_AUTHORIZATION_FAILED', message: expect.stringMatching(/AUTHORIZATION_FAILED|not authorized/i) });
    expect((await readStream(t.db, mirrorStreamId(mirror))).length).toBe(before.length);
  });

  it('with them: mirrors a plain and a transactional topic exactly, read-only, through pause, resume, group sync and promote', async () => {
    expect(grant('source')).toBe(2);
    expect(grant('destination')).toBe(4);

    const producer = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await sendAll(producer, plain, messages(3_000, PARTITIONS));
    transactional = await sourceTopic('txn');
    const second = await LibrdkafkaProducers.start({ topic: transactional, transactional: [true, true, false], id: randomName('lp-txn') });
    for (const command of interleaving(Date.now() % 1_000_000, 40, PARTITIONS)) second.send(command);
    await second.sync();
    await second.markersWritten(t.source, transactional, allPartitions(PARTITIONS));
    await second.close();
    const group = `${groupPrefix}orders`;
    await t.sourceAdmin.setOffsets({ groupId: group, topic: plain, partitions: allPartitions(PARTITIONS).map((partition) => ({ partition, offset: '500' })) });

    const started = await run('startTopics', { mirror, include: [`${escaped}.*`] });
    expect(started.topics.map((x) => x.topic).sort()).toEqual([plain, transactional].sort());
    expect(started.readOnly).toMatchObject({ enforced: true });
    expect(started.readOnly.denied).toContain('User:app');
    expect(started.failed).toEqual([]);
    await caughtUp(plain);
    await caughtUp(transactional);
    await verified(plain);
    await verified(transactional);
    expect(await appMayWrite(plain)).toBe('TOPIC_AUTHORIZATION_FAILED');

    // Config sync: a config set on the source topic reaches the mirror topic.
    await t.sourceAdmin.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: plain, configEntries: [{ name: 'retention.ms', value: '98765432' }] }] });
    const retention = async () => {
      const { resources } = await t.destAdmin.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: plain, configNames: ['retention.ms'] }], includeSynonyms: false });
      return resources[0]!.configEntries[0]?.configValue;
    };
    await expect.poll(retention, { timeout: 30_000, interval: 500 }).toBe('98765432');

    // Pause really stops; resume catches up.
    await run('pauseTopics', { mirror, allTopics: true });
    const pausedAt = await ends('dest', plain, PARTITIONS);
    await sendAll(producer, plain, messages(600, PARTITIONS, { from: 3_000 }));
    await sleep(2_000);
    expect(await ends('dest', plain, PARTITIONS)).toEqual(pausedAt);
    await run('resumeTopics', { mirror, allTopics: true });
    await caughtUp(plain);
    await producer.disconnect();

    // The group's offsets reach the destination (a group with no members there).
    await expect
      .poll(
        async () => {
          const [committed] = await t.destAdmin.fetchOffsets({ groupId: group, topics: [plain] });
          return committed?.partitions.map((p) => p.offset).sort();
        },
        { timeout: 40_000, interval: 1_000 },
      )
      .toEqual(['500', '500', '500']);

    const promoted = await run('promote', { mirror, allTopics: true, timeoutSeconds: 60 });
    expect(promoted.failed).toEqual([]);
    expect(promoted.writable?.lifted).toContain('User:app');
    await verified(plain);
    await verified(transactional);
    expect(await appMayWrite(plain)).toBe(true);
    // Deleted, so its discovery does not take the next test's topic (it matches this mirror's pattern).
    expect(await run('deleteMirror', { mirror })).toEqual({ mirror, deleted: true });
  });

  it('without the optional cluster grants (ACL management) it mirrors, and says the read-only guard is not enforced', async () => {
    expect(grant('destination', (args) => args.includes('--cluster'), '--remove')).toBe(1);
    const other = randomName('lp2');
    const topic = await sourceTopic('unguarded');
    const producer = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await sendAll(producer, topic, messages(900, PARTITIONS));
    await producer.disconnect();
    await run('createMirror', { mirror: other, sourceCluster: 'lp-src', destinationCluster: 'lp-dst' });
    const started = await run('startTopics', { mirror: other, topics: [topic] });
    expect(started.readOnly).toEqual({ enforced: false, denied: [], reason: 'kmirror may not manage ACLs on the destination' });
    await caughtUp(topic);
    await verified(topic);
    const failedOver = await run('failover', { mirror: other, allTopics: true });
    expect(failedOver.failed).toEqual([]);
    expect(failedOver.writable).toEqual({ lifted: [], reason: 'kmirror may not manage ACLs on the destination' });
  });

  it("ACL sync: without the doc's optional source grant the source's ACLs are not read (the guard is kept); with it, a selected principal's ACL on a mirror topic reaches the destination", async () => {
    expect(grant('destination', (args) => args.includes('--cluster'))).toBe(1);
    const reader = `User:${randomName('lp-reader')}`;
    const synced = randomName('lp3');
    const topic = await sourceTopic('acls');
    const readAcl = { resourceType: AclResourceTypes.TOPIC, resourceName: topic, resourcePatternType: ResourcePatternTypes.LITERAL, principal: reader, host: '*', operation: AclOperationTypes.READ, permissionType: AclPermissionTypes.ALLOW };
    await t.sourceAdmin.createAcls({ acl: [readAcl] });
    const readersOnDestination = async () => {
      const { resources } = await t.destAdmin.describeAcls({ resourceType: AclResourceTypes.TOPIC, resourceName: topic, resourcePatternType: ResourcePatternTypes.LITERAL, principal: reader, operation: AclOperationTypes.ANY, permissionType: AclPermissionTypes.ANY });
      return resources.flatMap((r) => r.acls).length;
    };
    try {
      await run('createMirror', { mirror: synced, sourceCluster: 'lp-src', destinationCluster: 'lp-dst', acls: { include: [reader] } });
      expect(await run('startTopics', { mirror: synced, topics: [topic] })).toMatchObject({ readOnly: { enforced: true } });
      // Rounds run every 2 s: without the grant, none brings the reader's ACL over.
      await sleep(6_000);
      expect(await readersOnDestination()).toBe(0);
      expect(grant('source-acl-sync')).toBe(1);
      await expect.poll(readersOnDestination, { timeout: 30_000, interval: 500 }).toBe(1);
      const events = (await readStream(t.db, mirrorStreamId(synced))).filter((e) => e.type === 'MirrorTopicAclsSynced');
      expect(events.map((e) => e.data)).toEqual([{ topic, granted: [{ principal: reader, host: '*', operation: 'READ', permission: 'ALLOW' }], revoked: [], denied: [] }]);
    } finally {
      await t.sourceAdmin.deleteAcls({ filters: [readAcl] });
      await t.destAdmin.deleteAcls({ filters: [{ ...readAcl }] });
    }
  });
});

