// Benchmark "runner": mirroring through the product against the bare copier, in one run, on the
// local stack (source PLAINTEXT, destination SASL_PLAINTEXT; both on this machine).
//
//  - runner: a worker process started as `npm start` starts it, on a database and task queue of
//    its own (clusters registered as `src`/`dst`); per round a new mirror (createMirror) and
//    startTopics of the round's topic, through client/index.ts — the start creates the destination
//    topic, aligns it, and the mirror runner's copy activities (activities/data-plane.ts) copy;
//  - copier: kafka/copier.ts in a process of its own (scripts/copy-topic.ts), as the throughput
//    benchmark runs it, into a destination topic the benchmark creates.
//
// Both copy the same source topic (P partitions filled with N bytes of R-byte records by
// ProducerPerformance, as in bench/throughput.ts) into a fresh same-named destination topic, and
// are measured the same way from outside: the destination's end offsets are polled every 50 ms and
// throughput = bytes ÷ (all records there − first record arrived). So the start (createMirror,
// startTopics' checks, topic creation, alignment, ISR wait; the copier's connections and lease) is
// not counted; the wall time from the start is noted. Both run with the same byte budget and the
// same number of concurrent copiers (the worker gets KMIRROR_MIN_COPIES = copiers, its default
// partitions per copy activity: one alignment of the P partitions, then that many copies of P ÷ copiers)
// and the copier's default fetch sizes (the product's; bench/throughput.ts uses larger ones).
// Rounds alternate which goes first (an even number of rounds, so each goes first equally often);
// each round uses a new source topic. After the runner, every partition's end offset is compared
// with the source's, and in the first round (every round with --verify-all) every record too
// (kafka/verify.ts verifyPartition).
//
//   npm run bench -- runner [--size-mib 1024] [--rounds 4] [--partitions 12] [--record-bytes 1024]
//        [--copiers 3] [--budget-mib 64] [--source-batch-bytes 262144] [--verify-all]
//
// Prints RESULT lines; the last is RESULT runner_vs_copier=<ratio> (median of the rounds' ratios).
import { cpus, loadavg, totalmem } from 'node:os';
import { benchArgs, usageError } from './support/args.ts';
import { awaitOperation, runnerProgress, startOperation } from '../client/index.ts';
import { verifyPartition } from '../kafka/verify.ts';
import { KAFKA_VERSION } from '../scripts/stack/topology.ts';
import { runnerWorkflowId } from '../workflows/messages.ts';
import { deleteDenyAcls, mib, RssSampler, startControlPlane, waitForTopic, type BenchControlPlane } from './support/control-plane.ts';
import { clientProperties } from '../scripts/stack/kafka.ts';
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
  range,
  result,
  round1,
  round2,
  stackUp,
  startCopier,
  watchDestination,
  type CopierSettings,
} from './support/mirroring.ts';

const { values } = benchArgs(import.meta.url, {
  options: {
    'size-mib': { type: 'string', default: '1024' },
    rounds: { type: 'string', default: '4' },
    partitions: { type: 'string', default: '12' },
    'record-bytes': { type: 'string', default: '1024' },
    copiers: { type: 'string', default: '3' },
    'budget-mib': { type: 'string', default: '64' },
    'source-batch-bytes': { type: 'string', default: '262144' },
    'verify-all': { type: 'boolean', default: false },
  },
});
const recordBytes = Number(values['record-bytes']);
const records = Math.floor((Number(values['size-mib']) * 2 ** 20) / recordBytes);
const partitionCount = Number(values.partitions);
const partitions = range(partitionCount);
const rounds = Number(values.rounds);
if (!Number.isInteger(rounds) || rounds < 2 || rounds % 2 !== 0) usageError(import.meta.url, `--rounds must be an even number ≥ 2 (each tool goes first equally often), got ${values.rounds}`);
const copier: CopierSettings = { budgetBytes: Number(values['budget-mib']) * 2 ** 20, copiers: Number(values.copiers) };
const partitionsPerCopier = Math.ceil(partitionCount / copier.copiers);

