// Benchmark "start-scale": starting many partitions through the product, on the local stack.
//
// T source topics of P partitions each (default 1,000 × 10 = 10,000 partitions; R records per
// partition, default 1) are created; a worker process started as `npm start` starts it (its own
// database and task queue, clusters registered as `src`/`dst`, KMIRROR_BUDGET_BYTES set) then runs
// createMirror and startTopics through client/index.ts — by one include pattern matching the
// topics (default) or by their names — and the clock stops when startTopics returns with every
// partition MIRRORING: start_seconds covers the checks, the destination topics' creation and ACLs,
// the recorded start, the alignment of every partition, the ISR wait and CompleteTruncation. The
// clock starts once the brokers are idle (settleStack: no deleted topic's directory left, under
// 0.1 core). The copies then run for --observe-seconds.
//
// The worker's resident memory (VmRSS of /proc/<pid>/status, every 100 ms) is reported as its
// baseline (before the start), its peak during the start and its peak while the copies run. The
// runner's continue-as-new (runs of workflow id mirror:<name>) and history length are reported;
// where the time went is printed from the workflow histories (per activity type: when, how long,
// how long queued). Afterwards the runner is terminated, the worker stopped, the topics deleted on
// both clusters (with the DENY ACLs the start put on the destination's) and the database dropped.
//
//   npm run bench -- start-scale [--topics 1000] [--partitions 10] [--records-per-partition 1]
//        [--budget-mib 64] [--select pattern|names] [--observe-seconds 15] [--timeout-seconds 900]
//        [--runner-history-limit N]   (the worker's KMIRROR_RUNNER_HISTORY_LIMIT: a low one makes the
//                                      runner continue as new during the run, at this scale)
//
// Prints RESULT lines; the last is RESULT start_seconds=<s>.
import { cpus, loadavg, totalmem } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { benchArgs, usageError } from './support/args.ts';
import { awaitOperation, operationWorkflowId, runnerProgress, startOperation, type OperationInputs } from '../client/index.ts';
import { createTopicsAndWait, deleteTopicsAndWait } from '../kafka/admin.ts';
import { createBatches } from '../kafka/mirror-topics.ts';
import { KAFKA_VERSION } from '../scripts/stack/topology.ts';
import { runnerWorkflowId, type OperationProgress } from '../workflows/messages.ts';
import { deleteDenyAcls, mib, noteProfile, profileHistory, RssSampler, startControlPlane, type BenchControlPlane } from './support/control-plane.ts';
import { note, openClusters, range, result, round1, round2, settleStack, stackUp } from './support/mirroring.ts';

const { values } = benchArgs(import.meta.url, {
  options: {
    topics: { type: 'string', default: '1000' },
    partitions: { type: 'string', default: '10' },
    'records-per-partition': { type: 'string', default: '1' },
    'budget-mib': { type: 'string', default: '64' },
    select: { type: 'string', default: 'pattern' },
    'observe-seconds': { type: 'string', default: '15' },
    'timeout-seconds': { type: 'string', default: '900' },
    'runner-history-limit': { type: 'string' },
  },
});
const topicCount = Number(values.topics);
const partitionCount = Number(values.partitions);
const recordsPerPartition = Number(values['records-per-partition']);
const budgetBytes = Number(values['budget-mib']) * 2 ** 20;
const select = values.select!;
if (select !== 'pattern' && select !== 'names') usageError(import.meta.url, `--select must be pattern or names, got ${select}`);
const observeMs = Number(values['observe-seconds']) * 1000;
const timeoutMs = Number(values['timeout-seconds']) * 1000;
const total = topicCount * partitionCount;

stackUp();
const clusters = await openClusters();
const { sourceConnection, destConnection, sourceKafka, sourceAdmin, destAdmin } = clusters;
const run = `bench.start-${Date.now().toString(36)}`;
const topics = range(topicCount).map((i) => `${run}-${String(i).padStart(5, '0')}`);
const mirror = run;
const loads = (): string => loadavg().map(round2).join(' ');
const CHUNK = 100;

let cp: BenchControlPlane | undefined;
let rss: RssSampler | undefined;
let exitCode = 0;

