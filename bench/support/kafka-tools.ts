// The reference tools of the benchmarks, from the same Kafka jars the stack runs: Apache Kafka's
// ProducerPerformance / ConsumerPerformance and MirrorMaker 2 (dedicated mode).
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { kafkaJava } from '../../scripts/stack/kafka.ts';
import { stackDir } from '../../scripts/stack/topology.ts';
import type { ClusterConnection } from '../../domain/connection.ts';

const benchDir = join(stackDir, 'bench');

/** A connection as Java client properties (`key=value` lines, each key behind `prefix`). Holds the password. */
function javaClientLines(connection: ClusterConnection, prefix = ''): string[] {
  const lines = [`${prefix}bootstrap.servers=${connection.bootstrap.join(',')}`, `${prefix}security.protocol=${connection.securityProtocol}`];
  if (connection.sasl) {
    lines.push(
      `${prefix}sasl.mechanism=${connection.sasl.mechanism.toUpperCase()}`,
      `${prefix}sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="${connection.sasl.username}" password="${connection.sasl.password}";`,
    );
  }
  return lines;
}

/** Java client properties for a connection (written to a 0600 file under .stack; holds the password). */
export function clientProperties(name: string, connection: ClusterConnection, extra: Record<string, string> = {}): string {
  mkdirSync(benchDir, { recursive: true });
  const lines = [...javaClientLines(connection), ...Object.entries(extra).map(([k, v]) => `${k}=${v}`)];
  const file = join(benchDir, `${name}.properties`);
  writeFileSync(file, `${lines.join('\n')}\n`, { mode: 0o600 });
  return file;
}

export interface JavaRun {
  readonly stdout: string;
  readonly stderr: string;
}

export function runJava(mainClass: string, args: readonly string[], opts: { heap?: string; timeoutMs?: number } = {}): Promise<JavaRun> {
  const java = kafkaJava(mainClass, args, opts.heap ?? '1g');
  return new Promise((resolve, reject) => {
    const child = spawn(java.command, java.args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30 * 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve({ stdout, stderr });
      else reject(new Error(`${mainClass} exited with ${code}:\n${(stdout + stderr).split('\n').slice(-20).join('\n')}`));
    });
  });
}

export interface ProducerPerfResult {
  readonly records: number;
  readonly recordsPerSec: number;
  readonly mbPerSec: number;
  readonly p99Ms: number;
}

/** ProducerPerformance; throughputRecordsPerSec -1 = as fast as possible. */
export async function producerPerformance(opts: {
  propertiesFile: string;
  topic: string;
  records: number;
  recordSize: number;
  throughputRecordsPerSec?: number;
  extra?: Record<string, string>;
}): Promise<ProducerPerfResult> {
  // One --command-property followed by every key=value: the option takes several values, and
  // when it is repeated only its last occurrence counts (repeating it silently dropped all but the
  // last property — e.g. batch.size — in an earlier version of this benchmark).
  const props = ['--command-property', ...Object.entries({ acks: 'all', 'linger.ms': '5', 'batch.size': '262144', ...opts.extra }).map(([k, v]) => `${k}=${v}`)];
  const run = await runJava('org.apache.kafka.tools.ProducerPerformance', [
    '--topic',
    opts.topic,
    '--num-records',
    String(opts.records),
    '--record-size',
    String(opts.recordSize),
    '--throughput',
    String(opts.throughputRecordsPerSec ?? -1),
    '--command-config',
    opts.propertiesFile,
    ...props,
  ]);
  // "N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency, a ms 50th, b ms 95th, c ms 99th, ..."
  const line = run.stdout.trim().split('\n').reverse().find((l) => l.includes('records sent'));
  const m = line?.match(/^(\d+) records sent, ([\d.]+) records\/sec \(([\d.]+) MB\/sec\).*?, (\d+) ms 99th/);
  if (!m) throw new Error(`unexpected ProducerPerformance output:\n${run.stdout.slice(-2000)}`);
  return { records: Number(m[1]), recordsPerSec: Number(m[2]), mbPerSec: Number(m[3]), p99Ms: Number(m[4]) };
}

export async function consumerPerformance(opts: { connection: ClusterConnection; propertiesFile: string; topic: string; records: number }): Promise<{ mbPerSec: number; fetchMbPerSec: number }> {
  const run = await runJava('org.apache.kafka.tools.ConsumerPerformance', [
    '--bootstrap-server',
    opts.connection.bootstrap.join(','),
    '--command-config',
    opts.propertiesFile,
    '--topic',
    opts.topic,
    '--messages',
    String(opts.records),
    '--timeout',
    '60000',
  ]);
  // header, then: start, end, MB, MB.sec, nMsg, nMsg.sec, rebalance.ms, fetch.ms, fetch.MB.sec, fetch.nMsg.sec
  const line = run.stdout.trim().split('\n').pop() ?? '';
  const cols = line.split(',').map((c) => c.trim());
  if (cols.length < 10) throw new Error(`unexpected ConsumerPerformance output:\n${run.stdout.slice(-2000)}`);
  return { mbPerSec: Number(cols[3]), fetchMbPerSec: Number(cols[8]) };
}

export interface MirrorMakerHandle {
  stop(): Promise<void>;
}

/**
 * MirrorMaker 2 in dedicated mode, source → destination, IdentityReplicationPolicy (topic names
 * kept, as kmirror does), only the data flow enabled (no heartbeats/checkpoints/group sync).
 */
export function startMirrorMaker(opts: {
  source: ClusterConnection;
  destination: ClusterConnection;
  topicsRegex: string;
  tasks: number;
  /** More MirrorMaker properties (e.g. `dst.producer.batch.size`). */
  extra?: Record<string, string>;
}): MirrorMakerHandle {
  mkdirSync(benchDir, { recursive: true });
  const config = [
    'clusters=src,dst',
    ...javaClientLines(opts.source, 'src.'),
    ...javaClientLines(opts.destination, 'dst.'),
    'src->dst.enabled=true',
    `src->dst.topics=${opts.topicsRegex}`,
    'dst->src.enabled=false',
    'replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy',
    `tasks.max=${opts.tasks}`,
    'replication.factor=1',
    'checkpoints.topic.replication.factor=1',
    'heartbeats.topic.replication.factor=1',
    'offset-syncs.topic.replication.factor=1',
    'offset.storage.replication.factor=1',
    'status.storage.replication.factor=1',
    'config.storage.replication.factor=1',
    'emit.heartbeats.enabled=false',
    'emit.checkpoints.enabled=false',
    'sync.group.offsets.enabled=false',
    'sync.topic.acls.enabled=false',
    'refresh.topics.interval.seconds=1',
    ...Object.entries(opts.extra ?? {}).map(([k, v]) => `${k}=${v}`),
    '',
  ].join('\n');
  const file = join(benchDir, 'mm2.properties');
  writeFileSync(file, config, { mode: 0o600 });
  const java = kafkaJava('org.apache.kafka.connect.mirror.MirrorMaker', [file], '1g');
  const child = spawn(java.command, java.args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-20_000)));
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  return {
    async stop() {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        /* gone */
      }
      const timeout = setTimeout(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          /* gone */
        }
      }, 15_000);
      await closed;
      clearTimeout(timeout);
    },
  };
}