stackUp();
const clusters = await openClusters();
const { sourceConnection, destConnection, source, dest, sourceAdmin, destAdmin } = clusters;
await migrateStackDatabase();
const sourceProps = clientProperties('source', sourceConnection);
const run = `bench.runner-${Date.now().toString(36)}`;
/** Destination topics a start made read-only (their DENY ACLs outlive the topics). */
const startedTopics: string[] = [];

let cp: BenchControlPlane | undefined;
let exitCode = 0;

async function measureCopier(topic: string): Promise<number> {
  await clusters.createTopic(destAdmin, topic, partitionCount);
  const child = startCopier([topic], partitions, true, copier);
  try {
    const { activeMs, wallMs } = await watchDestination(dest, topic, partitions, BigInt(records));
    const rate = mibPerS(records * recordBytes, activeMs);
    note(`copier: ${records} records in ${Math.round(activeMs)} ms from the first arrival (${Math.round(wallMs)} ms from start) = ${rate} MiB/s`);
    await checkEndOffsets(clusters, 'copier', topic, partitions);
    return rate;
  } finally {
    await finishCopier(child, { terminate: false, budgetBytes: copier.budgetBytes });
    await clusters.deleteTopic(destAdmin, topic);
  }
}

async function measureRunner(plane: BenchControlPlane, topic: string, round: number, verify: boolean): Promise<number> {
  const mirror = `${run}-${round + 1}`;
  await awaitOperation(await startOperation(plane.temporal, 'createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst', actor: 'bench' }));
  clusters.track(destAdmin, topic);
  startedTopics.push(topic);
  const rss = new RssSampler(plane.worker.process.pid!);
  const t0 = performance.now();
  let startedMs = 0;
  const starting = startOperation(plane.temporal, 'startTopics', { mirror, topics: [topic], actor: 'bench' })
    .then((handle) => awaitOperation<'startTopics'>(handle))
    .then((started) => {
      startedMs = performance.now() - t0;
      return started;
    });
  const watching = (async () => {
    // The start creates the destination topic; nothing is copied before it has leaders.
    await waitForTopic(destAdmin, topic);
    return watchDestination(dest, topic, partitions, BigInt(records));
  })();
  try {
    const [started, { activeMs }] = await Promise.all([starting, watching]);
    const wallMs = performance.now() - t0;
    const copies = (await runnerProgress(plane.temporal, mirror))?.status.copies;
    const rate = mibPerS(records * recordBytes, activeMs);
    note(`runner: ${records} records in ${Math.round(activeMs)} ms from the first arrival (${Math.round(wallMs)} ms from startTopics; it returned after ${Math.round(startedMs)} ms) = ${rate} MiB/s; ${copies ?? '?'} copy activities; worker RSS ${mib(rss.peak(0, t0 + 100))} → peak ${mib(rss.peak(t0))} MiB`);
    if (started.states.MIRRORING !== partitionCount || started.failed.length > 0) throw new Error(`runner: the start left ${JSON.stringify(started.states)}, failed ${JSON.stringify(started.failed.slice(0, 3))}`);
    await checkEndOffsets(clusters, 'runner', topic, partitions);
    if (verify) {
      const v0 = performance.now();
      const checked = await Promise.all(partitions.map((p) => verifyPartition(source, dest, topic, p)));
      const unequal = checked.find((c) => !c.equal);
      if (unequal) throw new Error(`runner: ${topic}-${unequal.partition} differs from the source: ${JSON.stringify(unequal.firstMismatch)}`);
      note(`runner: destination equal to the source record by record (${checked.reduce((n, c) => n + c.recordsCompared, 0)} records compared in ${round1((performance.now() - v0) / 1000)} s)`);
    }
    return rate;
  } finally {
    rss.stop();
    watching.catch(() => undefined);
    // Stop copying (the pause returns once the copies have stopped producing), then end the
    // runner, so nothing writes into the destination topic once it is deleted.
    await starting.catch(() => undefined);
    await awaitOperation(await startOperation(plane.temporal, 'pauseTopics', { mirror, allTopics: true, actor: 'bench' })).catch((err: unknown) => note(`runner: pause failed: ${(err as Error).message}`));
    await plane.temporal.client.workflow
      .getHandle(runnerWorkflowId(mirror))
      .terminate('benchmark round done')
      .catch(() => undefined);
    await clusters.deleteTopic(destAdmin, topic);
  }
}