/** The source topics (in requests as the product makes them), R records in each partition. */
async function createSourceTopics(): Promise<void> {
  for (const batch of createBatches(topics.map((topic) => ({ topic, partitions: partitionCount, replicationFactor: 1 })))) await createTopicsAndWait(sourceAdmin, batch);
  if (recordsPerPartition === 0) return;
  const producer = sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    for (let i = 0; i < topics.length; i += CHUNK) {
      await producer.sendBatch({
        topicMessages: topics.slice(i, i + CHUNK).map((topic) => ({
          topic,
          messages: range(partitionCount).flatMap((partition) => range(recordsPerPartition).map((n) => ({ partition, key: `k${n}`, value: `${topic}-${partition}-${n}` }))),
        })),
      });
    }
  } finally {
    await producer.disconnect();
  }
}

/** Follow an operation, noting each step it reaches and when (its progress query). */
async function timedOperation<O extends 'createMirror' | 'startTopics' | 'failover'>(plane: BenchControlPlane, operation: O, input: OperationInputs[O], t0: number) {
  let step = '';
  const onProgress = (p: OperationProgress): void => {
    if (p.step === step) return;
    step = p.step;
    note(`  ${round2((performance.now() - t0) / 1000)} s: ${operation} ${p.step} (${JSON.stringify(p.states)})`);
  };
  const handle = await startOperation(plane.temporal, operation, input);
  const outcome = awaitOperation<O>(handle, { onProgress, everyMs: 250 });
  const timeout = sleep(timeoutMs, undefined, { ref: false }).then(() => Promise.reject(new Error(`${operation} did not finish within ${timeoutMs / 1000} s`)));
  return Promise.race([outcome, timeout]);
}

