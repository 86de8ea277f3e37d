// Moving from MirrorMaker 2: `kmirror import-mm2` (a child process, as an operator runs it) turns a
// realistic dedicated-mode MirrorMaker 2 config for the local stack — the layout of Kafka's own
// connect-mirror-maker.properties, a SASL destination with a jaas config, tuning keys kmirror does
// not use — into registered clusters and a running mirror: the flow's topics arrive at the same
// offsets, a topic the flow excludes does not, a second run keeps everything, and no output
// carries the password.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readVar } from '../../config.ts';
import { listClusters } from '../../db/cluster-store.ts';
import { describeMirror } from '../../db/projections/describe-mirror.ts';
import { verifyPartition } from '../../kafka/verify.ts';
import { controlPlane, kmirrorOn, type ControlPlane } from '../support/control-plane.ts';
import { messages, sendAll } from '../support/mirror-fixture.ts';
import { randomName, stackEnv } from '../support/stack.ts';

let t: ControlPlane;
let dir: string;
const password = readVar(stackEnv(), 'DEST_SASL_PASSWORD')!;
const prefix = randomName('mm2').replaceAll('-', '_');
const east = randomName('east');
const west = randomName('west');

beforeAll(async () => {
  t = await controlPlane();
  dir = mkdtempSync(join(tmpdir(), 'kmirror-mm2-'));
});

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await t?.close();
});

const kmirror = (args: string[]) => kmirrorOn(t, args);

describe('kmirror import-mm2', () => {
  it('turns a MirrorMaker 2 config into registered clusters and a running mirror of the same topics', async () => {
    const [included, alsoIncluded, excluded] = [`${prefix}.orders`, `${prefix}.payments`, `${prefix}.internal`];
    for (const topic of [included, alsoIncluded, excluded]) {
      await t.sourceAdmin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
      t.track(topic);
    }
    const producer = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    for (const topic of [included, alsoIncluded, excluded]) await sendAll(producer, topic, messages(300, 2));
    await producer.disconnect();

    const config = [
      '# Laid out like Kafka\'s config/connect-mirror-maker.properties, for the local stack.',
      `clusters = ${east}, ${west}`,
      `${east}.bootstrap.servers = ${stackEnv().SOURCE_BOOTSTRAP}`,
      `${west}.bootstrap.servers = ${stackEnv().DEST_BOOTSTRAP}`,
      `${west}.security.protocol = SASL_PLAINTEXT`,
      `${west}.sasl.mechanism = PLAIN`,
      `${west}.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username="${stackEnv().DEST_SASL_USERNAME}" password="${password}";`,
      `${east}->${west}.enabled = true`,
      // A properties file unescapes backslashes: written \\. here, the flow's regex reads \. (a dot).
      `${east}->${west}.topics = ${prefix}\\\\..*`,
      `${east}->${west}.topics.exclude = .*\\\\.internal`,
      `${east}->${west}.groups = app-.*`,
      `${west}->${east}.enabled = false`,
      'sync.group.offsets.enabled = true',
      'replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy',
      'tasks.max = 4',
      'replication.factor = 1',
      'checkpoints.topic.replication.factor = 1',
      'emit.checkpoints.interval.seconds = 10',
      '',
    ].join('\n');
    const file = join(dir, 'mm2.properties');
    writeFileSync(file, config, { mode: 0o600 });

    const dry = await kmirror(['import-mm2', file, '--dry-run', '--json']);
    expect(dry.code, dry.stderr).toBe(0);
    const plan = JSON.parse(dry.stdout) as { mirrors: { name: string; include: string[]; exclude: string[] }[]; notCarried: { key: string; reason: string }[] };
    const mirror = `${east}-to-${west}`;
    expect(plan.mirrors.map((m) => m.name)).toEqual([mirror]);
    expect(plan.notCarried.map((n) => n.key)).toEqual(expect.arrayContaining(['tasks.max', 'replication.factor', 'checkpoints.topic.replication.factor']));
    expect(await listClusters(t.db)).toHaveLength(2); // the fixture's src and dst only: a dry run changes nothing

    const imported = await kmirror(['import-mm2', file, '--json', '--actor', 'migration', '--reason', 'leaving MirrorMaker 2']);
    expect(imported.code, imported.stderr).toBe(0);
    const result = JSON.parse(imported.stdout) as { outcomes: Record<string, string>; started: Record<string, { topics: number; partitions: number }> };
    expect(result.outcomes).toEqual({ [`cluster:${east}`]: 'registered', [`cluster:${west}`]: 'registered', [`mirror:${mirror}`]: 'created' });
    expect(result.started[mirror]).toEqual({ topics: 2, partitions: 4 });
    // sync.topic.acls.enabled is MirrorMaker 2's default true: every principal's topic ACLs are synced.
    expect(await describeMirror(t.db, mirror)).toMatchObject({ aclInclude: ['.*'], aclExclude: [], groupInclude: ['app-.*'] });

    // The flow's topics arrive record by record at the same offsets; the excluded one never does.
    for (const topic of [included, alsoIncluded]) {
      await expect.poll(async () => [...(await t.dest.listOffsets(topic, [0, 1], 'latest')).values()], { timeout: 60_000 }).toEqual([150n, 150n]);
      for (const partition of [0, 1]) expect(await verifyPartition(t.source, t.dest, topic, partition)).toMatchObject({ equal: true, recordsCompared: 150 });
    }
    expect(await t.destAdmin.listTopics()).not.toContain(excluded);

    // A second run keeps what exists; the human form lists what was not carried over, and why.
    const again = await kmirror(['import-mm2', file]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(new RegExp(`${mirror}.*kept`));
    expect(again.stdout).toContain('not carried over');
    expect(again.stdout).toContain('tasks.max=4');

    for (const run of [dry, imported, again]) expect(`${run.stdout}${run.stderr}`).not.toContain(password);
  });

  it('refuses a config it cannot use with a code and a message, changing nothing', async () => {
    const file = join(dir, 'bad.properties');
    writeFileSync(file, `clusters = a, b\na.bootstrap.servers = 127.0.0.1:1\nb.bootstrap.servers = 127.0.0.1:2\na->c.enabled = true\n`);
    const refused = await kmirror(['import-mm2', file, '--json']);
    expect(refused.code).not.toBe(0);
    expect(JSON.parse(refused.stdout)).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
    const missing = await kmirror(['import-mm2', join(dir, 'absent.properties')]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/^error INVALID_ARGUMENT: MirrorMaker 2 config .*absent\.properties cannot be read/m);
    expect(await listClusters(t.db)).toHaveLength(4);
  });
});
