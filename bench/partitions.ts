// Benchmark "partitions": mirroring lag with many partitions — kmirror against MirrorMaker 2 tuned
// as in bench/throughput.ts, in one run on the local stack (source PLAINTEXT, destination
// SASL_PLAINTEXT; both on this machine).
//
// Per round and tool (the order alternates every round; each tool gets topics of its own):
//  0. wait until the stack is idle (the previous run's deleted partition directories removed, the
//     brokers quiet: bench/support/mirroring.ts settleStack), noted with the time it took;
//  1. T source topics × P partitions (message.timestamp.type --source-timestamps), and their
//     destination twins with message.timestamp.type=LogAppendTime (created in requests as the
//     product makes them);
//  2. the tool started: kmirror's copier process over every partition (scripts/copy-topic.ts), or
//     MirrorMaker 2 (dedicated mode, tasks.max --mm2-tasks, topics by regex);
//  3. warm-up: one record into every partition, and a wait until all are on the destination (so
//     the tool's start-up — MirrorMaker's connector rebalance, kmirror's leases — is not lag);
//  4. a librdkafka producer (bench/support/steady-producer.py: 16 KiB batches, linger --linger-ms)
//     writes R MiB/s in total, dealt round-robin over every partition, for --warmup-seconds + S
//     seconds (the lag percentiles leave the warm-up out, and report p99 with it too). Linger 50 ms
//     by default: with 5 ms the producer alone reached only 7 MiB/s into 2,000 partitions on this
//     2-core machine (batches of ~1 record swamp the source broker), with 50 ms 19.6 MiB/s;
//  5. once every record is on the destination: the lag of every destination batch after the
//     warm-up (append time on the destination − the timestamp of its first record as the source
//     holds it, batchLags), weighted by records; CPU seconds of the tool's process, of the
//     destination broker and of the source broker (which also takes the producer's writes) per GiB
//     over steps 4–5 (from /proc). Which lag that is depends on the source topics' timestamps:
//     - CreateTime (the default): lag from the record's creation, so the producer's linger and the
//       source's append are in it, for both tools alike (the producer's own produce → acknowledged
//       latency is reported beside it) — what MirrorMaker's record-age-ms measures;
//     - LogAppendTime: lag from the source's append, the mirror's own part. Both tools carry the
//       source's append time as the record timestamp (kmirror re-encodes such batches with it,
//       MirrorMaker produces what its consumer read), so the same batch arithmetic applies.
//
//   npm run bench -- partitions [--topics 200] [--partitions-per-topic 10] [--mib-per-s 20]
//        [--seconds 60] [--warmup-seconds 5] [--record-bytes 1024] [--linger-ms 50] [--rounds 2] [--mm2-tasks 2] [--kmirror-copiers 3]
//        [--tools kmirror,mm2]   (also kmirror-b: the copier with --kmirror-b-options, for an A/B)
//        [--kmirror-b-options JSON]   copy options of kmirror-b over the defaults, e.g. '{"fetchSessions":false}'
//        [--source-timestamps CreateTime|LogAppendTime]
//   The 12-partition lag of issue #12: --topics 1 --partitions-per-topic 12 --linger-ms 1 --seconds 30
//
// Prints RESULT lines per tool (`<tool>_lag_p50`, `_p99`, `_max`, `_cpu_per_gib`,
// `_with_broker_cpu_per_gib`, `_source_broker_cpu_per_gib`, medians over rounds) and last RESULT kmirror_lag_p99=<ms>.
import { spawn } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { benchArgs, usageError } from './support/args.ts';
import { createTopicsAndWait, deleteTopicsAndWait } from '../kafka/admin.ts';
import { createBatches } from '../kafka/mirror-topics.ts';
import { defaultCopyOptions, type CopyOptions } from '../kafka/copier.ts';
import { brokerPids } from '../scripts/stack/kafka.ts';
import { ensureConfluentKafka } from '../scripts/stack/python.ts';
import { KAFKA_VERSION } from '../scripts/stack/topology.ts';
import { deleteMirrorMakerTopics, startMirrorMaker, tunedMirrorMakerProperties, type MirrorMakerHandle } from './support/kafka-tools.ts';
import {
  batchLags,
  worstSeconds,
  finishCopier,
  median,
  migrateStackDatabase,
  note,
  openClusters,
  range,
  result,
  round1,
  round2,
  settleStack,
  stackUp,
  startCopier,
  sum,
  summarizeLags,
  type BatchLag,
  type CopierSettings,
} from './support/mirroring.ts';
import { cpuSeconds } from './support/proc-cpu.ts';