try {
  note(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${Math.round(totalmem() / 2 ** 30)} GiB; Node ${process.version}; Kafka ${KAFKA_VERSION}; load average ${loads()}`);
  const c0 = performance.now();
  await createSourceTopics();
  note(`source: ${topicCount} topics × ${partitionCount} partitions (${total} partitions), ${recordsPerPartition} record(s) per partition, created in ${round1((performance.now() - c0) / 1000)} s`);

  const plane = await startControlPlane({
    prefix: 'bench_start',
    source: sourceConnection,
    destination: destConnection,
    env: { KMIRROR_BUDGET_BYTES: String(budgetBytes), ...(values['runner-history-limit'] === undefined ? {} : { KMIRROR_RUNNER_HISTORY_LIMIT: values['runner-history-limit'] }) },
  });
  cp = plane;
  rss = new RssSampler(plane.worker.process.pid!);
  note(`worker pid ${plane.worker.process.pid}, task queue ${plane.taskQueue}, KMIRROR_BUDGET_BYTES ${budgetBytes}`);
  // Baseline: the idle worker, connected and polling, before any mirror exists.
  await sleep(3_000);
  const baseline = rss.median(performance.now() - 2_000);

  // The brokers idle first: still writing the source topics' partitions, or deleting a previous
  // run's 20,000 (Kafka removes a deleted topic's directories a minute later), they share the
  // one disk with the destination's creation of its topics and stretch it two-fold.
  const settled = await settleStack();
  note(`stack ${settled.settled ? 'settled' : 'did NOT settle'} after ${round1(settled.waitedMs / 1000)} s (deleted topics' directories gone, brokers under 0.1 core)`);
  const selection = select === 'pattern' ? { include: [`${run.replaceAll('.', '\\.')}-.*`] } : { topics };
  note(`start: mirror ${mirror}, ${select === 'pattern' ? `include ${selection.include![0]}` : `${topics.length} topic names`}; load average ${loads()}`);
  const t0 = performance.now();
  await timedOperation(plane, 'createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst', actor: 'bench' }, t0);
  const t1 = performance.now();
  const startInput = { mirror, ...selection, actor: 'bench' };
  let started: Awaited<ReturnType<typeof timedOperation<'startTopics'>>> | undefined;
  try {
    started = await timedOperation(plane, 'startTopics', startInput, t0);
  } catch (err) {
    note(`startTopics failed: ${(err as Error).message}`);
    exitCode = 1;
  }
  const t2 = performance.now();
  const peakStart = rss.peak(t0, t2);

  if (started !== undefined) {
    note(`startTopics returned: ${started.partitions} partitions, states ${JSON.stringify(started.states)}, ${started.failed.length} failed; destination read-only: ${started.readOnly.enforced}`);
    if (started.states.MIRRORING !== total || started.failed.length > 0) {
      note(`not every partition is MIRRORING: ${JSON.stringify(started.failed.slice(0, 5))}`);
      exitCode = 1;
    }
    // The copies run (fetching the source's ends, copying the few records) for a while.
    const o0 = performance.now();
    while (performance.now() - o0 < observeMs) await sleep(1_000);
  }
  const t3 = performance.now();
  const status = await runnerProgress(plane.temporal, mirror);
  if (status !== undefined) note(`runner: ${status.status.copies} copy activities over ${status.status.copying} partitions, states ${JSON.stringify(status.progress.states)}`);
  const destEnds = await clusters.dest.listOffsets(topics[0]!, range(partitionCount), 'latest').catch(() => undefined);
  if (destEnds !== undefined) note(`destination ${topics[0]} ends: ${[...destEnds.values()].join(',')} (source: ${recordsPerPartition} per partition)`);

  // --- Temporal's side: runs of the runner, history lengths, where the time went ----------------
  const runs: { runId: string; status: string }[] = [];
  for await (const e of plane.temporal.client.workflow.list({ query: `WorkflowId = '${runnerWorkflowId(mirror)}'` })) runs.push({ runId: e.runId, status: e.status.name });
  const runner = await plane.temporal.client.workflow.getHandle(runnerWorkflowId(mirror)).describe();
  const startHandle = plane.temporal.client.workflow.getHandle(operationWorkflowId('startTopics', startInput));
  const startDescription = await startHandle.describe();
  noteProfile('startTopics', profileHistory(await startHandle.fetchHistory()));
  for (const r of [...runs].reverse()) {
    noteProfile(`mirrorRunner run ${r.runId.slice(0, 8)} (${r.status})`, profileHistory(await plane.temporal.client.workflow.getHandle(runnerWorkflowId(mirror), r.runId).fetchHistory()));
  }

  result('partitions', total);
  result('create_mirror_seconds', round2((t1 - t0) / 1000), 's');
  result('start_topics_seconds', round2((t2 - t1) / 1000), 's');
  result('budget_mib', budgetBytes / 2 ** 20, 'MiB');
  result('worker_rss_baseline_mib', mib(baseline), 'MiB');
  result('worker_rss_peak_start_mib', mib(peakStart), 'MiB');
  result('worker_rss_peak_copying_mib', mib(rss.peak(t2, t3)), 'MiB');
  result('worker_rss_growth_mib', mib(rss.peak(t0, t3) - baseline), 'MiB');
  result('runner_runs', runs.length);
  result('runner_continued_as_new', runs.length > 1 ? 'yes' : 'no');
  result('runner_history_length', runner.historyLength, 'events');
  if (runner.historySize !== undefined) result('runner_history_mib', mib(runner.historySize), 'MiB');
  result('start_topics_history_length', startDescription.historyLength, 'events');
  // Failover of every partition (issue 9's goal: < 10 s at 1,000 partitions, < 60 s at 10,000):
  // from the request until every partition is STOPPED and writable.
  if (started !== undefined) {
    const f0 = performance.now();
    const failedOver = await timedOperation(plane, 'failover', { mirror, allTopics: true, actor: 'bench' }, f0).catch((err: unknown) => {
      note(`failover failed: ${(err as Error).message}`);
      exitCode = 1;
      return undefined;
    });
    if (failedOver !== undefined) {
      note(`failover: ${JSON.stringify(failedOver.states)}, records behind ${failedOver.partitions.reduce((n, p) => n + BigInt(p.recordsBehind ?? '0'), 0n)}`);
      result('failover_seconds', round2((performance.now() - f0) / 1000), 's');
    }
  }
  note(`load average at the end ${loads()}`);
  result('start_seconds', started === undefined ? 'failed' : round2((t2 - t0) / 1000), started === undefined ? '' : 's');
} catch (err) {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  exitCode = 1;
} finally {
  rss?.stop();
  const c0 = performance.now();
  // Terminates the runner (and anything else on the task queue), stops the worker, drops the database.
  await cp?.close().catch((err: unknown) => note(`closing the control plane failed: ${(err as Error).message}`));
  for (let i = 0; i < topics.length; i += CHUNK) {
    const chunk = topics.slice(i, i + CHUNK);
    await Promise.all([deleteTopicsAndWait(sourceAdmin, chunk, 300_000), deleteTopicsAndWait(destAdmin, chunk, 300_000)]).catch((err: unknown) => note(`deleting topics failed: ${(err as Error).message}`));
  }
  const acls = await deleteDenyAcls(destAdmin, topics).catch(() => 0);
  note(`cleaned up in ${round1((performance.now() - c0) / 1000)} s: ${topics.length} topics deleted on both clusters, ${acls} DENY ACLs removed`);
  await clusters.close();
}
process.exit(exitCode);
