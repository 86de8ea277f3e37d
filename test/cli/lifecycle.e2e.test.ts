// A mirror's whole lifecycle through the `kmirror` binary, as an operator runs it on the local
// stack: register two clusters (and clusters over SASL/SCRAM, SSL and SASL_SSL), create a mirror, start, pause and resume a topic, read `list`,
// `describe`, `groups`, `verify` and `history`, fail one topic over (--include), fail back, promote
// the reverse mirror, delete both, and the failures an operator meets (each an exit code, the common
// error format, and no event appended). Every command is a child process (`node --import tsx
// cli/main.ts`) on this file's database and task queue; controlPlane() supplies both and the worker.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import type { Producer } from 'kafkajs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readVar } from '../../config.ts';
import { readStream } from '../../db/event-store/read-stream.ts';
import { clusterStreamId, mirrorStreamId } from '../../domain/events.ts';
import { buildProgram } from '../../cli/program.ts';
import { readCommitted, verifyPartition } from '../../kafka/verify.ts';
import { run, start } from '../support/child.ts';
import { cliEnv, controlPlane, type ControlPlane } from '../support/control-plane.ts';
import { allPartitions, messages, sendAll } from '../support/mirror-fixture.ts';
import { closedPort, destAppConnection, destConnection, randomName, stackConfigEnv, stackEnv, testClientOptions } from '../support/stack.ts';
import { createKafka } from '../../kafka/connection.ts';
import { clientProperties, kafkaJava } from '../../scripts/stack/kafka.ts';
import { ensureStackTls } from '../../scripts/stack/tls.ts';
import { sourceSaslSslPort, sourceSslPort } from '../../scripts/stack/topology.ts';
import type { DescribedMirror } from '../../cli/commands/mirrors.ts';
import { progressQuery } from '../../workflows/messages.ts';