const { values } = benchArgs(import.meta.url, {
  options: {
    topics: { type: 'string', default: '200' },
    'partitions-per-topic': { type: 'string', default: '10' },
    'mib-per-s': { type: 'string', default: '20' },
    seconds: { type: 'string', default: '60' },
    'warmup-seconds': { type: 'string', default: '5' },
    'record-bytes': { type: 'string', default: '1024' },
    'linger-ms': { type: 'string', default: '50' },
    rounds: { type: 'string', default: '2' },
    'mm2-tasks': { type: 'string', default: '2' },
    'kmirror-copiers': { type: 'string', default: '3' },
    tools: { type: 'string', default: 'kmirror,mm2' },
    'kmirror-b-options': { type: 'string', default: '{}' },
    'source-timestamps': { type: 'string', default: 'CreateTime' },
  },
});
const topicCount = Number(values.topics);
const partitionCount = Number(values['partitions-per-topic']);
const recordBytes = Number(values['record-bytes']);
const seconds = Number(values.seconds);
const recordsPerSec = Math.round((Number(values['mib-per-s']) * 2 ** 20) / recordBytes);
const rounds = Number(values.rounds);
if (rounds % 2 !== 0) usageError(import.meta.url, `--rounds must be even (the order alternates), got ${rounds}`);
const mm2Tasks = Number(values['mm2-tasks']);
const sourceTimestamps = values['source-timestamps']!;
if (!['CreateTime', 'LogAppendTime'].includes(sourceTimestamps)) usageError(import.meta.url, `--source-timestamps must be CreateTime or LogAppendTime, got ${sourceTimestamps}`);
const partitions = range(partitionCount);
const totalPartitions = topicCount * partitionCount;
const warmupSeconds = Number(values['warmup-seconds']);
/** Records of the load: the warm-up's and the measured seconds'. */
const loadRecords = recordsPerSec * (warmupSeconds + seconds);
/** The copier process as in bench/throughput.ts, with the product's default fetch sizes. */
const kmirror: CopierSettings = { budgetBytes: 64 * 2 ** 20, copiers: Number(values['kmirror-copiers']) };
const kmirrorB: CopierSettings = { ...kmirror, options: parseCopyOptions(values['kmirror-b-options']!) };
const steadyProducer = fileURLToPath(new URL('./support/steady-producer.py', import.meta.url));

