// DESIGN §8 / STYLE 8 on the real stack: after a real scenario run through the CLI (clusters
// registered with password files, a mirror created, started, copying, paused, resumed, read back,
// and two failures caused by a wrong password), no credential is anywhere but the sealed table
// cluster_connections. Scanned: every CLI stdout/stderr (and anything written straight to the
// process streams), every worker log line at debug (the worker's logger and the Temporal runtime's,
// as worker.ts runWorker wires them), every Temporal workflow history and description on the test's
// task queue (inputs, results, activity inputs/results, failures, pending heartbeat details), and
// every row of every other Postgres table (the events' data and metadata included).
import { NativeConnection, type Worker } from '@temporalio/worker';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../../cli/program.ts';
import { createLogger } from '../../log.ts';
import { createWorker } from '../../worker.ts';
import { controlPlane, type ControlPlane } from '../support/control-plane.ts';
import { messages, sendAll } from '../support/mirror-fixture.ts';
import { randomName, stackEnv } from '../support/stack.ts';

// The Temporal runtime's logger carries the workflow and activity context logs and the SDK's own
// (activity failures with their errors included). There is one runtime per process and
// control-plane.ts installs a quiet one on import, so this one is installed before any import runs:
// our logger at debug, core logs forwarded, as worker.ts runWorker does.
const runtimeLog = await vi.hoisted(async () => {
  const { Runtime } = await import('@temporalio/worker');
  const { createLogger: create } = await import('../../log.ts');
  const lines: string[] = [];
  const log = create({ level: 'debug', write: (line) => void lines.push(line), fields: { component: 'temporal' } });
  const at = { TRACE: log.debug, DEBUG: log.debug, INFO: log.info, WARN: log.warn, ERROR: log.error } as const;
  Runtime.install({
    logger: { log: (level, msg, meta) => at[level](msg, meta), trace: at.TRACE, debug: at.DEBUG, info: at.INFO, warn: at.WARN, error: at.ERROR },
    shutdownSignals: [],
    telemetryOptions: { logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} } },
  });
  return { lines };
});

// ---------------------------------------------------------------------------------------------
// The scanner

interface Secret {
  readonly name: string;
  readonly value: string;
}

/** A secret in the forms it could be printed in: as is and JSON-escaped; a hex form also in upper case. */
function forms(name: string, value: string): Secret[] {
  if (value.length < 16) throw new Error(`secret ${name} is too short to scan for without false positives`);
  const out = [{ name, value }];
  const escaped = JSON.stringify(value).slice(1, -1);
  if (escaped !== value) out.push({ name: `${name} (JSON-escaped)`, value: escaped });
  if (/^[0-9a-f]+$/.test(value)) out.push({ name: `${name} (upper case)`, value: value.toUpperCase() });
  return out;
}

/** The names of the secrets `text` contains (never their values: a failure message must not print one). */
function leaksIn(text: string, secrets: readonly Secret[]): string[] {
  return [...new Set(secrets.filter((s) => text.includes(s.value)).map((s) => s.name))];
}

/**
 * JSON text of anything, walking its own properties (never toJSON) and writing every byte array
 * as its UTF-8 text and its hex. Temporal's history and description are protobuf messages whose
 * toJSON writes bytes as base64: JSON.stringify would show every payload (inputs, results,
 * heartbeat details) as base64 and hide a secret in it.
 */
function textOf(value: unknown): string {
  const ancestors = new Set<object>();
  const plain = (v: unknown): unknown => {
    if (typeof v === 'bigint') return v.toString();
    if (v === null || typeof v !== 'object') return typeof v === 'function' || typeof v === 'symbol' ? undefined : v;
    if (v instanceof Uint8Array) {
      const bytes = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
      return `${bytes.toString('utf8')} ${bytes.toString('hex')}`;
    }
    if (v instanceof Date) return v.toISOString();
    if (ancestors.has(v)) return '[circular]';
    ancestors.add(v);
    try {
      return Array.isArray(v) ? v.map(plain) : Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
    } finally {
      ancestors.delete(v);
    }
  };
  return JSON.stringify(plain(value)) ?? '';
}

