// Benchmark "throughput": kmirror's copier against MirrorMaker 2 and the raw ceilings, in one run,
// on the local stack (source PLAINTEXT, destination SASL_PLAINTEXT; both on this machine).
//
//  1. fill: a source topic of P partitions with N bytes of R-byte records (ProducerPerformance);
//  2. ceilings: ConsumerPerformance reading the topic from the source, ProducerPerformance writing
//     the same volume into a scratch topic of the destination;
//  3. mirrors: MirrorMaker 2 (dedicated mode, IdentityReplicationPolicy, same topic name) and
//     kmirror (scripts/copy-topic.ts in its own process) each copy the topic into a fresh
//     same-named destination topic, measured the same way from outside: the destination's end
//     offsets are polled every 50 ms; throughput = bytes ÷ (all copied − first record arrived),
//     so neither tool's start-up (JVM, connector rebalance, connections) counts;
//  4. lag: kmirror running while ProducerPerformance writes at a steady rate into a new topic whose
//     destination twin has message.timestamp.type=LogAppendTime; each destination batch then
//     carries the source producer's timestamp of its first record (firstTimestamp) and the
//     destination's append time (maxTimestamp), so lag = destination append − source record time.
//
//   npm run bench -- throughput [--mib 1024] [--record-bytes 1024] [--partitions 12]
//        [--rounds 3] [--mm2-tasks 1] [--kmirror-copiers 2] [--lag-seconds 30] [--lag-mib-per-s 20]
//        [--skip-lag] [--compression none|gzip|snappy|lz4|zstd] [--source-batch-bytes 262144]
//        [--kmirror-session-per-copier]
//
// MirrorMaker runs with tasks.max=1 by default: its fastest setting on the 2-core machine of
// docs/benchmarks.md (1 task 118 MiB/s, 2 tasks 82–106, 4 tasks 60). Each round alternates which
// tool goes first.
//
// Prints RESULT lines; the last is RESULT kmirror_vs_mm2=<ratio> (median over rounds).
import { cpus, totalmem } from 'node:os';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { createDatabase } from '../db/connect.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { createTopicsAndWait, deleteTopicsAndWait } from '../kafka/admin.ts';
import { createKafka } from '../kafka/connection.ts';
import { RawCluster, IsolationLevel } from '../kafka/protocol.ts';
import { runCopyTopic, type CopyTopicProcess } from '../scripts/copy-topic-process.ts';
import type { CopyTopicArgs } from '../scripts/copy-topic.ts';
import { connectionFor, formattedDestNodes } from '../scripts/stack/kafka.ts';
import { databaseUrl } from '../scripts/stack/postgres.ts';
import { KAFKA_VERSION, projectRoot } from '../scripts/stack/topology.ts';
import { clientProperties, consumerPerformance, producerPerformance, startMirrorMaker } from './support/kafka-tools.ts';

const { values } = parseArgs({
  options: {
    mib: { type: 'string', default: '1024' },
    'record-bytes': { type: 'string', default: '1024' },
    partitions: { type: 'string', default: '12' },
    rounds: { type: 'string', default: '3' },
    'mm2-tasks': { type: 'string', default: '1' },
    'kmirror-copiers': { type: 'string', default: '2' },
    'lag-seconds': { type: 'string', default: '30' },
    'lag-mib-per-s': { type: 'string', default: '20' },
    'skip-lag': { type: 'boolean', default: false },
    compression: { type: 'string', default: 'none' },
    'source-batch-bytes': { type: 'string', default: '262144' },
    'kmirror-session-per-copier': { type: 'boolean', default: false },
  },
});
const recordBytes = Number(values['record-bytes']);
const totalBytes = Number(values.mib) * 2 ** 20;
const records = Math.floor(totalBytes / recordBytes);
const partitionCount = Number(values.partitions);
const rounds = Number(values.rounds);
const mm2Tasks = Number(values['mm2-tasks']);
const kmirrorCopiers = Number(values['kmirror-copiers']);
const partitions = Array.from({ length: partitionCount }, (_, i) => i);
/** compression.type of every producer: the fill, the destination ceiling and MirrorMaker's (so
 *  it writes batches compressed as the source has them; kmirror copies them as they are). */
const compression = values.compression!;
if (!['none', 'gzip', 'snappy', 'lz4', 'zstd'].includes(compression)) throw new Error(`--compression must be none, gzip, snappy, lz4 or zstd, got ${compression}`);
const compressed = { 'compression.type': compression };
/** batch.size of the fill's producer: kmirror copies the source's batches, so their size matters. */
const sourceBatchBytes = values['source-batch-bytes']!;
/** kmirror's byte budget (bytes fetched, not yet acknowledged by the destination). */
const kmirrorBudget = 64 * 2 ** 20;

