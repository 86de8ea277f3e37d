// Benchmark "event-store": the link-flap scenario of the KIP review (VK3). P partitions (default
// 50,000 = 500 topics × 100) of one mirror move MIRRORING → STOPPING → STOPPED as two operations
// (StopTopics all, CompleteStop all), through the real command path: load from projections,
// decide with the charts, append with the hash chain, fold and upsert projections, one transaction
// per operation. Then they are started again (→ LOG_TRUNCATION → MIRRORING) and the cycle repeats,
// so memory can be compared across cycles. Runs in a database of its own, dropped at the end.
//
//   npm run bench -- event-store [--partitions 50000] [--topics 500] [--cycles 5] [--keep]
//
// Prints RESULT lines; the last is RESULT transitions_per_s=<n> (stop path only).
import { randomBytes } from 'node:crypto';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { benchArgs } from './support/args.ts';
import pg from 'pg';
import { requireVar, withEnvFile } from '../config.ts';
import { createDatabase } from '../db/connect.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { registerCluster } from '../db/cluster-store.ts';
import { executeMirrorCommand } from '../db/mirror-store.ts';
import { verifyChain } from '../db/event-store/verify-chain.ts';
import type { MirrorCommand } from '../domain/commands.ts';

const { values } = benchArgs(import.meta.url, {
  options: {
    partitions: { type: 'string', default: '50000' },
    topics: { type: 'string', default: '500' },
    cycles: { type: 'string', default: '5' },
    keep: { type: 'boolean', default: false },
  },
});
const partitions = Number(values.partitions);
const topicCount = Number(values.topics);
const cycles = Number(values.cycles);
if (!Number.isInteger(partitions / topicCount) || cycles < 1) throw new Error('--partitions must be a multiple of --topics, --cycles ≥ 1');
const perTopic = partitions / topicCount;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const result = (name: string, value: number | string, unit = ''): void => {
  process.stdout.write(`RESULT ${name}=${value}${unit === '' ? '' : ` ${unit}`}\n`);
};
const mb = (bytes: number): number => Math.round((bytes / 2 ** 20) * 10) / 10;

const env = withEnvFile(process.env).env;
const base = new URL(requireVar(env, 'DATABASE_URL'));
const dbName = `bench_event_store_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: base.toString() });
await admin.connect();
await admin.query(`create database "${dbName}"`);
const url = new URL(base.toString());
url.pathname = `/${dbName}`;
const db = createDatabase(url.toString(), { maxConnections: 2 });

try {
  await migrateToLatest(db);
  const key = randomBytes(32);
  const who = { actor: 'bench', reason: 'link flap (VK3)' };
  for (const cluster of ['source', 'destination']) {
    await registerCluster(db, key, { cluster, connection: { bootstrap: [`${cluster}:9092`], securityProtocol: 'PLAINTEXT' } }, who);
  }
  const mirror = 'flap';
  const topics = Array.from({ length: topicCount }, (_, i) => ({ topic: `topic-${String(i).padStart(4, '0')}`, partitionCount: perTopic }));
  const run = async (command: MirrorCommand): Promise<number> => {
    const started = performance.now();
    const r = await executeMirrorCommand(db, command, who);
    if (r.events !== partitions && command.type !== 'CreateMirror') throw new Error(`${command.type}: ${r.events} events, expected ${partitions}`);
    return performance.now() - started;
  };

  await executeMirrorCommand(db, { type: 'CreateMirror', mirror, sourceCluster: 'source', destinationCluster: 'destination' }, who);
  const setupStarted = performance.now();
  await executeMirrorCommand(db, { type: 'StartTopics', mirror, topics }, who);
  await run({ type: 'CompleteTruncation', mirror, partitions: 'all' });
  const setupMs = performance.now() - setupStarted;

  // Sampled while the operations run (between awaits): the working set of one 50,000-partition
  // transaction, which is what a bigger batch grows, as opposed to what more operations grow.
  let heapPeak = 0;
  const sampler = setInterval(() => (heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed)), 5);
  const stopMs: number[] = [];
  const completeMs: number[] = [];
  const restartMs: number[] = [];
  const heap: number[] = [];
  const rss: number[] = [];
  for (let cycle = 0; cycle < cycles; cycle++) {
    stopMs.push(await run({ type: 'StopTopics', mirror, partitions: 'all', mode: 'failover' }));
    completeMs.push(await run({ type: 'CompleteStop', mirror, partitions: 'all' }));
    if (cycle < cycles - 1) {
      const started = performance.now();
      await run({ type: 'StartTopics', mirror, topics });
      await run({ type: 'CompleteTruncation', mirror, partitions: 'all' });
      restartMs.push(performance.now() - started);
    }
    gc();
    heap.push(process.memoryUsage().heapUsed);
    rss.push(process.memoryUsage().rss);
  }

  clearInterval(sampler);
  const stopTotalMs = [...stopMs, ...completeMs].reduce((a, b) => a + b, 0);
  const transitions = 2 * partitions * cycles;
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const chain = await verifyChain(db);
  if (!chain.ok) throw new Error(`chain broken after the benchmark: ${chain.message}`);

  result('partitions', partitions);
  result('topics', topicCount);
  result('cycles', cycles);
  result('events_in_log', chain.events.toString());
  result('setup_start_and_truncate_ms', Math.round(setupMs), 'ms');
  result('stop_request_median_ms', Math.round(median(stopMs)), 'ms');
  result('stop_complete_median_ms', Math.round(median(completeMs)), 'ms');
  if (restartMs.length > 0) result('restart_cycle_median_ms', Math.round(median(restartMs)), 'ms');
  result('restart_transitions_per_s', restartMs.length === 0 ? 0 : Math.round((2 * partitions * restartMs.length) / (restartMs.reduce((a, b) => a + b, 0) / 1000)));
  result('heap_after_first_cycle_mb', mb(heap[0]!), 'MB');
  result('heap_after_last_cycle_mb', mb(heap.at(-1)!), 'MB');
  result('heap_growth_mb', mb(heap.at(-1)! - heap[0]!), 'MB');
  result('heap_peak_during_operations_mb', mb(heapPeak), 'MB');
  result('rss_after_first_cycle_mb', mb(rss[0]!), 'MB');
  result('rss_after_last_cycle_mb', mb(rss.at(-1)!), 'MB');
  result('transitions_per_s', Math.round(transitions / (stopTotalMs / 1000)));
} finally {
  await db.destroy();
  if (!values.keep) await admin.query(`drop database if exists "${dbName}" with (force)`);
  await admin.end();
}