interface CliRun {
  readonly args: readonly string[];
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

interface HistoryJson {
  readonly mirror: string;
  readonly events: {
    readonly position: string;
    readonly version: string;
    readonly type: string;
    readonly data: Record<string, unknown>;
    readonly actor: string;
    readonly reason: string | null;
    readonly workflowId: string | null;
    readonly runId: string | null;
    readonly time: string;
  }[];
  readonly chain?: { readonly ok: boolean };
}

const PARTITIONS = 3;
const DECIMAL = /^\d+$/;

let t: ControlPlane;
let env: Record<string, string>;
let producer: Producer;
/** Every command this file ran, to check at the end that no output carried the SASL password. */
const runs: CliRun[] = [];

const mirror = randomName('life');
const stream = mirrorStreamId(mirror);
const password = readVar(stackEnv(), 'DEST_SASL_PASSWORD')!;
const saslUser = stackEnv().DEST_SASL_USERNAME!;
const reason = 'DR for the east region';
let topic: string;
/** Records produced to `topic` so far (partition = n % PARTITIONS). */
let produced = 0;

beforeAll(async () => {
  t = await controlPlane();
  // The stack's endpoints with this file's database and task queue, and the shell's PATH and HOME;
  // no env file beneath it, so nothing but what the test sets reaches the CLI.
  env = cliEnv(t);
  producer = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  topic = await t.sourceTopic({ partitions: PARTITIONS });
});
afterAll(async () => {
  await producer?.disconnect();
  await t?.close();
});

/** Operations wait for their workflow and `cluster add` for the cluster; every other command
 *  answers in seconds. */
const waits = (args: readonly string[]): boolean =>
  !args.includes('--help') && (['create', 'start', 'pause', 'resume', 'failover', 'promote', 'failback', 'delete'].includes(args[0]!) || (args[0] === 'cluster' && args[1] === 'add'));

/** `kmirror <args>` as a child process from the repository root. A command that has not exited in
 *  time is killed (code null): a CLI that prints its answer and then hangs is a bug. */
async function kmirror(...args: string[]): Promise<CliRun> {
  const timeout = waits(args) ? 120_000 : 20_000;
  const result = await run(process.execPath, ['--import', 'tsx', 'cli/main.ts', ...args], { env, timeout });
  const done = { args, code: result.code, stdout: result.stdout, stderr: result.stderr };
  runs.push(done);
  return done;
}

/** How a run ended, for assertion messages. */
const ended = (r: CliRun): string =>
  `kmirror ${r.args.join(' ')}: ${r.code === null ? 'did not exit in time (killed)' : `exit ${r.code}`}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;

/** `list` at most `width` at a time (each is a tsx process: a few of them fill two cores). */
async function limited<T, R>(list: readonly T[], width: number, f: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < list.length) {
      const i = next++;
      out[i] = await f(list[i]!);
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  return out;
}

/** `kmirror <args> --json` that must succeed; its stdout parsed. The exit code is checked softly: a
 *  command that printed its answer but did not exit fails the test, and the lifecycle goes on. */
async function kmirrorJson<T>(...args: string[]): Promise<T> {
  const result = await kmirror(...args, '--json');
  expect.soft(result.code, ended(result)).toBe(0);
  return JSON.parse(result.stdout) as T;
}

/** Each command in turn, every one expected to succeed (softly: a failure is reported, the test goes on). */
async function kmirrorAll(...commands: string[][]): Promise<void> {
  for (const args of commands) {
    const r = await kmirror(...args);
    expect.soft(r.code, ended(r)).toBe(0);
  }
}

async function produce(count: number): Promise<void> {
  await sendAll(producer, topic, messages(count, PARTITIONS, { from: produced }));
  produced += count;
}

/** The end offset of each partition of `topic` after `produced` records. */
const endsAfter = (n: number): string[] => allPartitions(PARTITIONS).map((p) => String(Math.floor(n / PARTITIONS) + (p < n % PARTITIONS ? 1 : 0)));

/** The destination ends of `topic` equal the source's after `produced` records. */
async function destinationCaughtUp(): Promise<void> {
  const want = endsAfter(produced);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ends = await t.dest.listOffsets(topic, allPartitions(PARTITIONS), 'latest');
    if (allPartitions(PARTITIONS).every((p) => String(ends.get(p)) === want[p])) return;
    if (Date.now() > deadline) throw new Error(`destination ends ${[...ends.values()].join(',')} not ${want.join(',')} within 60 s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** `describe --json` until every partition of `topic` has lag 0 at the source end `produced` and
 *  its position recorded there (the runner records positions shortly after it writes). */
async function caughtUp(): Promise<DescribedMirror> {
  await destinationCaughtUp();
  const want = endsAfter(produced);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const d = await kmirrorJson<DescribedMirror>('describe', mirror);
    const mine = d.partitions.filter((p) => p.topic === topic);
    const done = (p: DescribedMirror['partitions'][number], i: number) =>
      p.lag === '0' && p.sourceEndOffset === want[i] && p.destinationEndOffset === want[i] && p.lastMirroredOffset === want[i];
    if (mine.length === PARTITIONS && mine.every(done)) return d;
    if (Date.now() > deadline) throw new Error(`not caught up within 30 s: ${JSON.stringify(mine)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

const eventCount = async (streamId: string): Promise<number> => (await readStream(t.db, streamId)).length;

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('kmirror lifecycle', () => {
  it('cluster add | list | describe | remove: registers both clusters and never prints the password', async () => {
    const east = await kmirror('cluster', 'add', 'east', '--bootstrap', stackEnv().SOURCE_BOOTSTRAP!, '--actor', 'alice');
    expect.soft(east.code, ended(east)).toBe(0);
    expect(east.stdout).toMatch(/^cluster east\n/);
    expect(east.stdout).toMatch(new RegExp(`^ {2}bootstrap +${escape(stackEnv().SOURCE_BOOTSTRAP!)}$`, 'm'));
    expect(east.stdout).toMatch(/^ {2}security protocol +PLAINTEXT$/m);
    expect(east.stdout).toMatch(/^ {2}brokers +\d+$/m);

    const west = await kmirrorJson<Record<string, unknown>>(
      'cluster', 'add', 'west',
      '--bootstrap', stackEnv().DEST_BOOTSTRAP!,
      '--security-protocol', 'SASL_PLAINTEXT',
      '--sasl-mechanism', 'plain',
      '--username', saslUser,
      '--password-file', stackEnv().DEST_SASL_PASSWORD_FILE!,
    );
    expect(west).toEqual({
      name: 'west',
      connection: { bootstrap: stackEnv().DEST_BOOTSTRAP!.split(','), securityProtocol: 'SASL_PLAINTEXT', saslMechanism: 'plain', saslUsername: saslUser },
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      clusterId: expect.any(String),
      brokers: expect.any(Number),
    });

    const list = await kmirrorJson<{ name: string; connection: Record<string, unknown> }[]>('cluster', 'list');
    // controlPlane() registered src and dst; the list is ordered by name.
    expect(list.map((c) => c.name)).toEqual(['dst', 'east', 'src', 'west']);
    expect(list.find((c) => c.name === 'east')!.connection).toEqual({ bootstrap: stackEnv().SOURCE_BOOTSTRAP!.split(','), securityProtocol: 'PLAINTEXT' });

    const described = await kmirrorJson<Record<string, unknown>>('cluster', 'describe', 'west');
    expect(described).toEqual({ name: 'west', connection: west.connection, createdAt: west.createdAt, updatedAt: west.updatedAt });
    const human = await kmirror('cluster', 'describe', 'west');
    expect.soft(human.code, ended(human)).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`^ {2}sasl +plain as ${escape(saslUser)}$`, 'm'));

    // The registration is an event of the cluster's stream, by the actor who asked.
    const [registered] = await readStream(t.db, clusterStreamId('east'));
    expect(registered).toMatchObject({ type: 'ClusterRegistered', metadata: { actor: 'alice' } });

    // A cluster no mirror uses is removed, with its credentials; the stream keeps who and why.
    const spare = await kmirror('cluster', 'add', 'spare', '--bootstrap', '127.0.0.1:1', '--no-check');
    expect.soft(spare.code, ended(spare)).toBe(0);
    expect(await kmirrorJson('cluster', 'remove', 'spare', '--reason', 'registered by mistake')).toEqual({ cluster: 'spare', removed: true });
    expect((await kmirrorJson<{ name: string }[]>('cluster', 'list')).map((c) => c.name)).toEqual(['dst', 'east', 'src', 'west']);
    expect((await readStream(t.db, clusterStreamId('spare'))).map((e) => [e.type, e.metadata.reason ?? null])).toEqual([
      ['ClusterRegistered', null],
      ['ClusterRemoved', 'registered by mistake'],
    ]);
    for (const r of runs) expect(`${r.stdout}${r.stderr}`).not.toContain(password);
  });

  it('cluster add with SASL/SCRAM: a SCRAM-SHA-512 user authenticates; a wrong password is refused with a code and not printed', async () => {
    // A SCRAM user on the destination, created as its operators would (kafka-configs).
    const user = randomName('scram');
    const secret = randomBytes(12).toString('hex');
    const admin = clientProperties('lifecycle-dest-super', destConnection());
    const alter = kafkaJava('kafka.admin.ConfigCommand', ['--bootstrap-server', stackEnv().DEST_BOOTSTRAP!, '--command-config', admin, '--alter', '--add-config', `SCRAM-SHA-512=[iterations=4096,password=${secret}]`, '--entity-type', 'users', '--entity-name', user], '256m');
    const created = await run(alter.command, alter.args, { timeout: 60_000 });
    expect(created.code, created.stdout + created.stderr).toBe(0);
    const dir = mkdtempSync(join(tmpdir(), 'kmirror-scram-'));
    const file = (name: string, content: string) => {
      writeFileSync(join(dir, name), content, { mode: 0o600 });
      return join(dir, name);
    };
    const add = (name: string, passwordFile: string) =>
      kmirror('cluster', 'add', name, '--bootstrap', stackEnv().DEST_BOOTSTRAP!, '--security-protocol', 'SASL_PLAINTEXT', '--sasl-mechanism', 'scram-sha-512', '--username', user, '--password-file', passwordFile, '--json');
    // SCRAM credentials reach every broker shortly after the change: a few tries.
    let ok: CliRun | undefined;
    await expect.poll(async () => (ok = await add('west-scram', file('right', `${secret}\n`))).code, { timeout: 30_000, interval: 1_000 }).toBe(0);
    expect(JSON.parse(ok!.stdout)).toMatchObject({ name: 'west-scram', connection: { securityProtocol: 'SASL_PLAINTEXT', saslMechanism: 'scram-sha-512', saslUsername: user }, brokers: expect.any(Number) });
    const wrong = await add('west-scram-wrong', file('wrong', 'not-the-password\n'));
    expect(wrong.code, ended(wrong)).toBe(1);
    expect(JSON.parse(wrong.stdout)).toMatchObject({ error: { code: 'CLUSTER_AUTHENTICATION_FAILED', message: expect.stringMatching(/^cluster west-scram-wrong \(.*\): .*SCRAM-SHA-512/) } });
    expect(await eventCount(clusterStreamId('west-scram-wrong'))).toBe(0);
    for (const r of runs) expect(`${r.stdout}${r.stderr}`).not.toContain(secret);
    rmSync(dir, { recursive: true, force: true });
  });

  it('cluster add over TLS: SSL trusting the stack\'s CA mirrors a topic; SASL_SSL with SCRAM-SHA-256; an untrusted certificate is refused with a code', async () => {
    const { caFile } = ensureStackTls();
    const ssl = await kmirrorJson<Record<string, unknown>>('cluster', 'add', 'east-tls', '--bootstrap', `127.0.0.1:${sourceSslPort(0)}`, '--security-protocol', 'SSL', '--ssl-ca-file', caFile);
    expect(ssl).toMatchObject({ name: 'east-tls', connection: { bootstrap: [`127.0.0.1:${sourceSslPort(0)}`], securityProtocol: 'SSL' }, brokers: expect.any(Number) });

    // Not trusting the stack's CA (the system CAs only): refused, naming the certificate, nothing stored.
    const untrusted = await kmirror('cluster', 'add', 'east-untrusted', '--bootstrap', `127.0.0.1:${sourceSslPort(0)}`, '--security-protocol', 'SSL', '--json');
    expect(untrusted.code, ended(untrusted)).toBe(1);
    expect(JSON.parse(untrusted.stdout)).toMatchObject({ error: { code: 'CLUSTER_AUTHENTICATION_FAILED', message: expect.stringMatching(/certificate/i) } });
    expect(await eventCount(clusterStreamId('east-untrusted'))).toBe(0);

    // A SCRAM-SHA-256 user on the source's SASL_SSL listener, created as its operators would.
    const user = randomName('scram256');
    const secret = randomBytes(12).toString('hex');
    const alter = kafkaJava('kafka.admin.ConfigCommand', ['--bootstrap-server', stackEnv().SOURCE_BOOTSTRAP!, '--alter', '--add-config', `SCRAM-SHA-256=[iterations=4096,password=${secret}]`, '--entity-type', 'users', '--entity-name', user], '256m');
    const created = await run(alter.command, alter.args, { timeout: 60_000 });
    expect(created.code, created.stdout + created.stderr).toBe(0);
    const dir = mkdtempSync(join(tmpdir(), 'kmirror-scram256-'));
    writeFileSync(join(dir, 'password'), `${secret}\n`, { mode: 0o600 });
    const args = ['cluster', 'add', 'east-sasl-ssl', '--bootstrap', `127.0.0.1:${sourceSaslSslPort(0)}`, '--security-protocol', 'SASL_SSL', '--sasl-mechanism', 'scram-sha-256', '--username', user, '--password-file', join(dir, 'password'), '--ssl-ca-file', caFile, '--json'];
    let ok: CliRun | undefined;
    await expect.poll(async () => (ok = await kmirror(...args)).code, { timeout: 30_000, interval: 1_000 }).toBe(0);
    expect(JSON.parse(ok!.stdout)).toMatchObject({ connection: { securityProtocol: 'SASL_SSL', saslMechanism: 'scram-sha-256', saslUsername: user } });
    rmSync(dir, { recursive: true, force: true });
    for (const r of runs) expect(`${r.stdout}${r.stderr}`).not.toContain(secret);

    // The copier reads the source over TLS: a topic mirrors record by record.
    const m = randomName('life-tls');
    const tp = await t.sourceTopic({ partitions: 1 });
    t.track(tp);
    await sendAll(producer, tp, messages(25, 1));
    await kmirrorAll(['create', m, '--source', 'east-tls', '--destination', 'west'], ['start', m, '--topic', tp]);
    await expect.poll(async () => (await t.dest.listOffsets(tp, [0], 'latest')).get(0), { timeout: 30_000 }).toBe(25n);
    expect(await verifyPartition(t.source, t.dest, tp, 0)).toMatchObject({ equal: true, recordsCompared: 25 });
    expect((await kmirror('failover', m, '--all-topics')).code).toBe(0);
    expect((await kmirror('delete', m)).code).toBe(0);
  });

  let startWorkflowId: string;

  it('create, start, list and describe: the topic mirrors until the lag is 0', async () => {
    await produce(300);

    const created = await kmirror('create', mirror, '--source', 'east', '--destination', 'west', '--actor', 'alice', '--reason', reason);
    expect.soft(created.code, ended(created)).toBe(0);
    expect(created.stdout).toMatch(new RegExp(`^mirror ${escape(mirror)} created: east \\(\\d+ brokers\\) → west \\(\\d+ brokers\\); runner mirror:${escape(mirror)}\\n$`));
    expect(created.stderr).toContain(`workflow create:${mirror}: ${stackEnv().TEMPORAL_UI_URL}`);

    const started = await kmirrorJson<{ workflowId: string; url: string; result: Record<string, unknown> }>('start', mirror, '--topic', topic, '--actor', 'alice');
    startWorkflowId = started.workflowId;
    expect(started.workflowId).toMatch(new RegExp(`^start:${escape(mirror)}:[0-9a-f]{12}$`));
    expect(started.url).toBe(`${stackEnv().TEMPORAL_UI_URL}/namespaces/${encodeURIComponent(t.config.temporal.namespace)}/workflows/${encodeURIComponent(started.workflowId)}`);
    expect(started.result).toMatchObject({
      mirror,
      topics: [{ topic, partitionCount: PARTITIONS, created: true }],
      partitions: PARTITIONS,
      states: { MIRRORING: PARTITIONS },
      failed: [],
    });

    const list = await kmirrorJson<unknown[]>('list');
    expect(list).toEqual([
      { name: mirror, state: expect.any(String), sourceCluster: 'east', destinationCluster: 'west', topics: 1, partitions: PARTITIONS, states: { MIRRORING: PARTITIONS } },
    ]);

    await produce(150);
    const d = await caughtUp();
    expect(Object.keys(d).sort()).toEqual(['acls', 'clusters', 'destinationCluster', 'exclude', 'groups', 'include', 'name', 'onRecordsLost', 'partitions', 'sourceCluster', 'state'].sort());
    expect(d).toMatchObject({ name: mirror, sourceCluster: 'east', destinationCluster: 'west', include: [], exclude: [], onRecordsLost: 'continue', groups: { include: ['.*'], exclude: [] }, acls: { include: [], exclude: [] } });
    expect(d.clusters).toEqual({ source: { cluster: 'east', reachable: true }, destination: { cluster: 'west', reachable: true } });
    const ends = endsAfter(produced);
    expect(d.partitions).toEqual(
      allPartitions(PARTITIONS).map((partition) => ({
        topic,
        partition,
        state: 'MIRRORING',
        sourceEndOffset: ends[partition],
        destinationEndOffset: ends[partition],
        lag: '0',
        // The recorded position is the offset after the last mirrored record.
        lastMirroredOffset: ends[partition],
        retryAttempt: 0,
        recordsLost: '0',
        error: null,
      })),
    );

    // alter: the sync filters change after creation; describe shows them.
    const altered = await kmirror('alter', mirror, '--acl-include', 'User:orders-.*', '--group-exclude', 'tmp-.*', '--actor', 'alice', '--reason', 'consumers fail over too');
    expect.soft(altered.code, ended(altered)).toBe(0);
    expect(altered.stdout).toBe(`mirror ${mirror}: changed groups and acls; groups synced: .* except tmp-.*; ACLs synced for: User:orders-.*\n`);
    expect(await kmirrorJson('describe', mirror)).toMatchObject({ groups: { include: ['.*'], exclude: ['tmp-.*'] }, acls: { include: ['User:orders-.*'], exclude: [] } });
    expect((await kmirror('describe', mirror)).stdout).toContain('  groups synced: .* except tmp-.*   ACLs synced for: User:orders-.*\n');
    const off = await kmirrorJson<{ result: { changed: string[]; acls: unknown } }>('alter', mirror, '--no-acl-sync');
    expect(off.result).toMatchObject({ changed: ['acls'], acls: { include: [], exclude: [] } });
  });

  it('pause holds the destination end while the source grows; resume catches up', async () => {
    const paused = await kmirror('pause', mirror, '--all-topics', '--actor', 'bob', '--reason', 'broker maintenance');
    expect.soft(paused.code, ended(paused)).toBe(0);
    expect(paused.stdout).toBe(`paused ${PARTITIONS} partition(s) of mirror ${mirror}: ${PARTITIONS} PAUSED\n`);

    const held = await t.dest.listOffsets(topic, allPartitions(PARTITIONS), 'latest');
    await produce(90);
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await t.dest.listOffsets(topic, allPartitions(PARTITIONS), 'latest')).toEqual(held);
    const whilePaused = await kmirrorJson<DescribedMirror>('describe', mirror);
    expect(whilePaused.partitions.map((p) => [p.state, p.sourceEndOffset, p.destinationEndOffset, p.lag])).toEqual(
      allPartitions(PARTITIONS).map((p) => ['PAUSED', endsAfter(produced)[p], String(held.get(p)), String(BigInt(endsAfter(produced)[p]!) - held.get(p)!)]),
    );

    const resumed = await kmirrorJson<{ workflowId: string; result: Record<string, unknown> }>('resume', mirror, '--topic', topic);
    expect(resumed.result).toMatchObject({ mirror, partitions: PARTITIONS, states: { MIRRORING: PARTITIONS }, failed: [] });
    await caughtUp();

    const human = await kmirror('describe', mirror);
    expect.soft(human.code, ended(human)).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`^mirror ${escape(mirror)} \\(\\w+\\): east → west$`, 'm'));
    expect(human.stdout).toMatch(new RegExp(`^ {2}partitions: ${PARTITIONS} MIRRORING$`, 'm'));
    expect(human.stdout).toMatch(/^ {2}lag: 0 records$/m);
    expect(human.stdout).toMatch(/^TOPIC +PARTITION +STATE +SOURCE END +DEST END +LAG +LAST MIRRORED +ERROR$/m);
    expect(human.stdout).toMatch(new RegExp(`^${escape(topic)} +0 +MIRRORING +${endsAfter(produced)[0]} +${endsAfter(produced)[0]} +0 +\\d+$`, 'm'));
  });

  it('groups: a group committed on the source is synced to the destination, an offset beyond the mirrored end clamped', async () => {
    const group = randomName('app');
    const ends = await t.source.listOffsets(topic, allPartitions(PARTITIONS), 'latest');
    // Partition 0 committed 50 past the end (Kafka accepts that): the destination gets its end.
    await t.source.commitGroupOffsets(group, allPartitions(PARTITIONS).map((partition) => ({ topic, partition, offset: ends.get(partition)! + (partition === 0 ? 50n : -1n) })));
    interface GroupsJson {
      readonly groups: { readonly group: string; readonly status: string; readonly partitions: { readonly partition: number; readonly destinationCommitted: string | null; readonly target: string; readonly clamped: boolean }[] }[];
    }
    // A failed attempt is polled again (one of four runs saw `groups` exit 1 once while the runner
    // synced; not reproduced, see the closing note of 2026-12-03).
    const ours = async () => {
      const r = await kmirror('groups', mirror, '--json');
      return r.code === 0 ? (JSON.parse(r.stdout) as GroupsJson).groups.find((g) => g.group === group) : undefined;
    };
    // The runner syncs every KMIRROR_GROUP_SYNC_INTERVAL_MS (10 s by default).
    await expect.poll(async () => (await ours())?.status, { timeout: 40_000, interval: 1_000 }).toBe('synced');
    const synced = (await ours())!.partitions.sort((a, b) => a.partition - b.partition);
    expect(synced.map((p) => p.destinationCommitted)).toEqual(allPartitions(PARTITIONS).map((p) => (ends.get(p)! - (p === 0 ? 0n : 1n)).toString()));
    expect(synced.map((p) => p.clamped)).toEqual([true, false, false]);
    const text = await kmirror('groups', mirror);
    expect(text.stdout).toContain(group);
    expect(text.stdout).toContain('(clamped)');
  });

  it('verify: every partition compares equal record by record; an unknown topic is refused', async () => {
    interface VerifyJson {
      readonly equal: boolean;
      readonly partitions: { readonly topic: string; readonly partition: number; readonly equal: boolean; readonly recordsCompared: number }[];
    }
    const json = await kmirrorJson<VerifyJson & { error?: unknown }>('verify', mirror, '--topic', topic);
    expect(json.equal).toBe(true);
    expect(json.error).toBeUndefined();
    expect(json.partitions.map((p) => [p.partition, p.equal])).toEqual(allPartitions(PARTITIONS).map((p) => [p, true]));
    expect(json.partitions.reduce((n, p) => n + p.recordsCompared, 0)).toBe(produced);
    const text = await kmirror('verify', mirror);
    expect(text.code, ended(text)).toBe(0);
    expect(text.stdout).toMatch(/equal \(\d+ records\)/);
    const unknown = await kmirror('verify', mirror, '--topic', 'no-such-topic');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/TOPIC_NOT_IN_CLUSTER_MIRROR/);
  });

  it('offsets-for-time: where a consumer seeking by time starts, as the source answers on a topic without gaps; the end past the last record; CSV for kafka-consumer-groups', async () => {
    interface OffsetsJson {
      readonly source: { readonly reachable: boolean };
      readonly partitions: { readonly partition: number; readonly offset: string | null; readonly seekTo: string; readonly destinationBrokerAnswer: string | null; readonly sourceAnswer: string | null }[];
    }
    // The time of partition 0's record at offset 5, read on the source.
    let at: bigint | undefined;
    for await (const r of readCommitted(t.source, topic, 0, 5n, 6n)) at = r.timestamp;
    const json = await kmirrorJson<OffsetsJson>('offsets-for-time', mirror, '--time', at!.toString(), '--topic', topic);
    expect(json.source.reachable).toBe(true);
    const sorted = [...json.partitions].sort((a, b) => a.partition - b.partition);
    expect(sorted[0]).toMatchObject({ offset: '5', seekTo: '5', destinationBrokerAnswer: '5', sourceAnswer: '5' });
    // A plain topic has no filled gap: all three answers agree on every partition.
    for (const p of sorted) expect([p.offset, p.destinationBrokerAnswer], `partition ${p.partition}`).toEqual([p.sourceAnswer, p.sourceAnswer]);
    const iso = new Date(Number(at!)).toISOString();
    const csv = await kmirror('offsets-for-time', mirror, '--time', iso, '--topic', topic, '--csv');
    expect(csv.code, ended(csv)).toBe(0);
    expect(csv.stdout.trim().split('\n')).toEqual(sorted.map((p) => `${topic},${p.partition},${p.seekTo}`));
    // Past every record: no answer anywhere, and a consumer would start at the end.
    const later = await kmirrorJson<OffsetsJson>('offsets-for-time', mirror, '--time', String(Date.now() + 86_400_000), '--topic', topic);
    const ends = await t.dest.listOffsets(topic, allPartitions(PARTITIONS), 'latest');
    expect([...later.partitions].sort((a, b) => a.partition - b.partition)).toEqual(
      allPartitions(PARTITIONS).map((p) => ({ topic, partition: p, offset: null, seekTo: ends.get(p)!.toString(), destinationBrokerAnswer: null, sourceAnswer: null, error: null })),
    );
    const text = await kmirror('offsets-for-time', mirror, '--time', iso, '--topic', topic);
    expect(text.stdout).toMatch(/^TOPIC +PARTITION +SEEK TO +DEST BROKER ANSWER +SOURCE ANSWER$/m);
    const unknown = await kmirror('offsets-for-time', mirror, '--time', iso, '--topic', 'no-such-topic');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/TOPIC_NOT_IN_CLUSTER_MIRROR/);
  });

  it('start --no-wait prints the workflow at once', async () => {
    const second = await t.sourceTopic({ partitions: 1 });
    const result = await kmirror('start', mirror, '--topic', second, '--no-wait', '--json');
    expect.soft(result.code, ended(result)).toBe(0);
    const body = JSON.parse(result.stdout) as { workflowId: string; runId: string; url: string };
    expect(Object.keys(body).sort()).toEqual(['runId', 'url', 'workflowId']);
    expect(body.workflowId).toMatch(new RegExp(`^start:${escape(mirror)}:[0-9a-f]{12}$`));
    expect(body.workflowId).not.toBe(startWorkflowId);
    expect(body.runId).toMatch(/^[0-9a-f-]{36}$/);
    expect(body.url).toBe(`${stackEnv().TEMPORAL_UI_URL}/namespaces/${encodeURIComponent(t.config.temporal.namespace)}/workflows/${encodeURIComponent(body.workflowId)}`);
    // The command returned without the result; the workflow runs on: wait for it so it does not leak.
    const done = (await t.temporal.client.workflow.getHandle(body.workflowId, body.runId).result()) as { topics: { topic: string }[]; states: Record<string, number> };
    expect(done).toMatchObject({ topics: [{ topic: second }], states: { MIRRORING: 1 } });
  });

  it('a cluster that stops answering: describe says so and shows what it still knows; replaced back, the mirror catches up; the actor defaults to the OS user', async () => {
    const m = randomName('life-gone');
    const tp = await t.sourceTopic({ partitions: 1 });
    t.track(tp);
    await sendAll(producer, tp, messages(10, 1));
    const cluster = randomName('moving');
    const add = (bootstrap: string, ...more: string[]) => kmirror('cluster', 'add', cluster, '--bootstrap', bootstrap, ...more);
    expect((await add(stackEnv().SOURCE_BOOTSTRAP!)).code).toBe(0);
    // No --actor: the events name the OS user.
    await kmirrorAll(['create', m, '--source', cluster, '--destination', 'west'], ['start', m, '--topic', tp], ['pause', m, '--all-topics']);
    expect((await readStream(t.db, mirrorStreamId(m)))[0]).toMatchObject({ type: 'MirrorCreated', metadata: { actor: userInfo().username } });
    await expect.poll(async () => (await t.dest.listOffsets(tp, [0], 'latest')).get(0), { timeout: 30_000 }).toBe(10n);

    // The source moves (a rotation gone wrong): describe still answers, naming the cluster it could not reach.
    const port = await closedPort();
    expect((await add(`127.0.0.1:${port}`, '--replace', '--no-check')).code).toBe(0);
    const d = await kmirrorJson<DescribedMirror>('describe', m);
    expect(d.clusters.source).toMatchObject({ cluster, reachable: false, error: { code: 'CLUSTER_UNREACHABLE' } });
    expect(d.clusters.destination).toEqual({ cluster: 'west', reachable: true });
    expect(d.partitions).toMatchObject([{ topic: tp, partition: 0, state: 'PAUSED', sourceEndOffset: null, destinationEndOffset: '10', lag: null, lastMirroredOffset: '10' }]);
    const human = await kmirror('describe', m);
    expect(human.code, ended(human)).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`^mirror ${escape(m)} \\(\\w+\\): ${escape(cluster)} \\(NOT REACHABLE: CLUSTER_UNREACHABLE .*127\\.0\\.0\\.1:${port}.*\\) → west$`, 'm'));

    // Put back, the paused mirror resumes and copies what the source took meanwhile.
    await sendAll(producer, tp, messages(5, 1, { from: 10 }));
    expect((await add(stackEnv().SOURCE_BOOTSTRAP!, '--replace')).code).toBe(0);
    expect((await kmirror('resume', m, '--all-topics')).code).toBe(0);
    await expect.poll(async () => (await t.dest.listOffsets(tp, [0], 'latest')).get(0), { timeout: 30_000 }).toBe(15n);
    expect(await verifyPartition(t.source, t.dest, tp, 0)).toMatchObject({ equal: true, recordsCompared: 15 });
    expect((await kmirror('failover', m, '--all-topics')).code).toBe(0);
    expect((await kmirror('delete', m)).code).toBe(0);
  });

  it('bad inputs fail with their code, in both output forms, and append no event', async () => {
    // Idle first: the runner records positions while it copies.
    await destinationCaughtUp();
    let before = await eventCount(stream);
    for (let settled = 0; settled < 3; ) {
      await new Promise((r) => setTimeout(r, 1_000));
      const now = await eventCount(stream);
      settled = now === before ? settled + 1 : 0;
      before = now;
    }
    const port = await closedPort();
    const mirror2 = randomName('life2');
    const badName = `bad name ${randomName('x')}!`;
    const cases: { args: string[]; code: string; exit: number; message: RegExp; streams?: string[] }[] = [
      { args: ['describe', 'nope'], code: 'UNKNOWN_CLUSTER_MIRROR', exit: 1, message: /^mirror nope does not exist$/ },
      { args: ['history', 'nope'], code: 'UNKNOWN_CLUSTER_MIRROR', exit: 1, message: /^mirror nope has no history/ },
      { args: ['create', mirror2, '--source', 'nowhere', '--destination', 'west'], code: 'UNKNOWN_CLUSTER', exit: 1, message: /cluster nowhere is not registered/, streams: [mirrorStreamId(mirror2)] },
      { args: ['create', badName, '--source', 'east', '--destination', 'west'], code: 'INVALID_CLUSTER_MIRROR_NAME', exit: 2, message: /^mirror name ".*" may contain only/, streams: [mirrorStreamId(badName)] },
      { args: ['create', mirror, '--source', 'east', '--destination', 'west'], code: 'CLUSTER_MIRROR_ALREADY_EXISTS', exit: 1, message: new RegExp(escape(mirror)) },
      { args: ['start', mirror, '--include', '('], code: 'INVALID_TOPIC_PATTERN', exit: 2, message: /^topic pattern "\(" is not a valid regular expression/ },
      { args: ['resume', mirror, '--topic', topic], code: 'MIRROR_TOPIC_NOT_PAUSED', exit: 1, message: new RegExp(`^cannot resume in mirror ${escape(mirror)}: partition ${escape(topic)}-0 is MIRRORING`) },
      { args: ['pause', mirror, '--topic', 'absent'], code: 'TOPIC_NOT_IN_CLUSTER_MIRROR', exit: 1, message: /absent/ },
      { args: ['cluster', 'add', 'far', '--bootstrap', `127.0.0.1:${port}`], code: 'CLUSTER_UNREACHABLE', exit: 1, message: new RegExp(`^cluster far \\(127\\.0\\.0\\.1:${port}\\) does not answer`), streams: [clusterStreamId('far')] },
      { args: ['start', mirror, '--topic', `absent-${randomName('t')}`], code: 'UNKNOWN_TOPIC', exit: 1, message: /^the source cluster has no topic absent-/ },
      { args: ['cluster', 'remove', 'east'], code: 'CLUSTER_IN_USE', exit: 1, message: new RegExp(`^cluster east is used by mirror .*${escape(mirror)}.*: delete (it|them) first`) },
      { args: ['cluster', 'remove', 'nope'], code: 'UNKNOWN_CLUSTER', exit: 1, message: /^cluster nope is not registered$/, streams: [clusterStreamId('nope')] },
      // Usage errors, whether commander or the command notices them: exit 2.
      { args: ['pause', mirror], code: 'INVALID_ARGUMENT', exit: 2, message: /^pause needs --topic NAME or --all-topics \(one of them\)$/ },
      { args: ['start', mirror], code: 'INVALID_ARGUMENT', exit: 2, message: /^start needs --topic NAME or --include REGEX/ },
      // Usage errors commander finds: exit 2.
      { args: ['create', mirror2, '--source', 'east'], code: 'INVALID_ARGUMENT', exit: 2, message: /required option '--destination <cluster>' not specified; see `kmirror --help`$/ },
      { args: ['history', mirror, '--limit', '0'], code: 'INVALID_ARGUMENT', exit: 2, message: /must be a positive integer/ },
      { args: ['describe', mirror, '--nosuch'], code: 'INVALID_ARGUMENT', exit: 2, message: /unknown option '--nosuch'/ },
    ];
    const eastEvents = await eventCount(clusterStreamId('east'));
    const results = await limited(cases.flatMap((c) => [c.args, [...c.args, '--json']]), 4, (args) => kmirror(...args));
    // Soft: one run reports every case that is wrong, not just the first.
    cases.forEach((c, i) => {
      const [human, json] = [results[2 * i]!, results[2 * i + 1]!];
      expect.soft(human.code, ended(human)).toBe(c.exit);
      expect.soft(human.stdout, ended(human)).toBe('');
      const line = /^error ([A-Z_]+): (.*)$/m.exec(human.stderr);
      expect.soft(line?.[1], ended(human)).toBe(c.code);
      expect.soft(line?.[2], ended(human)).toMatch(c.message);

      expect.soft(json.code, ended(json)).toBe(c.exit);
      expect.soft(json.stderr, ended(json)).not.toMatch(/^error/m);
      let body: unknown;
      try {
        body = JSON.parse(json.stdout);
      } catch {
        body = json.stdout;
      }
      expect.soft(body, ended(json)).toEqual({ error: { code: c.code, message: expect.stringMatching(c.message) } });
    });
    expect(await eventCount(stream)).toBe(before);
    expect(await eventCount(clusterStreamId('east'))).toBe(eastEvents);
    for (const s of cases.flatMap((c) => c.streams ?? [])) expect(await eventCount(s), s).toBe(0);
  });

  it('history: the events in order, who asked and why; --limit; --verify', async () => {
    const { mirror: name, events } = await kmirrorJson<HistoryJson>('history', mirror);
    expect(name).toBe(mirror);
    expect(events.length).toBe(await eventCount(stream));
    events.forEach((e, i) => {
      expect(Object.keys(e).sort()).toEqual(['actor', 'data', 'position', 'reason', 'runId', 'time', 'type', 'version', 'workflowId']);
      expect(e.version).toBe(String(i + 1));
      expect(e.position).toMatch(DECIMAL);
      expect(new Date(e.time).toISOString()).toBe(e.time);
      if (i > 0) {
        expect(BigInt(e.position)).toBeGreaterThan(BigInt(events[i - 1]!.position));
        expect(e.time >= events[i - 1]!.time).toBe(true);
      }
    });
    expect(events[0]).toMatchObject({
      type: 'MirrorCreated',
      data: { mirror, sourceCluster: 'east', destinationCluster: 'west' },
      actor: 'alice',
      reason,
      workflowId: `create:${mirror}`,
      runId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(events[1]).toMatchObject({ type: 'MirrorTopicAdded', data: { topic, partitionCount: PARTITIONS }, actor: 'alice', workflowId: startWorkflowId });
    // Each partition of the topic went through its lifecycle in order.
    for (const partition of allPartitions(PARTITIONS)) {
      const lifecycle = events.filter((e) => e.data.topic === topic && e.data.partition === partition && e.type !== 'PartitionPositionRecorded').map((e) => e.type);
      expect(lifecycle).toEqual(['PartitionTruncationCompleted', 'PartitionPauseRequested', 'PartitionPaused', 'PartitionResumed']);
    }
    const pauseRequested = events.find((e) => e.type === 'PartitionPauseRequested')!;
    expect(pauseRequested).toMatchObject({ actor: 'bob', reason: 'broker maintenance', workflowId: expect.stringMatching(new RegExp(`^pause:${escape(mirror)}:`)) });
    const positions = events.filter((e) => e.type === 'PartitionPositionRecorded' && e.data.topic === topic);
    expect(positions.length).toBeGreaterThan(0);
    for (const p of positions) expect(p.data.offset).toMatch(DECIMAL);

    const lastThree = await kmirror('history', mirror, '--limit', '3');
    expect.soft(lastThree.code, ended(lastThree)).toBe(0);
    const lines = lastThree.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^# +TIME +TYPE +ACTOR +REASON +DATA$/);
    expect(lines.slice(1).map((l) => l.split(/ +/)[0])).toEqual(events.slice(-3).map((e) => e.version));

    const verified = await kmirror('history', mirror, '--verify');
    expect.soft(verified.code, ended(verified)).toBe(0);
    expect(verified.stdout).toMatch(/^hash chain intact: \d+ events verified \(head [0-9a-f]{16}…\)$/m);
    const verifiedJson = await kmirrorJson<HistoryJson>('history', mirror, '--verify', '--limit', '1');
    expect(verifiedJson.events).toHaveLength(1);
    expect(verifiedJson.chain).toMatchObject({ ok: true });
  });

  it('the round trip: failover --include (dry run first), failback, promote of the reverse mirror, delete both', async () => {
    const include = `${escape(topic)}$`;
    type Stop = { result: { mode: string; dryRun: boolean; states: Record<string, number>; partitions: { topic: string; partition: number; recordsBehind: string | null }[] } };
    const dry = await kmirrorJson<Stop>('failover', mirror, '--include', include, '--dry-run');
    expect(dry.result).toMatchObject({ mode: 'failover', dryRun: true });
    expect(dry.result.partitions.map((p) => [p.topic, p.partition, p.recordsBehind])).toEqual(allPartitions(PARTITIONS).map((p) => [topic, p, '0']));
    expect((await kmirrorJson<DescribedMirror>('describe', mirror)).partitions.filter((p) => p.topic === topic).map((p) => p.state)).toEqual(allPartitions(PARTITIONS).map(() => 'MIRRORING'));
    const failover = await kmirror('failover', mirror, '--include', include, '--actor', 'oncall', '--reason', 'east region down');
    expect.soft(failover.code, ended(failover)).toBe(0);
    expect(failover.stdout).toMatch(new RegExp(`failover: ${PARTITIONS} STOPPED in [\\d.]+ s; records behind the source \\(RPO\\): 0`));
    expect(failover.stdout).toContain("writable: DENY WRITE lifted for User:app");
    // Per partition, the state it was in before the failover stopped it.
    expect(failover.stdout).toMatch(/^TOPIC +PARTITION +WAS +DEST END +SOURCE END +BEHIND +SOURCE TXN$/m);
    expect(failover.stdout).toMatch(new RegExp(`^${escape(topic)} +0 +MIRRORING +\\d+ +\\d+ +0`, 'm'));

    // The new primary serves the application (the `app` principal): a consumer group reads what a
    // producer writes there. The old primary then comes back and mirrors those records.
    const appKafka = createKafka(destAppConnection(), testClientOptions);
    const consumer = appKafka.consumer({ groupId: randomName('app-group') });
    const consumed: string[] = [];
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: false });
    let assigned = false;
    consumer.on(consumer.events.GROUP_JOIN, () => {
      assigned = true;
    });
    await consumer.run({
      eachMessage: async ({ message }) => {
        consumed.push(String(message.key));
      },
    });
    await expect.poll(() => assigned, { timeout: 30_000 }).toBe(true);
    const app = appKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await app.connect();
    const written = messages(30, PARTITIONS, { from: 100_000 });
    await sendAll(app, topic, written);
    await app.disconnect();
    await expect.poll(() => consumed.length, { timeout: 30_000 }).toBe(30);
    await consumer.disconnect();
    expect(consumed.sort()).toEqual(written.map((m) => String(m.key)).sort());
    type Failback = { result: { reverseMirror: string; dryRun: boolean; topics: { topic: string; action: string }[] } };
    const reverse = `${mirror}-reverse`;
    expect((await kmirrorJson<Failback>('failback', mirror, '--dry-run')).result).toMatchObject({ reverseMirror: reverse, dryRun: true, topics: [{ topic, action: 'continue' }] });
    const failback = await kmirror('failback', mirror, '--reason', 'east is back');
    expect.soft(failback.code, ended(failback)).toBe(0);
    expect(failback.stdout).toContain(`the old primary now mirrors the new one through ${reverse}; when its lag is 0: kmirror promote ${reverse} --all-topics`);
    const all = allPartitions(PARTITIONS);
    await expect.poll(async () => [...(await t.source.listOffsets(topic, all, 'latest')).values()], { timeout: 60_000, interval: 500 }).toEqual([...(await t.dest.listOffsets(topic, all, 'latest')).values()]);
    // Both logs are equal record by record, the records written on the new primary included.
    for (const p of all) expect(await verifyPartition(t.dest, t.source, topic, p)).toMatchObject({ equal: true });
    const promoted = await kmirrorJson<Stop>('promote', reverse, '--all-topics');
    expect(promoted.result).toMatchObject({ mode: 'promote', states: { STOPPED: PARTITIONS } });
    const deleteMirror = async (name: string) => {
      const deleted = await kmirror('delete', name);
      expect.soft(deleted.code, ended(deleted)).toBe(0);
      expect(deleted.stdout).toBe(`mirror ${name} deleted\n`);
    };
    await deleteMirror(reverse);
    // --include stopped only its topic: the one `start --no-wait` added is still mirroring.
    const refused = await kmirror('delete', mirror);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/error CLUSTER_MIRROR_NOT_EMPTY: .* is MIRRORING/);
    const rest = await kmirror('failover', mirror, '--all-topics');
    expect.soft(rest.code, ended(rest)).toBe(0);
    await deleteMirror(mirror);
    const events = await readStream(t.db, stream);
    expect(events.find((e) => e.type === 'PartitionStopRequested')?.metadata).toMatchObject({ actor: 'oncall', reason: 'east region down' });
    expect(events.at(-1)?.type).toBe('MirrorDeleted');
  });

  it('the round trip with a divergent tail: failback --dry-run lists it, failback archives it and re-mirrors the topic, promote back', async () => {
    const m = randomName('life-div');
    const tp = await t.sourceTopic({ partitions: 2 });
    t.track(tp);
    await sendAll(producer, tp, messages(40, 2));
    await kmirrorAll(['create', m, '--source', 'east', '--destination', 'west'], ['start', m, '--topic', tp]);
    const both = [0, 1];
    const endsOf = async (cluster: 'source' | 'dest') => [...(await (cluster === 'source' ? t.source : t.dest).listOffsets(tp, both, 'latest')).values()];
    await expect.poll(() => endsOf('dest'), { timeout: 30_000 }).toEqual([20n, 20n]);
    expect((await kmirror('failover', m, '--all-topics')).code).toBe(0);
    // Split brain: the old primary took two writes after the failover point.
    await producer.send({ topic: tp, messages: [{ partition: 0, key: 'late-0', value: 'on the old primary' }, { partition: 1, key: 'late-1', value: 'here too' }] });
    type Failback = { result: { topics: { topic: string; action: string; archiveTopic: string | null; partitions: { divergent: { from: string; to: string; records: number | null } | null }[] }[] } };
    // `verify` compares what was mirrored (equal); --full compares up to the source's end, so the
    // late records are missing on the destination: exit 1 with OFFSET_DIVERGENCE, both forms.
    expect((await kmirror('verify', m)).code).toBe(0);
    const differs = await kmirror('verify', m, '--full');
    expect(differs.code, ended(differs)).toBe(1);
    expect(differs.stdout).toMatch(new RegExp(`^${escape(tp)} +0 +\\[0, 21\\) +DIFFERENT at offset 20: missing-on-destination`, 'm'));
    expect(differs.stderr).toMatch(new RegExp(`^error OFFSET_DIVERGENCE: 2 partition\\(s\\) differ; first: ${escape(tp)}-0 at offset 20 \\(missing-on-destination\\)$`, 'm'));
    const differsJson = await kmirror('verify', m, '--full', '--json');
    expect(differsJson.code, ended(differsJson)).toBe(1);
    expect(JSON.parse(differsJson.stdout)).toMatchObject({
      mirror: m,
      equal: false,
      partitions: both.map((partition) => ({ topic: tp, partition, equal: false, recordsCompared: 20, firstMismatch: { offset: '20', field: 'missing-on-destination' } })),
      error: { code: 'OFFSET_DIVERGENCE' },
    });
    const dry = (await kmirrorJson<Failback>('failback', m, '--dry-run')).result.topics[0]!;
    expect(dry).toMatchObject({ topic: tp, action: 'recreate', partitions: [{ divergent: { from: '20', to: '21', records: 1 } }, { divergent: { from: '20', to: '21', records: 1 } }] });
    const done = (await kmirrorJson<Failback>('failback', m)).result.topics[0]!;
    t.track(done.archiveTopic!);
    expect(done.archiveTopic).toMatch(new RegExp(`^${escape(tp)}\\.kmirror-divergent-`));
    const archived: string[] = [];
    for (const p of both) for await (const r of readCommitted(t.source, done.archiveTopic!, p, 0n, (await t.source.listOffsets(done.archiveTopic!, [p], 'latest')).get(p)!)) archived.push(String(r.key));
    expect(archived.sort()).toEqual(['late-0', 'late-1']);
    // The recreated topic on the old primary mirrors the new one from offset 0, record by record.
    await expect.poll(() => endsOf('source'), { timeout: 60_000 }).toEqual(await endsOf('dest'));
    for (const p of both) expect(await verifyPartition(t.dest, t.source, tp, p)).toMatchObject({ equal: true, recordsCompared: 20 });
    expect((await kmirror('promote', `${m}-reverse`, '--all-topics')).code).toBe(0);
    for (const name of [`${m}-reverse`, m]) expect((await kmirror('delete', name)).code).toBe(0);
  });

  it('failback --discard-divergent drops the divergent tail without a copy; --archive-divergent with it is a usage error', async () => {
    const m = randomName('life-drop');
    const tp = await t.sourceTopic({ partitions: 1 });
    t.track(tp);
    await sendAll(producer, tp, messages(10, 1));
    await kmirrorAll(['create', m, '--source', 'east', '--destination', 'west'], ['start', m, '--topic', tp]);
    const endOf = async (cluster: 'source' | 'dest') => (await (cluster === 'source' ? t.source : t.dest).listOffsets(tp, [0], 'latest')).get(0)!;
    await expect.poll(() => endOf('dest'), { timeout: 30_000 }).toBe(10n);
    expect((await kmirror('failover', m, '--all-topics')).code).toBe(0);
    await producer.send({ topic: tp, messages: [{ partition: 0, key: 'late', value: 'on the old primary' }] });
    const both = await kmirror('failback', m, '--archive-divergent', '--discard-divergent');
    expect(both.code, ended(both)).toBe(2);
    expect(both.stderr).toContain('--archive-divergent and --discard-divergent exclude each other');
    type Failback = { result: { topics: { topic: string; action: string; archiveTopic: string | null; partitions: { divergent: { from: string; to: string; records: number | null } | null }[] }[] } };
    const done = (await kmirrorJson<Failback>('failback', m, '--discard-divergent')).result.topics[0]!;
    expect(done).toMatchObject({ topic: tp, action: 'recreate', archiveTopic: null, partitions: [{ divergent: { from: '10', to: '11', records: 1 } }] });
    expect((await t.sourceAdmin.listTopics()).filter((name) => name.startsWith(`${tp}.kmirror-divergent-`))).toEqual([]);
    // The old primary is the mirror of the new one again: the late record is gone, the rest equal.
    await expect.poll(() => endOf('source'), { timeout: 60_000 }).toBe(10n);
    expect(await verifyPartition(t.dest, t.source, tp, 0)).toMatchObject({ equal: true, recordsCompared: 10 });
    // The audit log says the tail was discarded: recreated with no archive topic.
    const prepared = (await readStream(t.db, mirrorStreamId(m))).filter((e) => e.type === 'FailbackTopicPrepared');
    expect(prepared.map((e) => e.data)).toMatchObject([{ topic: tp, action: 'recreate', archiveTopic: null }]);
    expect((await kmirror('promote', `${m}-reverse`, '--all-topics')).code).toBe(0);
    for (const name of [`${m}-reverse`, m]) expect((await kmirror('delete', name)).code).toBe(0);
  });

  it('a failed partition: describe --failed and --watch show it, retry --accept-records-lost brings it back; a repeated promote joins the running one', async () => {
    const m = randomName('life-fail');
    const tp = await t.sourceTopic({ partitions: 2 });
    t.track(tp);
    await sendAll(producer, tp, messages(20, 2));
    await kmirrorAll(['create', m, '--source', 'east', '--destination', 'west', '--on-records-lost', 'fail'], ['start', m, '--topic', tp]);
    const both = [0, 1];
    const destEnds = async () => [...(await t.dest.listOffsets(tp, both, 'latest')).values()];
    await expect.poll(destEnds, { timeout: 30_000 }).toEqual([10n, 10n]);
    // Retention overtakes partition 0 while the mirror is paused (DeleteRecords stands in for it).
    expect((await kmirror('pause', m, '--all-topics')).code).toBe(0);
    await sendAll(producer, tp, messages(20, 2, { from: 20 }));
    await t.source.deleteRecords(tp, new Map([[0, 15n]]));
    expect((await kmirror('resume', m, '--all-topics')).code).toBe(0);
    let failed: DescribedMirror | undefined;
    await expect
      .poll(async () => (failed = await kmirrorJson<DescribedMirror>('describe', m, '--failed')).partitions.map((p) => [p.partition, p.state, p.error?.code]), { timeout: 30_000 })
      .toEqual([[0, 'FAILED', 'RECORDS_LOST']]);
    expect(failed!.partitions[0]!.error!.message).toMatch(/10/);
    const text = await kmirror('describe', m, '--failed');
    expect(text.stdout).toContain('RECORDS_LOST');
    expect(text.stdout).not.toMatch(new RegExp(`^${escape(tp)} +1 `, 'm'));

    // --watch prints one object per refresh until interrupted, then exits 0.
    const watch = start(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'describe', m, '--watch', '--json'], { env });
    await expect.poll(() => watch.stdout().split('\n').filter((l) => l.startsWith('{')).length, { timeout: 20_000 }).toBeGreaterThanOrEqual(2);
    watch.process.kill('SIGINT');
    expect(await watch.exited).toMatchObject({ code: 0 });
    for (const line of watch.stdout().trimEnd().split('\n')) expect(JSON.parse(line)).toMatchObject({ name: m, partitions: expect.any(Array) });

    // Accepting the loss needs a reason; with one, the partition mirrors again from the source's log start.
    const noReason = await kmirror('retry', m, '--topic', tp, '--accept-records-lost');
    expect(noReason.code).toBe(2);
    const retried = await kmirrorJson<{ result: { retried: number; recordsLostAccepted: string[] } }>('retry', m, '--topic', tp, '--accept-records-lost', '--reason', 'gone for good');
    expect(retried.result).toMatchObject({ retried: 1, recordsLostAccepted: [tp] });
    await expect.poll(destEnds, { timeout: 30_000 }).toEqual([20n, 20n]);
    expect((await kmirrorJson<DescribedMirror>('describe', m, '--failed')).partitions).toEqual([]);
    expect((await readStream(t.db, mirrorStreamId(m))).filter((e) => e.type === 'RecordsLossAccepted').map((e) => e.metadata.reason)).toEqual(['gone for good']);

    // A promote waits while a source transaction is open; the same request again joins that
    // workflow (same id, same run) instead of starting a second one.
    const txnProducer = t.sourceKafka.producer({ transactionalId: randomName('txn'), idempotent: true, maxInFlightRequests: 1 });
    await txnProducer.connect();
    const txn = await txnProducer.transaction();
    await txn.send({ topic: tp, messages: [{ partition: 1, key: 'open', value: 'not yet committed' }] });
    // With --timeout, a promote that cannot reach a lag of 0 gives up with PROMOTE_TIMEOUT,
    // pointing to failover, and stops nothing.
    const timedOut = await kmirror('promote', m, '--all-topics', '--timeout', '2s', '--json');
    expect(timedOut.code, ended(timedOut)).toBe(1);
    expect(JSON.parse(timedOut.stdout)).toMatchObject({ error: { code: 'PROMOTE_TIMEOUT', message: expect.stringMatching(/within 2 s.*kmirror failover/) } });
    expect((await kmirrorJson<DescribedMirror>('describe', m)).partitions.map((p) => p.state)).toEqual(['MIRRORING', 'MIRRORING']);
    type Started = { workflowId: string; runId: string };
    const first = await kmirrorJson<Started>('promote', m, '--all-topics', '--no-wait');
    const second = await kmirrorJson<Started>('promote', m, '--all-topics', '--no-wait', '--actor', 'someone-else');
    expect(second).toMatchObject({ workflowId: first.workflowId, runId: first.runId });
    expect(runs.at(-1)!.stderr).not.toContain('joined workflow'); // who asks differs, not what is asked
    // Another timeout joins too, and the CLI says the running promote's settings apply.
    const third = await kmirror('promote', m, '--all-topics', '--no-wait', '--timeout', '30m', '--json');
    expect(JSON.parse(third.stdout)).toEqual({ workflowId: first.workflowId, runId: first.runId, url: expect.any(String), joinedWithOtherSettings: ['timeoutSeconds'] });
    expect(third.stderr).toContain(`joined workflow ${first.workflowId}, already running the same request with other settings (timeoutSeconds): its settings apply`);
    // Its progress query shows what it waits for, per partition, with both ends.
    const promoting = t.temporal.client.workflow.getHandle(first.workflowId);
    await expect.poll(async () => (await promoting.query(progressQuery)).step, { timeout: 20_000 }).toBe('waiting until the destination has everything the source has');
    expect(await promoting.query(progressQuery)).toMatchObject({
      workflow: 'promote',
      done: false,
      total: 2,
      partitions: both.map((partition) => ({ topic: tp, partition, state: 'MIRRORING', destinationEnd: '20', sourceEnd: '20' })),
    });
    expect((await promoting.query(progressQuery, { summary: true })).partitions).toBeUndefined();
    await txn.commit();
    await txnProducer.disconnect();
    const joined = await kmirrorJson<{ workflowId: string; result: { states: Record<string, number> } }>('promote', m, '--all-topics');
    expect(joined.workflowId).toBe(first.workflowId);
    expect(joined.result.states).toEqual({ STOPPED: 2 });
    expect((await readStream(t.db, mirrorStreamId(m))).filter((e) => e.type === 'PartitionStopRequested')).toHaveLength(2);
    expect((await kmirror('delete', m)).code).toBe(0);
  });

  it('every command has --help with a usage and an example', async () => {
    const program = buildProgram();
    const paths = program.commands.flatMap((c) => [[c.name()], ...c.commands.map((s) => [c.name(), s.name()])]);
    expect(paths).toEqual(expect.arrayContaining([['cluster'], ['cluster', 'add'], ['cluster', 'list'], ['cluster', 'describe'], ['create'], ['start'], ['pause'], ['resume'], ['list'], ['describe'], ['history'], ['worker']]));
    const results = await limited(paths, 4, (p) => kmirror(...p, '--help'));
    const missing: string[] = [];
    paths.forEach((p, i) => {
      const r = results[i]!;
      expect.soft(r.code, ended(r)).toBe(0);
      expect(r.stdout, p.join(' ')).toMatch(new RegExp(`^Usage: kmirror ${escape(p.join(' '))} `));
      if (!/^Examples?:\n {2}kmirror /m.test(r.stdout)) missing.push(p.join(' '));
    });
    expect(missing, 'commands whose --help has no Example section').toEqual([]);
  });

  it('history --verify exits 1 naming the first broken link once an event was changed in place (runs last: the chain is global)', async () => {
    const victim = (await readStream(t.db, stream))[1]!;
    await sql`alter table events disable trigger events_append_only`.execute(t.db);
    await sql`update events set metadata = jsonb_set(metadata, '{actor}', '"mallory"') where position = ${victim.position.toString()}::int8`.execute(t.db);
    await sql`alter table events enable trigger events_append_only`.execute(t.db);
    const human = await kmirror('history', mirror, '--verify');
    expect(human.code, ended(human)).toBe(1);
    expect(human.stderr).toMatch(new RegExp(`^error EVENT_CHAIN_BROKEN: the event log's hash chain breaks at position ${victim.position} \\(stream ${escape(stream)}, version 2\\)`, 'm'));
    // --json: still one object (the events and the chain's verdict), and exit 1.
    const json = await kmirror('history', mirror, '--verify', '--json');
    expect(json.code, ended(json)).toBe(1);
    const parsed = JSON.parse(json.stdout) as HistoryJson & { error?: { code: string; message: string } };
    expect(parsed.chain).toMatchObject({ ok: false, position: String(victim.position), streamId: stream, streamVersion: '2' });
    // The error in the object, as every failing command prints it with --json.
    expect(parsed.error).toEqual({ code: 'EVENT_CHAIN_BROKEN', message: expect.stringMatching(new RegExp(`^the event log's hash chain breaks at position ${victim.position} `)) });
  });

  it('no command printed the SASL password', () => {
    expect(runs.length).toBeGreaterThan(20);
    for (const r of runs) expect(`${r.stdout}${r.stderr}`, `kmirror ${r.args.join(' ')}`).not.toContain(password);
  });
});
