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
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { deleteTopicsAndWait } from '../kafka/admin.ts';
import { IsolationLevel } from '../kafka/protocol.ts';
import { KAFKA_VERSION } from '../scripts/stack/topology.ts';
import { clientProperties, consumerPerformance, producerPerformance, startMirrorMaker } from './support/kafka-tools.ts';
import {
  checkEndOffsets,
  fillTopic,
  finishCopier,
  headBatchRecords,
  median,
  mibPerS,
  migrateStackDatabase,
  note,
  openClusters,
  result,
  round1,
  stackUp,
  startCopier,
  watchDestination,
  type CopierSettings,
} from './support/mirroring.ts';

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
const partitions = Array.from({ length: partitionCount }, (_, i) => i);
/** compression.type of every producer: the fill, the destination ceiling and MirrorMaker's (so
 *  it writes batches compressed as the source has them; kmirror copies them as they are). */
const compression = values.compression!;
if (!['none', 'gzip', 'snappy', 'lz4', 'zstd'].includes(compression)) throw new Error(`--compression must be none, gzip, snappy, lz4 or zstd, got ${compression}`);
const compressed = { 'compression.type': compression };
/** batch.size of the fill's producer: kmirror copies the source's batches, so their size matters. */
const sourceBatchBytes = values['source-batch-bytes']!;
/** kmirror's copier process: a 64 MiB byte budget (bytes fetched, not yet acknowledged by the
 *  destination) shared by its copiers, larger fetches than the copier's defaults. */
const kmirror: CopierSettings = {
  budgetBytes: 64 * 2 ** 20,
  copiers: Number(values['kmirror-copiers']),
  sessionPerCopier: values['kmirror-session-per-copier'],
  options: { fetchMaxBytes: 16 * 2 ** 20, partitionMaxBytes: 2 * 2 ** 20 },
};

stackUp();
const clusters = await openClusters();
const { sourceConnection, destConnection, source, dest, sourceAdmin, destAdmin } = clusters;
await migrateStackDatabase();

const sourceProps = clientProperties('source', sourceConnection);
const destProps = clientProperties('dest', destConnection);
const run = `bench.throughput-${Date.now().toString(36)}`;
const createTopic = (admin: typeof sourceAdmin, topic: string, configs: Record<string, string> = {}): Promise<void> => clusters.createTopic(admin, topic, partitionCount, configs);
const deleteTopic = (admin: typeof sourceAdmin, topic: string): Promise<void> => clusters.deleteTopic(admin, topic);

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
    const child = startCopier(topic, partitions, true, kmirror);
    stop = () => finishCopier(child, { terminate: false, budgetBytes: kmirror.budgetBytes });
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
    const { activeMs, wallMs } = await watchDestination(dest, topic, partitions, BigInt(records));
    const rate = mibPerS(records * recordBytes, activeMs);
    note(`${tool}: ${records} records in ${Math.round(activeMs)} ms from the first arrival (${Math.round(wallMs)} ms from start) = ${rate} MiB/s`);
    if (tool === 'kmirror') await checkEndOffsets(clusters, 'kmirror', topic, partitions);
    return rate;
  } finally {
    await stop();
    await deleteTopic(destAdmin, topic);
  }
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
    const fill = await fillTopic({ propertiesFile: sourceProps, topic, records, recordBytes, compression, batchBytes: sourceBatchBytes });
    note(`round ${r + 1}: filled ${topic} at ${fill.mbPerSec} MiB/s, ${await headBatchRecords(source, topic)} records per batch`);
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
    const child = startCopier(topic, partitions, false, kmirror);
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
      await watchDestination(dest, topic, partitions, BigInt(rate * seconds), 120_000);
    } catch (err) {
      process.kill(child.pid, 'SIGTERM');
      const exit = await child.done;
      throw new Error(`${(err as Error).message}; the copier printed ${JSON.stringify(exit.events)} ${exit.stderr.slice(-2000)}`, { cause: err });
    }
    await finishCopier(child, { terminate: true, budgetBytes: kmirror.budgetBytes });
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
  await deleteMirrorMakerTopics().catch(() => undefined);
  await clusters.close();
}
