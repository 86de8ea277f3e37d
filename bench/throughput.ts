// Benchmark "throughput": kmirror's copier against MirrorMaker 2 tuned as a capable operator would,
// and the raw ceilings, in one run on the local stack (source PLAINTEXT, destination
// SASL_PLAINTEXT; both on this machine).
//
//  1. fill: for each source profile — `default` (the Java producer's default batching: 16 KiB
//     batches, linger 5 ms; the headline) and `large` (256 KiB batches) — a source topic of P
//     partitions with N bytes of R-byte records (ProducerPerformance);
//  2. ceilings (once): ConsumerPerformance reading the topic from the source, ProducerPerformance
//     writing the same volume into a scratch topic of the destination;
//  3. mirrors: kmirror (scripts/copy-topic.ts in its own process) and MirrorMaker 2 (dedicated
//     mode, IdentityReplicationPolicy, tunedMirrorMaker settings, tasks.max of each --mm2-tasks)
//     each copy the topic into a fresh same-named destination topic, in an order that alternates
//     every round, measured the same way from outside: the destination's end offsets are polled
//     every 50 ms; throughput = bytes ÷ (all copied − first record arrived), so neither tool's
//     start-up (JVM, connector rebalance, connections) counts; CPU seconds of the tool's process
//     and of the destination broker over the same window (from /proc). MirrorMaker's logged client
//     configs are checked against every override; kmirror's copy is verified record by record.
//  4. lag (unless --skip-lag): kmirror and MirrorMaker 2 (the first --mm2-tasks setting), each
//     started and warmed up (a record in every partition mirrored), while ProducerPerformance
//     writes --lag-mib-per-s into a new topic whose destination twin has
//     message.timestamp.type=LogAppendTime: each destination batch then carries the timestamp of
//     its first record as the source holds it (firstTimestamp, kept by both tools) and the
//     destination's append time (maxTimestamp), so lag = destination append − source timestamp.
//     Twice: with a CreateTime source (lag from the record's creation: the producer's linger and
//     the source's append are in it, as in MirrorMaker's record-age-ms) and with a LogAppendTime
//     source (lag from the source's append: the mirror's own). Percentiles over the batches after
//     the first --lag-warmup-seconds of the load, and over all of them (`_with_warmup`).
//
//   npm run bench -- throughput [--mib 1024] [--record-bytes 1024] [--partitions 12] [--rounds 4]
//        [--profiles default,large|none] [--mm2-tasks 1,2] [--kmirror-copiers 3] [--lag-seconds 30]
//        [--lag-warmup-seconds 5] [--lag-mib-per-s 20] [--skip-lag] [--skip-verify] [--compression none|gzip|snappy|lz4|zstd]
//
// Prints RESULT lines per profile (`<profile>_kmirror`, `<profile>_mm2_t<N>` medians and ranges,
// CPU-s/GiB, `<profile>_kmirror_vs_mm2`: the median over rounds of kmirror ÷ the best MirrorMaker
// setting of that round's run); the last is RESULT kmirror_vs_mm2=<ratio> of the first profile.
import { cpus, totalmem } from 'node:os';
import { benchArgs, usageError } from './support/args.ts';
import { deleteTopicsAndWait } from '../kafka/admin.ts';
import { KAFKA_VERSION } from '../scripts/stack/topology.ts';
import { verifyPartition } from '../kafka/verify.ts';
import { brokerPids, clientProperties } from '../scripts/stack/kafka.ts';
import { consumerPerformance, deleteMirrorMakerTopics, producerPerformance, startMirrorMaker, tunedMirrorMaker, tunedMirrorMakerProperties, type MirrorMakerHandle, type ProducerPerfResult } from './support/kafka-tools.ts';
import {
  batchLags,
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
  round2,
  stackUp,
  startCopier,
  watchDestination,
  summarizeLags,
  type CopierSettings,
  type LagSummary,
} from './support/mirroring.ts';