const result = (name: string, value: number | string, unit = ''): void => {
  process.stdout.write(`RESULT ${name}=${value}${unit === '' ? '' : ` ${unit}`}\n`);
};
const note = (line: string): void => void process.stderr.write(`# ${line}\n`);
const round1 = (n: number): number => Math.round(n * 10) / 10;
const mibPerS = (bytes: number, ms: number): number => round1(bytes / 2 ** 20 / (ms / 1000));
const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const up = spawnSync(process.execPath, ['--import', 'tsx', join(projectRoot, 'scripts', 'stack.ts'), 'up', '--quiet'], { stdio: 'inherit' });
if (up.status !== 0) process.exit(up.status ?? 1);

const sourceConnection = connectionFor('source');
const destConnection = connectionFor('dest', formattedDestNodes() ?? 1);
const sourceKafka = createKafka(sourceConnection, { retries: 8 });
const destKafka = createKafka(destConnection, { retries: 8 });
const source = new RawCluster(sourceKafka);
const dest = new RawCluster(destKafka);
const sourceAdmin = sourceKafka.admin();
const destAdmin = destKafka.admin();
await Promise.all([source.connect(), dest.connect(), sourceAdmin.connect(), destAdmin.connect()]);
const db = createDatabase(databaseUrl, { maxConnections: 1 });
await migrateToLatest(db);
await db.destroy();

const sourceProps = clientProperties('source', sourceConnection);
const destProps = clientProperties('dest', destConnection);
const run = `bench.throughput-${Date.now().toString(36)}`;
const created: { admin: typeof sourceAdmin; topic: string }[] = [];

async function createTopic(admin: typeof sourceAdmin, topic: string, configs: Record<string, string> = {}): Promise<void> {
  // A just-deleted topic of the same name may still be going away: retry until it is gone.
  for (let attempt = 0; ; attempt++) {
    try {
      if (!(await createTopicsAndWait(admin, [{ topic, partitions: partitionCount, replicationFactor: 1, configs }]))) throw new Error(`${topic} still exists`);
      created.push({ admin, topic });
      return;
    } catch (err) {
      if (attempt >= 60) throw err;
      await sleep(500);
    }
  }
}

async function deleteTopic(admin: typeof sourceAdmin, topic: string): Promise<void> {
  await deleteTopicsAndWait(admin, [topic]);
  const at = created.findIndex((c) => c.admin === admin && c.topic === topic);
  if (at >= 0) created.splice(at, 1);
}

const sum = (m: ReadonlyMap<number, bigint>): bigint => [...m.values()].reduce((a, b) => a + b, 0n);

/**
 * Poll the destination's end offsets until `expected` records are there; time from the first
 * record's arrival to the last. The same yardstick for every tool.
 */
async function watchDestination(topic: string, expected: bigint, timeoutMs = 20 * 60_000): Promise<{ activeMs: number; wallMs: number }> {
  const t0 = performance.now();
  let first: number | undefined;
  for (;;) {
    const have = await dest.listOffsets(topic, partitions, 'latest').then(sum, (err: unknown) => {
      // A topic created a moment ago: its leader answers NOT_LEADER_FOR_PARTITION (retriable)
      // until it has loaded the partition, though the metadata already names it.
      if ((err as { retriable?: boolean }).retriable) return 0n;
      throw err;
    });
    const now = performance.now();
    if (have > 0n && first === undefined) first = now;
    if (have >= expected) return { activeMs: now - (first ?? t0), wallMs: now - t0 };
    if (now - t0 > timeoutMs) throw new Error(`${topic}: only ${have} of ${expected} records reached the destination in ${timeoutMs} ms`);
    await sleep(50);
  }
}

function startKmirror(topic: string, untilCaughtUp: boolean): CopyTopicProcess {
  const args: CopyTopicArgs = {
    databaseUrl,
    topic,
    partitions,
    owner: `bench-${process.pid}`,
    untilCaughtUp,
    ttlMs: 10_000,
    graceMs: 15_000,
    budgetBytes: kmirrorBudget,
    copiers: kmirrorCopiers,
    sessionPerCopier: values['kmirror-session-per-copier'],
    options: { fetchMaxBytes: 16 * 2 ** 20, partitionMaxBytes: 2 * 2 ** 20 },
  };
  return runCopyTopic(args);
}