/** --kmirror-b-options: a JSON object of known copy options with values of the defaults' types. */
function parseCopyOptions(text: string): Partial<CopyOptions> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    usageError(import.meta.url, `--kmirror-b-options: not JSON: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) usageError(import.meta.url, '--kmirror-b-options: must be a JSON object');
  for (const [key, value] of Object.entries(parsed)) {
    if (!(key in defaultCopyOptions)) usageError(import.meta.url, `--kmirror-b-options: unknown copy option '${key}' (one of ${Object.keys(defaultCopyOptions).join(', ')})`);
    if (typeof value !== typeof defaultCopyOptions[key as keyof CopyOptions]) usageError(import.meta.url, `--kmirror-b-options: ${key} must be a ${typeof defaultCopyOptions[key as keyof CopyOptions]}`);
  }
  return parsed as Partial<CopyOptions>;
}

stackUp();
const clusters = await openClusters();
const { sourceConnection, destConnection, dest, sourceAdmin, destAdmin } = clusters;
await migrateStackDatabase();
const python = ensureConfluentKafka((line) => note(line));
const run = `bench.partitions-${Date.now().toString(36)}`;

/** kmirror-b: the copier with --kmirror-b-options over the defaults, for an A/B against kmirror. */
const TOOLS = ['kmirror', 'kmirror-b', 'mm2'] as const;
type Tool = (typeof TOOLS)[number];
const tools = values.tools.split(',').map((t) => {
  if (!(TOOLS as readonly string[]).includes(t)) usageError(import.meta.url, `--tools: unknown tool '${t}' (one of ${TOOLS.join(', ')})`);
  return t as Tool;
});

/** steady-producer.py with `seconds` (0: one record per partition); resolves with its summary. */
interface Produced {
  readonly records: number;
  readonly seconds: number;
  readonly mibPerSec: number;
  /** produce() to the source's acknowledgement: the source's own part of the measured lag. */
  readonly latencyP50Ms: number;
  readonly latencyP99Ms: number;
}

function produce(topics: readonly string[], produceSeconds: number): Promise<Produced> {
  const args = { bootstrap: sourceConnection.bootstrap.join(','), topics, partitions: partitionCount, recordBytes, recordsPerSec, seconds: produceSeconds, lingerMs: Number(values['linger-ms']) };
  const child = spawn(python, [steadyProducer, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4_000)));
  return new Promise((resolve, reject) => {
    child.on('close', (code) => {
      if (code === 0) resolve(JSON.parse(out.trim().split('\n').at(-1)!) as Produced);
      else reject(new Error(`steady-producer.py exited with ${code}: ${err}`));
    });
  });
}

/** Records on the destination over all `topics`. */
async function destinationRecords(topics: readonly string[]): Promise<bigint> {
  let total = 0n;
  for (const topic of topics) total += sum(await dest.listOffsets(topic, partitions, 'latest'));
  return total;
}

/** Poll (every 250 ms) until the destination holds `expected` records, or fail after `timeoutMs`. */
async function awaitDestination(topics: readonly string[], expected: bigint, timeoutMs: number, failed: () => string | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const have = await destinationRecords(topics).catch((err: unknown) => {
      if ((err as { retriable?: boolean }).retriable) return 0n;
      throw err;
    });
    if (have >= expected) return;
    const failure = failed();
    if (failure !== undefined) throw new Error(`the mirroring process failed: ${failure}`);
    if (Date.now() > deadline) throw new Error(`only ${have} of ${expected} records reached the destination in ${timeoutMs} ms`);
    await sleep(250);
  }
}

interface Measured {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly p99WithWarmup: number;
  readonly sourceP99: number;
  readonly toolCpuPerGiB: number;
  readonly brokerCpuPerGiB: number;
  /** The source broker's: the producer's writes (the same for both tools) plus the tool's fetches. */
  readonly sourceBrokerCpuPerGiB: number;
}

async function measure(tool: Tool, r: number): Promise<Measured> {
  // Each tool starts on an idle stack: the previous run's 2 × 2,000 deleted partition directories
  // removed and the brokers quiet (bench/support/mirroring.ts settleStack).
  const settled = await settleStack();
  note(`${tool} round ${r + 1}: the stack ${settled.settled ? 'settled' : 'did NOT settle'} in ${round1(settled.waitedMs / 1000)} s before the run`);
  const prefix = `${run}-${tool}-${r}`;
  const topics = range(topicCount).map((i) => `${prefix}-${String(i).padStart(4, '0')}`);
  const specs = (configs: Record<string, string>) => topics.map((topic) => ({ topic, partitions: partitionCount, replicationFactor: 1, configs }));
  for (const batch of createBatches(specs({ 'message.timestamp.type': sourceTimestamps }))) await createTopicsAndWait(sourceAdmin, batch);
  for (const batch of createBatches(specs({ 'message.timestamp.type': 'LogAppendTime' }))) await createTopicsAndWait(destAdmin, batch);
  let pid: number;
  let stop: () => Promise<void>;
  let failed: () => string | undefined = () => undefined;
  if (tool !== 'mm2') {
    const child = startCopier(topics, partitions, false, tool === 'kmirror' ? kmirror : kmirrorB);
    await child.started;
    pid = child.pid;
    stop = () => finishCopier(child, { terminate: true, budgetBytes: kmirror.budgetBytes });
  } else {
    const mm2: MirrorMakerHandle = startMirrorMaker({
      source: sourceConnection,
      destination: destConnection,
      topicsRegex: `${prefix.replaceAll('.', '\\.')}-.*`,
      tasks: mm2Tasks,
      // The destination topics exist with LogAppendTime; keep MirrorMaker from syncing configs.
      extra: { ...tunedMirrorMakerProperties('none'), 'sync.topic.configs.enabled': 'false' },
    });
    pid = mm2.pid;
    failed = mm2.sourceConnectorError;
    stop = () => mm2.stop();
  }
  try {
    const warmStart = Date.now();
    await produce(topics, 0);
    await awaitDestination(topics, BigInt(totalPartitions), 300_000, failed);
    note(`${tool} round ${r + 1}: ${topicCount} topics × ${partitionCount} partitions; warm-up record in every partition mirrored ${Date.now() - warmStart} ms after it was written`);
    const [broker] = brokerPids('dest');
    const [sourceBroker] = brokerPids('source');
    const cpu = () => ({
      tool: cpuSeconds(pid),
      broker: broker === undefined ? Number.NaN : cpuSeconds(broker),
      sourceBroker: sourceBroker === undefined ? Number.NaN : cpuSeconds(sourceBroker),
    });
    const before = cpu();
    const loadStart = Date.now();
    const steady = await produce(topics, warmupSeconds + seconds);
    await awaitDestination(topics, BigInt(totalPartitions + loadRecords), 300_000, failed);
    const after = cpu();
    const lags: BatchLag[] = [];
    for (const topic of topics) lags.push(...(await batchLags(dest, topic, partitions, 1n)));
    const gib = (loadRecords * recordBytes) / 2 ** 30;
    const lag = summarizeLags(lags, loadStart + warmupSeconds * 1000);
    const measured: Measured = {
      p50: lag.p50,
      p99: lag.p99,
      max: lag.max,
      p99WithWarmup: lag.p99WithWarmup,
      sourceP99: steady.latencyP99Ms,
      toolCpuPerGiB: round2((after.tool - before.tool) / gib),
      brokerCpuPerGiB: round2((after.broker - before.broker) / gib),
      sourceBrokerCpuPerGiB: round2((after.sourceBroker - before.sourceBroker) / gib),
    };
    note(
      `${tool} round ${r + 1}: source wrote ${steady.records} records at ${steady.mibPerSec} MiB/s (produce → acknowledged p50 ${steady.latencyP50Ms} ms, p99 ${steady.latencyP99Ms} ms); ${lags.length} destination batches ` +
        `(${round1(loadRecords / lags.length)} records each); lag after the warm-up p50 ${measured.p50} ms, p99 ${measured.p99} ms, max ${measured.max} ms (p99 with it ${measured.p99WithWarmup} ms); ` +
        `CPU ${measured.toolCpuPerGiB} s/GiB (destination broker ${measured.brokerCpuPerGiB} s/GiB, source broker ${measured.sourceBrokerCpuPerGiB} s/GiB)`,
    );
    // Where the highest lag was: all partitions at once (the machine, a broker) or one copier's.
    // scripts/copy-topic.ts deals the (topic, partition) pairs round-robin over its copiers.
    const topicIndex = new Map(topics.map((t, i) => [t, i]));
    const copierOf = (l: BatchLag) => (tool === 'mm2' ? 0 : ((topicIndex.get(l.topic)! * partitionCount + l.partition) % kmirror.copiers));
    for (const w of worstSeconds(lags, loadStart + warmupSeconds * 1000, 3, copierOf)) {
      const groups = [...w.over1sByGroup].sort(([a], [b]) => a - b).map(([g, n]) => `${tool === 'mm2' ? 'all' : `copier ${g}`}: ${n}`);
      note(`${tool} round ${r + 1}: second ${w.at} of the load: lag max ${w.maxMs} ms; ${w.over1s} of ${w.partitions} partitions over 1 s${groups.length > 0 ? ` (${groups.join(', ')})` : ''}`);
    }
    return measured;
  } finally {
    await stop();
    await deleteTopicsAndWait(destAdmin, topics, 300_000);
    await deleteTopicsAndWait(sourceAdmin, topics, 300_000);
    if (tool === 'mm2') await deleteMirrorMakerTopics([sourceAdmin, destAdmin]);
  }
}

try {
  note(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${Math.round(totalmem() / 2 ** 30)} GiB; Node ${process.version}; Kafka ${KAFKA_VERSION}`);
  note(`load: ${topicCount} topics × ${partitionCount} partitions = ${totalPartitions}, ${values['mib-per-s']} MiB/s of ${recordBytes}-byte records (${recordsPerSec}/s) for ${warmupSeconds} + ${seconds} s (lag after the warm-up), producer linger ${values['linger-ms']} ms; source timestamps ${sourceTimestamps} (lag from ${sourceTimestamps === 'CreateTime' ? 'creation' : "the source's append"}); ${rounds} rounds; MirrorMaker tasks.max ${mm2Tasks}`);
  const runs = new Map<Tool, Measured[]>(tools.map((t) => [t, []]));
  for (let r = 0; r < rounds; r++) {
    for (const tool of r % 2 === 0 ? tools : [...tools].reverse()) runs.get(tool)!.push(await measure(tool, r));
  }
  for (const tool of tools) {
    const m = runs.get(tool)!;
    result(`${tool}_lag_p50`, median(m.map((x) => x.p50)), 'ms');
    result(`${tool}_lag_p99`, median(m.map((x) => x.p99)), 'ms');
    result(`${tool}_lag_p99_range`, `${Math.min(...m.map((x) => x.p99))}-${Math.max(...m.map((x) => x.p99))}`, 'ms');
    result(`${tool}_source_produce_p99`, median(m.map((x) => x.sourceP99)), 'ms');
    result(`${tool}_lag_max`, Math.max(...m.map((x) => x.max)), 'ms');
    result(`${tool}_lag_p99_with_warmup`, median(m.map((x) => x.p99WithWarmup)), 'ms');
    result(`${tool}_cpu_per_gib`, round2(median(m.map((x) => x.toolCpuPerGiB))), 'CPU-s/GiB');
    result(`${tool}_with_broker_cpu_per_gib`, round2(median(m.map((x) => x.toolCpuPerGiB + x.brokerCpuPerGiB))), 'CPU-s/GiB');
    result(`${tool}_source_broker_cpu_per_gib`, round2(median(m.map((x) => x.sourceBrokerCpuPerGiB))), 'CPU-s/GiB');
  }
  if (runs.has('kmirror')) result('kmirror_lag_p99', median(runs.get('kmirror')!.map((x) => x.p99)), 'ms');
} finally {
  await clusters.close();
}