const { values } = benchArgs(import.meta.url, {
  options: {
    mib: { type: 'string', default: '1024' },
    'record-bytes': { type: 'string', default: '1024' },
    partitions: { type: 'string', default: '12' },
    rounds: { type: 'string', default: '4' },
    profiles: { type: 'string', default: 'default,large' },
    'mm2-tasks': { type: 'string', default: '1,2' },
    'kmirror-copiers': { type: 'string', default: '3' },
    'lag-seconds': { type: 'string', default: '30' },
    'lag-warmup-seconds': { type: 'string', default: '5' },
    'lag-mib-per-s': { type: 'string', default: '20' },
    'skip-lag': { type: 'boolean', default: false },
    'skip-verify': { type: 'boolean', default: false },
    compression: { type: 'string', default: 'none' },
  },
});
const recordBytes = Number(values['record-bytes']);
const totalBytes = Number(values.mib) * 2 ** 20;
const records = Math.floor(totalBytes / recordBytes);
const partitionCount = Number(values.partitions);
const rounds = Number(values.rounds);
if (rounds % 2 !== 0) usageError(import.meta.url, `--rounds must be even (the order alternates), got ${rounds}`);
const mm2Tasks = values['mm2-tasks']!.split(',').map(Number);
const lagSeconds = Number(values['lag-seconds']);
const lagWarmupSeconds = Number(values['lag-warmup-seconds']);
/** batch.size of the fill's producer per profile (linger.ms 5, the Java default, in both). */
const profileBatchBytes: Readonly<Record<string, string>> = { default: '16384', large: '262144' };
/** `none`: the lag runs only. */
const profiles = values.profiles === 'none' ? [] : values.profiles!.split(',');
for (const p of profiles) if (profileBatchBytes[p] === undefined) usageError(import.meta.url, `--profiles takes default and/or large, got ${p}`);
const partitions = Array.from({ length: partitionCount }, (_, i) => i);
/** compression.type of every producer: the fill, the destination ceiling and MirrorMaker's (so
 *  it writes batches compressed as the source has them; kmirror copies them as they are). */
const compression = values.compression!;
if (!['none', 'gzip', 'snappy', 'lz4', 'zstd'].includes(compression)) usageError(import.meta.url, `--compression must be none, gzip, snappy, lz4 or zstd, got ${compression}`);
const compressed = { 'compression.type': compression };
/** kmirror's copier process: a 64 MiB byte budget (bytes fetched, not yet acknowledged by the
 *  destination) shared by its copiers, larger fetches than the copier's defaults. */