describe('the scanner', () => {
  const planted = randomBytes(24).toString('base64url');
  const secrets = forms('planted', planted);

  it('flags a secret inside text, JSON and bytes, and nothing in clean text', () => {
    expect(leaksIn(`error SASL: user=kmirror password=${planted}; retry`, secrets)).toEqual(['planted']);
    expect(leaksIn(textOf({ a: [{ b: { password: planted } }] }), secrets)).toEqual(['planted']);
    expect(leaksIn(textOf({ payload: { data: Buffer.from(JSON.stringify({ sasl: { password: planted } })) } }), secrets)).toEqual(['planted']);
    expect(leaksIn(textOf({ payload: { data: new Uint8Array(Buffer.from(`x${planted}x`)) } }), secrets)).toEqual(['planted']);
    // A message whose toJSON hides its bytes as base64, as Temporal's protobuf messages do.
    const data = Buffer.from(JSON.stringify({ password: planted }));
    const message = { data, toJSON: () => ({ data: data.toString('base64') }) };
    expect(leaksIn(JSON.stringify({ payloads: [message] }), secrets)).toEqual([]);
    expect(leaksIn(textOf({ payloads: [message] }), secrets)).toEqual(['planted']);
    expect(leaksIn(`password=${planted.slice(0, -1)}`, secrets)).toEqual([]);
  });

  it('flags a key in hex inside raw bytes and in upper case, and a JSON-escaped secret', () => {
    const key = randomBytes(32);
    const keySecrets = forms('key hex', key.toString('hex'));
    expect(leaksIn(textOf({ data: Buffer.concat([Buffer.from('iv'), key, Buffer.from('tag')]) }), keySecrets)).toEqual(['key hex']);
    expect(leaksIn(`\\x${key.toString('hex').toUpperCase()}`, keySecrets)).toEqual(['key hex (upper case)']);
    const quoted = forms('quoted', `a"b\\c${planted}`);
    expect(leaksIn(JSON.stringify({ p: `a"b\\c${planted}` }), quoted)).toEqual(['quoted (JSON-escaped)']);
  });
});

// ---------------------------------------------------------------------------------------------
// The scenario and the artefacts it leaves

