// The reference tools of the benchmarks, from the same Kafka jars the stack runs: Apache Kafka's
// ProducerPerformance / ConsumerPerformance and MirrorMaker 2 (dedicated mode).
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { javaClientLines, kafkaJava } from '../../scripts/stack/kafka.ts';
import { stackDir } from '../../scripts/stack/topology.ts';
import type { Admin } from 'kafkajs';
import type { ClusterConnection } from '../../domain/connection.ts';
import { deleteTopicsAndWait } from '../../kafka/admin.ts';

const benchDir = join(stackDir, 'bench');

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
  /** The JVM's process id (for its CPU time). */
  readonly pid: number;
  /** The configs MirrorMaker logged for its replication task's producer and consumer (the last of
   *  each): proof that an override took effect, since Connect applies defaults of its own. */
  loggedConfigs(): { producer: Record<string, string> | undefined; consumer: Record<string, string> | undefined };
  /** The first ERROR line about the replication connector (MirrorSourceConnector): a connector
   *  MirrorMaker could not configure never starts, and nothing is copied. (With offset syncs off,
   *  the checkpoint connector is refused too, by design: not an error here.) */
  sourceConnectorError(): string | undefined;
  stop(): Promise<void>;
}

/**
 * MirrorMaker 2 as a capable operator tunes it for throughput (the settings of issue #12, measured
 * on this kind of machine): the replication producer with 5 requests in flight under idempotence
 * (Connect would force 1), large batches and requests (at the 1 MiB max.request.size default a
 * request carries ~4 batches of 256 KiB), big buffers; the consumer with large polls and fetches;
 * no offset-sync records (kmirror needs none either).
 */
export const tunedMirrorMaker: Readonly<{ producer: Record<string, string>; consumer: Record<string, string>; connector: Record<string, string> }> = Object.freeze({
  producer: {
    'max.in.flight.requests.per.connection': '5',
    'enable.idempotence': 'true',
    'batch.size': '524288',
    'linger.ms': '10',
    'max.request.size': '8388608',
    'send.buffer.bytes': '1048576',
    'buffer.memory': '134217728',
  },
  consumer: {
    'max.poll.records': '10000',
    'fetch.max.bytes': '52428800',
    'max.partition.fetch.bytes': '4194304',
    'receive.buffer.bytes': '1048576',
  },
  connector: { 'emit.offset-syncs.enabled': 'false' },
});

/** startMirrorMaker's `extra` for tunedMirrorMaker: the producer settings for the destination
 *  (`dst.producer.*`, compressing as `compression`), the consumer's for the source. */
export function tunedMirrorMakerProperties(compression: string): Record<string, string> {
  return {
    ...Object.fromEntries(Object.entries(tunedMirrorMaker.producer).map(([k, v]) => [`dst.producer.${k}`, v])),
    'dst.producer.compression.type': compression,
    ...Object.fromEntries(Object.entries(tunedMirrorMaker.consumer).map(([k, v]) => [`src.consumer.${k}`, v])),
    ...tunedMirrorMaker.connector,
  };
}

/** MirrorMaker 2's internal topics (offsets, configs, status, offset syncs) and `heartbeats` on
 *  each cluster of `admins`: deleted after a run, so the next one starts clean. */
export async function deleteMirrorMakerTopics(admins: readonly Admin[]): Promise<void> {
  for (const admin of admins) {
    await deleteTopicsAndWait(admin, (await admin.listTopics()).filter((t) => /^mm2-.*\.internal$/.test(t) || t === 'heartbeats'));
  }
}

/** `ProducerConfig values:` / `ConsumerConfig values:` blocks of a log: one record per block. */
export function configBlocks(log: string, kind: 'ProducerConfig' | 'ConsumerConfig'): Record<string, string>[] {
  const blocks: Record<string, string>[] = [];
  let current: Record<string, string> | undefined;
  for (const line of log.split('\n')) {
    if (line.includes(`${kind} values:`)) blocks.push((current = {}));
    else if (current !== undefined) {
      const m = /^\t(\S+) = (.*?)(?: \(org\.apache[^)]*\))?$/.exec(line);
      if (m) current[m[1]!] = m[2]!;
      else current = undefined;
    }
  }
  return blocks;
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
    // Any offset-syncs.* key is refused while emit.offset-syncs.enabled=false.
    ...(opts.extra?.['emit.offset-syncs.enabled'] === 'false' ? [] : ['offset-syncs.topic.replication.factor=1']),
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
  // Warnings, plus the client config dumps (INFO) that prove which settings the clients got.
  const log4j = join(benchDir, 'mm2-log4j2.properties');
  writeFileSync(
    log4j,
    [
      'status = warn',
      'appender.out.type = Console',
      'appender.out.name = OUT',
      'appender.out.layout.type = PatternLayout',
      'appender.out.layout.pattern = %p %m%n',
      'rootLogger.level = WARN',
      'rootLogger.appenderRef.out.ref = OUT',
      // AbstractConfig.logAll() writes every client's "<Kind>Config values:" dump.
      'logger.configs.name = org.apache.kafka.common.config.AbstractConfig',
      'logger.configs.level = INFO',
      '',
    ].join('\n'),
  );
  const java = kafkaJava('org.apache.kafka.connect.mirror.MirrorMaker', [file], '1g', log4j);
  const child = spawn(java.command, java.args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stdout = '';
  let stderr = '';
  // Its log is also kept in the bench directory (mm2.log) for a look after a run.
  const logFile = join(benchDir, 'mm2.log');
  writeFileSync(logFile, '');
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    appendFileSync(logFile, d);
  });
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-20_000)));
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  // The replication task's clients: their client.id names the connector (MirrorSourceConnector).
  const task = (blocks: Record<string, string>[]) => blocks.filter((b) => (b['client.id'] ?? '').includes('MirrorSourceConnector') || (b['client.id'] ?? '').includes('replication-consumer')).at(-1);
  return {
    pid: child.pid!,
    sourceConnectorError: () => /^ERROR .*MirrorSourceConnector.*$/m.exec(stdout)?.[0],
    loggedConfigs: () => ({ producer: task(configBlocks(stdout, 'ProducerConfig')), consumer: task(configBlocks(stdout, 'ConsumerConfig')) }),
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