const kmirror: CopierSettings = {
  budgetBytes: 64 * 2 ** 20,
  copiers: Number(values['kmirror-copiers']),
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

type Tool = 'kmirror' | `mm2_t${number}`;

/** Every override in `wanted` has the value MirrorMaker logged (else throws: the run would be unfair). */
function checkOverrides(client: string, logged: Record<string, string> | undefined, wanted: Record<string, string>): string {
  if (logged === undefined) throw new Error(`MirrorMaker logged no config of its replication ${client}`);
  const wrong = Object.entries(wanted).filter(([k, v]) => logged[k] !== v);
  if (wrong.length > 0) throw new Error(`MirrorMaker's ${client} did not take ${wrong.map(([k, v]) => `${k}=${v} (logged ${logged[k]})`).join(', ')}`);
  return Object.keys(wanted)
    .map((k) => `${k}=${logged[k]}`)
    .join(' ');
}

interface Measured {
  readonly mibPerS: number;
  /** CPU seconds per GiB copied: the tool's process, and the destination broker's. */
  readonly toolCpuPerGiB: number;
  readonly brokerCpuPerGiB: number;
}

/** A mirroring tool running on `topic`: its process, what it reports as failed (MirrorMaker's
 *  connector), and how to stop it (MirrorMaker's internal topics deleted with it). */
interface RunningTool {
  readonly pid: number;
  /** kmirror: resolves once the copier runs; MirrorMaker: at once (its records tell). */
  readonly started: Promise<void>;
  readonly mm2?: MirrorMakerHandle;
  readonly failed: () => string | undefined;
  stop(): Promise<void>;
}

/** Start `tool` on `topic`; MirrorMaker with the tuned settings plus `mm2Extra`. */
function startTool(tool: Tool, topic: string, mm2Extra: Record<string, string> = {}): RunningTool {
  if (tool === 'kmirror') {
    const child = startCopier([topic], partitions, false, kmirror);
    return { pid: child.pid, started: child.started, failed: () => undefined, stop: () => finishCopier(child, { terminate: true, budgetBytes: kmirror.budgetBytes }) };
  }
  const mm2 = startMirrorMaker({
    source: sourceConnection,
    destination: destConnection,
    topicsRegex: topic.replaceAll('.', '\\.'),
    tasks: Number(tool.slice('mm2_t'.length)),
    extra: { ...tunedMirrorMakerProperties(compression), ...mm2Extra },
  });
  return {
    pid: mm2.pid,
    started: Promise.resolve(),
    mm2,
    failed: mm2.sourceConnectorError,
    async stop() {
      await mm2.stop();
      await deleteMirrorMakerTopics([sourceAdmin, destAdmin]);
    },
  };
}

async function measureMirror(tool: Tool, topic: string): Promise<Measured> {
  await createTopic(destAdmin, topic);
  // kmirror is kept running like MirrorMaker (its CPU is read when the last record has arrived), then stopped.
  const { pid, mm2, failed, stop } = startTool(tool, topic);
  try {
    const [broker] = brokerPids('dest');
    const watched = await watchDestination(dest, topic, partitions, BigInt(records), {
      cpuOf: { tool: pid, ...(broker === undefined ? {} : { broker }) },
      failed,
    });
    const gib = (records * recordBytes) / 2 ** 30;
    const measured: Measured = {
      mibPerS: mibPerS(records * recordBytes, watched.activeMs),
      toolCpuPerGiB: round2(watched.cpuSeconds.tool! / gib),
      brokerCpuPerGiB: round2((watched.cpuSeconds.broker ?? Number.NaN) / gib),
    };
    note(
      `${tool}: ${records} records in ${Math.round(watched.activeMs)} ms from the first arrival (${Math.round(watched.wallMs)} ms from start) = ${measured.mibPerS} MiB/s; ` +
        `CPU ${measured.toolCpuPerGiB} s/GiB, of which kernel ${round2(watched.cpuSeconds['tool.system']! / gib)} (destination broker ${measured.brokerCpuPerGiB} s/GiB)`,
    );
    if (mm2 !== undefined) {
      const logged = mm2.loggedConfigs();
      note(`${tool} producer took: ${checkOverrides('producer', logged.producer, { ...tunedMirrorMaker.producer, 'compression.type': compression })}`);
      note(`${tool} consumer took: ${checkOverrides('consumer', logged.consumer, tunedMirrorMaker.consumer)}`);
    } else {
      await checkEndOffsets(clusters, 'kmirror', topic, partitions);
      if (!values['skip-verify']) {
        const t0 = performance.now();
        const verified = await Promise.all(partitions.map((p) => verifyPartition(source, dest, topic, p)));
        const unequal = verified.filter((v) => !v.equal);
        if (unequal.length > 0) throw new Error(`kmirror: ${topic} differs from the source: ${JSON.stringify(unequal[0])}`);
        note(`kmirror: verified ${verified.reduce((n, v) => n + v.recordsCompared, 0)} records one by one in ${Math.round(performance.now() - t0)} ms: equal`);
      }
    }
    return measured;
  } finally {
    await stop();
    await deleteTopic(destAdmin, topic);
  }
}

/**
 * Lag of `tool` while ProducerPerformance writes --lag-mib-per-s into a new topic (source
 * message.timestamp.type `timestamps`, destination LogAppendTime: see batchLags): the tool is
 * started and a first record in every partition mirrored before the load begins (start-up is not
 * lag), then the load runs --lag-warmup-seconds + --lag-seconds (summarizeLags: the headline
 * percentiles leave the warm-up out).
 */
async function measureLag(tool: Tool, timestamps: 'CreateTime' | 'LogAppendTime'): Promise<{ lag: LagSummary; producer: ProducerPerfResult }> {
  const topic = `${run}-lag-${tool}-${timestamps}`;
  await createTopic(sourceAdmin, topic, { 'message.timestamp.type': timestamps });
  await createTopic(destAdmin, topic, { 'message.timestamp.type': 'LogAppendTime' });
  // The destination topic exists with LogAppendTime; keep MirrorMaker from syncing configs.
  const { started, failed, stop } = startTool(tool, topic, { 'sync.topic.configs.enabled': 'false' });
  await started;
  try {
    const warmUp = clusters.sourceKafka.producer();
    await warmUp.connect();
    await warmUp.send({ topic, messages: partitions.map((partition) => ({ partition, value: 'warm-up' })) });
    await warmUp.disconnect();
    await watchDestination(dest, topic, partitions, BigInt(partitionCount), { timeoutMs: 120_000, failed });
    const seconds = lagWarmupSeconds + lagSeconds;
    const rate = Math.round((Number(values['lag-mib-per-s']) * 2 ** 20) / recordBytes);
    const loadStart = Date.now();
    const producer = await producerPerformance({
      propertiesFile: sourceProps,
      topic,
      records: rate * seconds,
      recordSize: recordBytes,
      throughputRecordsPerSec: rate,
      extra: { 'linger.ms': '1', 'batch.size': '65536', ...compressed },
    });
    await watchDestination(dest, topic, partitions, BigInt(partitionCount + rate * seconds), { timeoutMs: 120_000, failed });
    return { lag: summarizeLags(await batchLags(dest, topic, partitions, 1n), loadStart + lagWarmupSeconds * 1000), producer };
  } finally {
    await stop();
    await deleteTopic(destAdmin, topic);
    await deleteTopic(sourceAdmin, topic);
  }
}

try {
  note(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${Math.round(totalmem() / 2 ** 30)} GiB; Node ${process.version}; Kafka ${KAFKA_VERSION}`);
  note(`volume: ${records} records × ${recordBytes} B = ${round1((records * recordBytes) / 2 ** 20)} MiB over ${partitionCount} partitions, compression ${compression}; profiles ${profiles.join(', ')}; ${rounds} rounds each; MirrorMaker tasks.max ${mm2Tasks.join(', ')}`);

  const tools: Tool[] = ['kmirror', ...mm2Tasks.map((t): Tool => `mm2_t${t}`)];
  const headline: number[] = [];
  for (const [i, profile] of profiles.entries()) {
    const runs = new Map<Tool, Measured[]>(tools.map((t) => [t, []]));
    const ratios: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const topic = `${run}-${profile}-${r}`;
      await createTopic(sourceAdmin, topic);
      const fill = await fillTopic({ propertiesFile: sourceProps, topic, records, recordBytes, compression, batchBytes: profileBatchBytes[profile]! });
      note(`${profile} round ${r + 1}: filled ${topic} at ${fill.mbPerSec} MiB/s, ${await headBatchRecords(source, topic)} records per batch`);
      if (i === 0 && r === 0) {
        const consumer = await consumerPerformance({ connection: sourceConnection, propertiesFile: sourceProps, topic, records });
        result('ceiling_consumer_source', consumer.fetchMbPerSec, 'MiB/s');
        const scratch = `${run}-ceiling`;
        await createTopic(destAdmin, scratch);
        const producer = await producerPerformance({ propertiesFile: destProps, topic: scratch, records, recordSize: recordBytes, extra: compressed });
        result('ceiling_producer_dest', producer.mbPerSec, 'MiB/s');
        await deleteTopic(destAdmin, scratch);
      }
      // Alternate the order: the page cache and the brokers warm up over a run.
      const order = r % 2 === 0 ? tools : [...tools].reverse();
      for (const tool of order) runs.get(tool)!.push(await measureMirror(tool, topic));
      const best = Math.max(...tools.filter((t) => t !== 'kmirror').map((t) => runs.get(t)![r]!.mibPerS));
      ratios.push(runs.get('kmirror')![r]!.mibPerS / best);
      await deleteTopic(sourceAdmin, topic);
    }
    for (const tool of tools) {
      const m = runs.get(tool)!;
      const rates = m.map((x) => x.mibPerS);
      result(`${profile}_${tool}`, round1(median(rates)), 'MiB/s');
      result(`${profile}_${tool}_range`, `${Math.min(...rates)}-${Math.max(...rates)}`, 'MiB/s');
      result(`${profile}_${tool}_cpu_per_gib`, round2(median(m.map((x) => x.toolCpuPerGiB))), 'CPU-s/GiB');
      result(`${profile}_${tool}_with_broker_cpu_per_gib`, round2(median(m.map((x) => x.toolCpuPerGiB + x.brokerCpuPerGiB))), 'CPU-s/GiB');
    }
    const ratio = round2(median(ratios));
    result(`${profile}_kmirror_vs_mm2`, ratio);
    result(`${profile}_kmirror_vs_mm2_range`, `${round2(Math.min(...ratios))}-${round2(Math.max(...ratios))}`);
    headline.push(ratio);
  }

  if (!values['skip-lag']) {
    // kmirror and MirrorMaker with the first --mm2-tasks setting, lag from creation and from the
    // source's append, the order alternating.
    const lagTools: Tool[] = ['kmirror', `mm2_t${mm2Tasks[0]!}`];
    for (const [i, timestamps] of (['CreateTime', 'LogAppendTime'] as const).entries()) {
      for (const tool of i % 2 === 0 ? lagTools : [...lagTools].reverse()) {
        const { lag, producer } = await measureLag(tool, timestamps);
        const name = `lag_${timestamps === 'CreateTime' ? 'from_creation' : 'from_source_append'}_${tool}`;
        note(`${name}: ${lag.batches} destination batches (${lag.steadyBatches} after the warm-up), source producer p99 ${producer.p99Ms} ms at ${producer.mbPerSec} MiB/s`);
        result(`${name}_rate`, producer.mbPerSec, 'MiB/s');
        result(`${name}_source_produce_p99`, producer.p99Ms, 'ms');
        result(`${name}_p50`, lag.p50, 'ms');
        result(`${name}_p99`, lag.p99, 'ms');
        result(`${name}_max`, lag.max, 'ms');
        result(`${name}_p99_with_warmup`, lag.p99WithWarmup, 'ms');
      }
    }
  }
  if (headline.length > 0) result('kmirror_vs_mm2', headline[0]!);
} finally {
  await deleteMirrorMakerTopics([sourceAdmin, destAdmin]).catch(() => undefined);
  await clusters.close();
}