interface CliRun {
  readonly args: readonly string[];
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

let t: ControlPlane;
let worker: { worker: Worker; running: Promise<void>; close(): Promise<void>; connection: NativeConnection } | undefined;
const workerLines: string[] = [];
const cliRuns: CliRun[] = [];
/** Whatever reached process.stdout/stderr directly while the scenario ran (kafkajs, stray console output). */
const streamText: string[] = [];
const restore: (() => void)[] = [];
const tmp = mkdtempSync(join(tmpdir(), 'kmirror-secrets-'));

/** Passwords this file makes up: `rejected` is refused by the destination at `cluster add`;
 *  `unchecked` is stored with --no-check and refused when a mirror tries to use it. */
const rejectedPassword = randomBytes(24).toString('base64url');
const uncheckedPassword = randomBytes(24).toString('base64url');
const mirror = randomName('sec');
const deniedMirror = randomName('sec-denied');
let topic: string;

function allSecrets(): Secret[] {
  const env = stackEnv();
  const read = (file: string): string => readFileSync(file, 'utf8').trim();
  const keyText = read(env.KMIRROR_SECRET_KEY_FILE!);
  const key = Buffer.from(keyText, 'base64');
  const secretsDir = join(env.DEST_SASL_PASSWORD_FILE!, '..');
  return [
    ...forms('kmirror password (dest-kmirror.password)', read(env.DEST_SASL_PASSWORD_FILE!)),
    ...forms('dest-app password', read(join(secretsDir, 'dest-app.password'))),
    ...forms('dest-broker password', read(join(secretsDir, 'dest-broker.password'))),
    ...forms('rejected random password', rejectedPassword),
    ...forms('unchecked random password', uncheckedPassword),
    ...forms('secret key (file text)', keyText),
    ...forms('secret key base64', key.toString('base64')),
    ...forms('secret key base64url', key.toString('base64url')),
    ...forms('secret key hex', key.toString('hex')),
  ];
}

function setEnv(name: string, value: string): void {
  const before = process.env[name];
  process.env[name] = value;
  restore.push(() => {
    if (before === undefined) delete process.env[name];
    else process.env[name] = before;
  });
}

function tapStream(stream: NodeJS.WriteStream): void {
  const original = stream.write;
  stream.write = function (this: NodeJS.WriteStream, chunk: unknown, ...rest: unknown[]) {
    streamText.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'));
    return (original as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof stream.write;
  restore.push(() => {
    stream.write = original;
  });
}

async function cli(...args: string[]): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(['node', 'kmirror', '--actor', 'security-test', ...args], { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s) });
  const run = { args, code, stdout, stderr };
  cliRuns.push(run);
  return run;
}

const ok = async (...args: string[]): Promise<CliRun> => {
  const run = await cli(...args);
  expect(run.code, `kmirror ${args.join(' ')}\n${run.stdout}${run.stderr}`).toBe(0);
  return run;
};

const ends = async (cluster: 'source' | 'dest', partitions: number): Promise<bigint[]> =>
  [...(await (cluster === 'source' ? t.source : t.dest).listOffsets(topic, Array.from({ length: partitions }, (_, i) => i), 'latest')).values()];

beforeAll(async () => {
  t = await controlPlane({ withWorker: false });
  // A worker as the product builds it (worker.ts createWorker) with a logger we read, at debug.
  const log = createLogger({ level: 'debug', write: (line) => void workerLines.push(line), fields: { service: 'kmirror-worker' } });
  const connection = await NativeConnection.connect({ address: t.config.temporal.address });
  const built = await createWorker(t.config, connection, log);
  worker = { worker: built.worker, running: built.worker.run(), close: built.close, connection };
  // The CLI reads its configuration from the environment over the stack's env file.
  setEnv('DATABASE_URL', t.databaseUrl);
  setEnv('TEMPORAL_TASK_QUEUE', t.taskQueue);
  tapStream(process.stdout);
  tapStream(process.stderr);
  writeFileSync(join(tmp, 'rejected.password'), `${rejectedPassword}\n`, { mode: 0o600 });
  writeFileSync(join(tmp, 'unchecked.password'), `${uncheckedPassword}\n`, { mode: 0o600 });
});

afterAll(async () => {
  for (const undo of restore.reverse()) undo();
  rmSync(tmp, { recursive: true, force: true });
  if (t === undefined) return;
  // The runner lives on this file's task queue: end it before the worker that runs it goes.
  for await (const e of t.temporal.client.workflow.list({ query: `TaskQueue = '${t.taskQueue}' AND ExecutionStatus = 'Running'` })) {
    await t.temporal.client.workflow
      .getHandle(e.workflowId, e.runId)
      .terminate('test finished')
      .catch(() => undefined);
  }
  if (worker !== undefined) {
    if (worker.worker.getState() === 'RUNNING') worker.worker.shutdown();
    await worker.running.catch(() => undefined);
    await worker.close();
    await worker.connection.close();
  }
  await t.close();
});

describe('no credential outside the sealed table', () => {
  it('runs the scenario through the CLI: clusters, a mirror copying, pause, resume, reads, and auth failures', async () => {
    const env = stackEnv();
    const sasl = ['--security-protocol', 'SASL_PLAINTEXT', '--sasl-mechanism', 'plain', '--username', env.DEST_SASL_USERNAME!];

    // The destination again, registered through the CLI with the stack's real password file: checked, stored.
    const added = await ok('cluster', 'add', 'dst-cli', '--bootstrap', env.DEST_BOOTSTRAP!, ...sasl, '--password-file', env.DEST_SASL_PASSWORD_FILE!);
    expect(added.stdout).toMatch(/security protocol +SASL_PLAINTEXT/);
    expect(added.stdout).toMatch(/clusterId/);

    // A wrong password: the check fails with the broker's authentication error, in both error formats.
    for (const json of [false, true]) {
      const rejected = await cli(...(json ? ['--json'] : []), 'cluster', 'add', 'rejected', '--bootstrap', env.DEST_BOOTSTRAP!, ...sasl, '--password-file', join(tmp, 'rejected.password'));
      expect(rejected.code, rejected.stdout + rejected.stderr).toBe(1);
      if (json) expect(JSON.parse(rejected.stdout)).toMatchObject({ error: { code: 'CLUSTER_AUTHENTICATION_FAILED' } });
      else expect(rejected.stderr).toMatch(/^error CLUSTER_AUTHENTICATION_FAILED: cluster rejected \(.*\): .*SASL/m);
    }

    // A wrong password stored without the check: the worker unseals it, the broker refuses it, and
    // createMirror fails with that error (an activity failure and a workflow failure in history).
    await ok('cluster', 'add', 'unchecked', '--bootstrap', env.DEST_BOOTSTRAP!, ...sasl, '--password-file', join(tmp, 'unchecked.password'), '--no-check');
    const denied = await cli('--json', 'create', deniedMirror, '--source', 'src', '--destination', 'unchecked');
    expect(denied.code, denied.stdout + denied.stderr).toBe(1);
    expect(JSON.parse(denied.stdout)).toMatchObject({ error: { code: 'CLUSTER_AUTHENTICATION_FAILED' } });

    // A mirror into the CLI-registered destination, copying.
    topic = await t.sourceTopic({ partitions: 2 });
    const producer = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await sendAll(producer, topic, messages(400, 2));
    await ok('--reason', 'security scan', 'create', mirror, '--source', 'src', '--destination', 'dst-cli');
    await ok('start', mirror, '--topic', topic);
    await expect.poll(() => ends('dest', 2), { timeout: 30_000 }).toEqual(await ends('source', 2));
    await ok('pause', mirror, '--topic', topic);
    await sendAll(producer, topic, messages(200, 2, { from: 400 }));
    await ok('--json', 'resume', mirror, '--all-topics');
    await expect.poll(() => ends('dest', 2), { timeout: 30_000 }).toEqual([300n, 300n]);
    await producer.disconnect();
    // Copies record their positions as they go (events written by the worker's activities).
    await expect
      .poll(async () => (await sql<{ n: string }>`select count(*)::text as n from events where type = 'PartitionPositionRecorded'`.execute(t.db)).rows[0]!.n, { timeout: 20_000 })
      .not.toBe('0');

    // Every read command, in both formats where it has them.
    const described = await ok('describe', mirror, '--json');
    expect(JSON.parse(described.stdout)).toMatchObject({ name: mirror });
    await ok('describe', mirror);
    const history = await ok('history', mirror, '--json');
    expect((JSON.parse(history.stdout) as { events: unknown[] }).events.length).toBeGreaterThan(3);
    await ok('history', mirror, '--verify');
    await ok('list', '--json');
    const listed = await ok('cluster', 'list', '--json');
    expect((JSON.parse(listed.stdout) as { name: string }[]).map((c) => c.name).sort()).toEqual(['dst', 'dst-cli', 'src', 'unchecked']);
    await ok('cluster', 'list');
    await ok('cluster', 'describe', 'dst-cli');
    await ok('--json', 'cluster', 'describe', 'unchecked');
  });

  it('the sealed table holds the clusters (and its ciphertext is not the password)', async () => {
    const rows = await t.db.selectFrom('cluster_connections').select(['cluster', 'ciphertext']).orderBy('cluster').execute();
    expect(rows.map((r) => r.cluster)).toEqual(['dst', 'dst-cli', 'src', 'unchecked']);
    const sealed = rows.map((r) => textOf(r)).join('\n');
    expect(leaksIn(sealed, allSecrets())).toEqual([]);
  });

  it('CLI output: every command, stdout and stderr, and the process streams', () => {
    expect(cliRuns.length).toBeGreaterThanOrEqual(17);
    const chars = cliRuns.reduce((n, r) => n + r.stdout.length + r.stderr.length, 0);
    expect(chars).toBeGreaterThan(5_000);
    const secrets = allSecrets();
    const found = [
      ...cliRuns.flatMap((r) => leaksIn(r.stdout + r.stderr, secrets).map((s) => `kmirror ${r.args.join(' ')}: ${s}`)),
      ...leaksIn(streamText.join(''), secrets).map((s) => `process streams: ${s}`),
    ];
    console.info(`scanned ${cliRuns.length} CLI runs (${chars} characters), ${streamText.length} direct stream writes`);
    expect(found).toEqual([]);
  });

  it('worker logs at debug: the worker logger and the Temporal runtime logger', () => {
    const lines = [...workerLines, ...runtimeLog.lines];
    expect(workerLines.some((l) => l.includes('worker built'))).toBe(true);
    // Activity completions and failures are logged by the SDK at debug/warn: the failure path is in here.
    expect(runtimeLog.lines.length).toBeGreaterThan(50);
    expect(runtimeLog.lines.some((l) => l.includes('CLUSTER_AUTHENTICATION_FAILED') || l.includes('SASL'))).toBe(true);
    const secrets = allSecrets();
    const found = lines.flatMap((l, i) => leaksIn(l, secrets).map((s) => `log line ${i}: ${s}`));
    console.info(`scanned ${workerLines.length} worker-logger lines, ${runtimeLog.lines.length} runtime-logger lines`);
    expect(found).toEqual([]);
  });

  it('Temporal: every history and description of the task queue', async () => {
    const { workflow } = t.temporal.client;
    const expected = [`create:${deniedMirror}`, `create:${mirror}`, `mirror:${mirror}`];
    const prefixes = [`start:${mirror}:`, `pause:${mirror}:`, `resume:${mirror}:`];
    let listed: { workflowId: string; runId: string }[] = [];
    // Visibility lags behind the executions.
    await expect
      .poll(
        async () => {
          listed = [];
          for await (const e of workflow.list({ query: `TaskQueue = '${t.taskQueue}'` })) listed.push({ workflowId: e.workflowId, runId: e.runId });
          const ids = listed.map((e) => e.workflowId);
          return expected.every((id) => ids.includes(id)) && prefixes.every((p) => ids.some((id) => id.startsWith(p)));
        },
        { timeout: 30_000, interval: 500 },
      )
      .toBe(true);
    const secrets = allSecrets();
    const found: string[] = [];
    let events = 0;
    let chars = 0;
    let failures = 0;
    let decoded = false;
    let heartbeats = 0;
    for (const e of listed) {
      const handle = workflow.getHandle(e.workflowId, e.runId);
      const history = await handle.fetchHistory();
      events += history.events?.length ?? 0;
      const historyText = textOf(history);
      // Pending activities' heartbeat details and last failures are in the description, not the history.
      const description = (await handle.describe()).raw;
      const descriptionText = textOf(description);
      heartbeats += (description.pendingActivities ?? []).filter((a) => (a.heartbeatDetails?.payloads?.length ?? 0) > 0).length;
      chars += historyText.length + descriptionText.length;
      // Payloads are read as text: the actor is only in the (byte) inputs.
      decoded ||= historyText.includes('security-test');
      failures += (history.events ?? []).filter((h) => h.activityTaskFailedEventAttributes || h.workflowExecutionFailedEventAttributes).length;
      found.push(...leaksIn(historyText, secrets).map((s) => `history ${e.workflowId} ${e.runId}: ${s}`));
      found.push(...leaksIn(descriptionText, secrets).map((s) => `description ${e.workflowId} ${e.runId}: ${s}`));
    }
    console.info(`scanned ${listed.length} workflow executions, ${events} history events, ${failures} failure events, ${heartbeats} pending activities with heartbeat details, ${chars} characters`);
    expect(listed.length).toBeGreaterThanOrEqual(6);
    expect(events).toBeGreaterThan(100);
    expect(failures).toBeGreaterThanOrEqual(2);
    expect(decoded).toBe(true);
    expect(heartbeats).toBeGreaterThanOrEqual(1);
    expect(found).toEqual([]);
  });

  it('Postgres: every row of every table but cluster_connections, events included', async () => {
    const tables = await sql<{ schema: string; name: string }>`
      select table_schema as schema, table_name as name from information_schema.tables
      where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')
      order by 1, 2`.execute(t.db);
    const scanned = tables.rows.filter((r) => r.name !== 'cluster_connections');
    expect(scanned.map((r) => r.name)).toEqual(expect.arrayContaining(['events', 'clusters', 'mirrors', 'mirror_partitions', 'partition_leases']));
    const secrets = allSecrets();
    const found: string[] = [];
    const counts: Record<string, number> = {};
    for (const { schema, name } of scanned) {
      const rows = await sql<{ row: string }>`select r::text as row from ${sql.table(`${schema}.${name}`)} r`.execute(t.db);
      counts[name] = rows.rows.length;
      for (const [i, r] of rows.rows.entries()) found.push(...leaksIn(r.row, secrets).map((s) => `${schema}.${name} row ${i}: ${s}`));
    }
    // The events once more as their JSON values (row text escapes quotes; this is the text readers get).
    const events = await sql<{ data: string; metadata: string }>`select data::text as data, metadata::text as metadata from events`.execute(t.db);
    for (const [i, e] of events.rows.entries()) found.push(...leaksIn(e.data + e.metadata, secrets).map((s) => `events data/metadata ${i}: ${s}`));
    console.info(`scanned Postgres tables: ${JSON.stringify(counts)}`);
    expect(counts.events).toBeGreaterThan(10);
    expect(found).toEqual([]);
  });
});