try {
  note(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${Math.round(totalmem() / 2 ** 30)} GiB; Node ${process.version}; Kafka ${KAFKA_VERSION}; load average ${loadavg().map(round2).join(' ')}`);
  note(`volume: ${records} records × ${recordBytes} B = ${round1((records * recordBytes) / 2 ** 20)} MiB over ${partitionCount} partitions; ${rounds} rounds`);
  note(`both: ${copier.copiers} copiers of ≤ ${partitionsPerCopier} partitions sharing a ${copier.budgetBytes / 2 ** 20} MiB byte budget, the copier's default fetch sizes`);
  const plane = await startControlPlane({
    prefix: 'bench_runner',
    source: sourceConnection,
    destination: destConnection,
    env: { KMIRROR_BUDGET_BYTES: String(copier.budgetBytes), KMIRROR_MIN_COPIES: String(copier.copiers) },
  });
  cp = plane;
  note(`worker pid ${plane.worker.process.pid}, task queue ${plane.taskQueue}`);

  const runnerRates: number[] = [];
  const copierRates: number[] = [];
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const topic = `${run}-${r + 1}`;
    await clusters.createTopic(sourceAdmin, topic, partitionCount);
    const fill = await fillTopic({ propertiesFile: sourceProps, topic, records, recordBytes, compression: 'none', batchBytes: values['source-batch-bytes']! });
    note(`round ${r + 1}: filled ${topic} at ${fill.mbPerSec} MiB/s, ${await headBatchRecords(source, topic)} records per batch; load average ${loadavg().map(round2).join(' ')}`);
    // Alternate which goes first: the page cache and the brokers warm up over a run.
    const order: ('runner' | 'copier')[] = r % 2 === 0 ? ['runner', 'copier'] : ['copier', 'runner'];
    const rates: Record<string, number> = {};
    for (const tool of order) rates[tool] = tool === 'runner' ? await measureRunner(plane, topic, r, r === 0 || values['verify-all']) : await measureCopier(topic);
    runnerRates.push(rates.runner!);
    copierRates.push(rates.copier!);
    ratios.push(rates.runner! / rates.copier!);
    note(`round ${r + 1} (${order.join(' first, ')} second): runner ${rates.runner} MiB/s, copier ${rates.copier} MiB/s, runner/copier ${round2(rates.runner! / rates.copier!)}`);
    await clusters.deleteTopic(sourceAdmin, topic);
  }
  result('runner_mib_s', round1(median(runnerRates)), 'MiB/s');
  result('copier_mib_s', round1(median(copierRates)), 'MiB/s');
  result('runner_mib_s_rounds', runnerRates.join(','));
  result('copier_mib_s_rounds', copierRates.join(','));
  result('runner_vs_copier_rounds', ratios.map(round2).join(','));
  note(`load average at the end ${loadavg().map(round2).join(' ')}`);
  result('runner_vs_copier', round2(median(ratios)));
} catch (err) {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  exitCode = 1;
} finally {
  await cp?.close().catch((err: unknown) => note(`closing the control plane failed: ${(err as Error).message}`));
  const acls = await deleteDenyAcls(destAdmin, startedTopics).catch(() => 0);
  if (acls > 0) note(`removed ${acls} DENY ACLs of the mirror topics`);
  await clusters.close();
}
// Stop by ourselves even if a failed round left a poll running.
process.exit(exitCode);