/** Wait for the copier process to end (SIGTERM it first unless it stops by itself) and report its memory. */
async function finishKmirror(child: CopyTopicProcess, opts: { terminate: boolean }): Promise<void> {
  if (opts.terminate) process.kill(child.pid, 'SIGTERM');
  const exit = await child.done;
  if (exit.code !== 0) throw new Error(`kmirror copier exited with ${exit.code ?? exit.signal}: ${exit.stderr.slice(-2000)}`);
  const done = exit.events.find((e) => e.event === 'done') as { peakRss: number; budgetPeak: number } | undefined;
  if (done) note(`kmirror: peak RSS ${round1(done.peakRss / 2 ** 20)} MiB, budget peak ${round1(done.budgetPeak / 2 ** 20)} MiB of ${kmirrorBudget / 2 ** 20} MiB`);
}

/** MirrorMaker 2's internal topics (offsets, configs, status, offset syncs): removed after each run. */
async function deleteMirrorMakerTopics(): Promise<void> {
  for (const admin of [sourceAdmin, destAdmin]) {
    await deleteTopicsAndWait(admin, (await admin.listTopics()).filter((t) => /^mm2-.*\.internal$/.test(t) || t === 'heartbeats'));
  }
}

async function measureMirror(tool: 'kmirror' | 'mm2', topic: string): Promise<number> {
  await createTopic(destAdmin, topic);
  let stop: () => Promise<void>;
  if (tool === 'kmirror') {
    const child = startKmirror(topic, true);
    stop = () => finishKmirror(child, { terminate: false });
  } else {
    const mm2 = startMirrorMaker({
      source: sourceConnection,
      destination: destConnection,
      topicsRegex: topic.replaceAll('.', '\\.'),
      tasks: mm2Tasks,
      // The same producer batching as the ProducerPerformance ceiling (Connect's default batch is 16 KiB).
      extra: { 'dst.producer.batch.size': '262144', 'dst.producer.linger.ms': '5', 'dst.producer.compression.type': compression },
    });
    stop = async () => {
      await mm2.stop();
      await deleteMirrorMakerTopics();
    };
  }
  try {
    const { activeMs, wallMs } = await watchDestination(topic, BigInt(records));
    const rate = mibPerS(records * recordBytes, activeMs);
    note(`${tool}: ${records} records in ${Math.round(activeMs)} ms from the first arrival (${Math.round(wallMs)} ms from start) = ${rate} MiB/s`);
    const [srcEnd, dstEnd] = await Promise.all([source.listOffsets(topic, partitions, 'latest'), dest.listOffsets(topic, partitions, 'latest')]);
    if (tool === 'kmirror') {
      for (const p of partitions) if (srcEnd.get(p) !== dstEnd.get(p)) throw new Error(`kmirror: partition ${p} ends at ${dstEnd.get(p)} on the destination, ${srcEnd.get(p)} on the source`);
    }
    return rate;
  } finally {
    await stop();
    await deleteTopic(destAdmin, topic);
  }
}

/** Records per batch at the head of a source partition: shows the producer settings took effect. */
async function headBatchRecords(topic: string): Promise<number> {
  const leader = await source.leaderOf(topic, 0);
  const [fetched] = await source.fetch({ leader, partitions: [{ topic, partition: 0, fetchOffset: 0n, maxBytes: 4 * 2 ** 20 }], maxWaitMs: 100, maxBytes: 4 * 2 ** 20, isolationLevel: IsolationLevel.READ_UNCOMMITTED });
  const batches = fetched?.batches ?? [];
  return round1(batches.reduce((n, b) => n + b.recordsCount, 0) / Math.max(1, batches.length));
}

/** Lag of every destination batch's first record: destination append time − source record time. */
async function batchLags(topic: string): Promise<{ lagMs: number; records: number }[]> {
  const lags: { lagMs: number; records: number }[] = [];
  const ends = await dest.listOffsets(topic, partitions, 'latest');
  for (const partition of partitions) {
    const leader = await dest.leaderOf(topic, partition);
    for (let offset = 0n; offset < ends.get(partition)!; ) {
      const [fetched] = await dest.fetch({ leader, partitions: [{ topic, partition, fetchOffset: offset, maxBytes: 8 * 2 ** 20 }], maxWaitMs: 100, maxBytes: 8 * 2 ** 20, isolationLevel: IsolationLevel.READ_UNCOMMITTED });
      if (!fetched || fetched.error) throw new Error(`reading ${topic}-${partition} at ${offset}: ${fetched?.error?.type ?? 'no data'}`);
      for (const batch of fetched.batches) {
        if (batch.lastOffset < offset) continue;
        if (!batch.logAppendTime) throw new Error(`${topic}-${partition}: batch at ${batch.baseOffset} is not LogAppendTime`);
        lags.push({ lagMs: Number(batch.maxTimestamp - batch.baseTimestamp), records: batch.recordsCount });
        offset = batch.lastOffset + 1n;
      }
    }
  }
  return lags;
}

function weightedPercentile(samples: readonly { lagMs: number; records: number }[], q: number): number {
  const sorted = [...samples].sort((a, b) => a.lagMs - b.lagMs);
  const total = sorted.reduce((n, s) => n + s.records, 0);
  let seen = 0;
  for (const s of sorted) {
    seen += s.records;
    if (seen >= q * total) return s.lagMs;
  }
  return sorted.at(-1)?.lagMs ?? Number.NaN;
}

try {
  note(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${Math.round(totalmem() / 2 ** 30)} GiB; Node ${process.version}; Kafka ${KAFKA_VERSION}`);
  note(`volume: ${records} records × ${recordBytes} B = ${round1((records * recordBytes) / 2 ** 20)} MiB over ${partitionCount} partitions, compression ${compression}; ${rounds} round(s)`);

  const ratios: number[] = [];
  const kmirrorRates: number[] = [];
  const mm2Rates: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const topic = `${run}-${r}`;
    await createTopic(sourceAdmin, topic);
    const fill = await producerPerformance({ propertiesFile: sourceProps, topic, records, recordSize: recordBytes, extra: { ...compressed, 'batch.size': sourceBatchBytes } });
    note(`round ${r + 1}: filled ${topic} at ${fill.mbPerSec} MiB/s, ${await headBatchRecords(topic)} records per batch`);
    if (r === 0) {
      result('source_fill_producer', fill.mbPerSec, 'MiB/s');
      const consumer = await consumerPerformance({ connection: sourceConnection, propertiesFile: sourceProps, topic, records });
      result('ceiling_consumer_source', consumer.fetchMbPerSec, 'MiB/s');
      const scratch = `${run}-ceiling`;
      await createTopic(destAdmin, scratch);
      const producer = await producerPerformance({ propertiesFile: destProps, topic: scratch, records, recordSize: recordBytes, extra: compressed });
      result('ceiling_producer_dest', producer.mbPerSec, 'MiB/s');
      await deleteTopic(destAdmin, scratch);
    }
    // Alternate which tool goes first: the page cache and the brokers warm up over a run.
    const order: ('kmirror' | 'mm2')[] = r % 2 === 0 ? ['mm2', 'kmirror'] : ['kmirror', 'mm2'];
    const rates: Record<string, number> = {};
    for (const tool of order) rates[tool] = await measureMirror(tool, topic);
    kmirrorRates.push(rates.kmirror!);
    mm2Rates.push(rates.mm2!);
    ratios.push(rates.kmirror! / rates.mm2!);
    await deleteTopic(sourceAdmin, topic);
  }
  result('mm2', median(mm2Rates), 'MiB/s');
  result('kmirror', median(kmirrorRates), 'MiB/s');

  if (!values['skip-lag']) {
    const seconds = Number(values['lag-seconds']);
    const rate = Math.round((Number(values['lag-mib-per-s']) * 2 ** 20) / recordBytes);
    const topic = `${run}-lag`;
    await createTopic(sourceAdmin, topic);
    await createTopic(destAdmin, topic, { 'message.timestamp.type': 'LogAppendTime' });
    const child = startKmirror(topic, false);
    await child.started;
    await sleep(2_000); // lease acquired, first (empty) fetch issued
    const steady = await producerPerformance({
      propertiesFile: sourceProps,
      topic,
      records: rate * seconds,
      recordSize: recordBytes,
      throughputRecordsPerSec: rate,
      extra: { 'linger.ms': '1', 'batch.size': '65536', ...compressed },
    });
    try {
      await watchDestination(topic, BigInt(rate * seconds), 120_000);
    } catch (err) {
      process.kill(child.pid, 'SIGTERM');
      const exit = await child.done;
      throw new Error(`${(err as Error).message}; the copier printed ${JSON.stringify(exit.events)} ${exit.stderr.slice(-2000)}`, { cause: err });
    }
    await finishKmirror(child, { terminate: true });
    const lags = await batchLags(topic);
    note(`lag: ${lags.length} destination batches, source produce p99 ${steady.p99Ms} ms at ${steady.mbPerSec} MiB/s`);
    result('lag_rate', steady.mbPerSec, 'MiB/s');
    result('lag_source_produce_p99', steady.p99Ms, 'ms');
    result('lag_p50', weightedPercentile(lags, 0.5), 'ms');
    result('lag_p99', weightedPercentile(lags, 0.99), 'ms');
    result('lag_max', Math.max(...lags.map((l) => l.lagMs)), 'ms');
  }
  result('kmirror_vs_mm2', Math.round(median(ratios) * 100) / 100);
} finally {
  for (const { admin, topic } of [...created].reverse()) await deleteTopic(admin, topic).catch(() => undefined);
  await deleteMirrorMakerTopics().catch(() => undefined);
  await Promise.all([source.close(), dest.close(), sourceAdmin.disconnect(), destAdmin.disconnect()]);
}
