// The copier in a process of its own, on the local stack's two clusters: for tests that kill it
// (kill -9) or measure its memory, and for the benchmarks (it runs the way MirrorMaker does, in a
// separate process, and is measured from outside the same way).
//   node --import tsx scripts/copy-topic.ts '<json CopyTopicArgs>'
// Prints one JSON line per event on stdout: {"event":"started"}, {"event":"done", …}. SIGTERM
// stops it cleanly (the result is still printed).
import { createDatabase } from '../db/connect.ts';
import { createPartitionLease } from '../db/leases.ts';
import { ByteBudget } from '../kafka/budget.ts';
import { createKafka } from '../kafka/connection.ts';
import { copy, type CopyOptions, type TopicPartitions } from '../kafka/copier.ts';
import { RawCluster } from '../kafka/protocol.ts';
import { connectionFor } from './stack/kafka.ts';

export interface CopyTopicArgs {
  readonly databaseUrl: string;
  /** Topics to copy, each with the same `partitions`. */
  readonly topics: readonly string[];
  readonly partitions: readonly number[];
  readonly owner: string;
  readonly untilCaughtUp: boolean;
  readonly ttlMs: number;
  readonly graceMs: number;
  readonly budgetBytes: number;
  /** Split the partitions over this many concurrent copiers sharing the budget. */
  readonly copiers: number;
  readonly options?: Partial<CopyOptions>;
}

const args = JSON.parse(process.argv[2] ?? '{}') as CopyTopicArgs;
/** Resolves once the line is flushed (stdout to a pipe is asynchronous; exit would cut it). */
const emit = (event: Record<string, unknown>): Promise<void> =>
  new Promise((resolve) => process.stdout.write(`${JSON.stringify(event, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}\n`, () => resolve()));

const db = createDatabase(args.databaseUrl, { maxConnections: 4 });
// One source and one destination connection pair per copier, as each copy activity of the product
// has (activities/data-plane.ts): a broker answers a connection's requests one at a time, so a
// copier sharing connections waits behind another's long-polling fetch (measured: lag p95 27 ms
// shared vs 4 ms apart at 20 MiB/s on 12 partitions, and 500 ms — the fetch wait — at the end of a burst).
const sessions = Array.from({ length: args.copiers }, () => ({
  source: new RawCluster(createKafka(connectionFor('source'))),
  destination: new RawCluster(createKafka(connectionFor('dest'))),
}));
await Promise.all(sessions.flatMap((s) => [s.source.connect(), s.destination.connect()]));
const gc = (globalThis as { gc?: () => void }).gc;
gc?.();
const baselineRss = process.memoryUsage.rss();
let peakRss = baselineRss;
// memoryUsage.rss() alone: the full memoryUsage() (heap statistics too) every 5 ms took ~3% of
// the process's CPU in a profile of the throughput benchmark, and rss() alone every 5 ms still
// 2.4% (a profile of 1 GiB in 256 KiB batches, 2026-12-05) — CPU the benchmarks charged to the
// copier. Every 25 ms: memory freed by a collection goes back to the system far slower than that,
// so a peak is not missed.
const sampler = setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage.rss());
}, 25);
const budget = new ByteBudget(args.budgetBytes);
// Every (topic, partition) dealt round-robin to the copiers; each copier's share grouped by topic.
const pairs = args.topics.flatMap((topic) => args.partitions.map((partition) => ({ topic, partition })));
const groups: TopicPartitions[][] = Array.from({ length: args.copiers }, (_, i) => {
  const mine = pairs.filter((_p, j) => j % args.copiers === i);
  return args.topics.map((topic) => ({ topic, partitions: mine.filter((p) => p.topic === topic).map((p) => p.partition) })).filter((a) => a.partitions.length > 0);
});
await emit({ event: 'started', pid: process.pid });
const stop = new AbortController();
process.on('SIGTERM', () => stop.abort());
const results = await Promise.all(
  groups.map((assignments, i) =>
    copy({
      ...sessions[i]!,
      assignments,
      budget,
      signal: stop.signal,
      untilCaughtUp: args.untilCaughtUp,
      lease: createPartitionLease(db, { mirror: 'test', assignments, owner: `${args.owner}-${i}`, ttlMs: args.ttlMs, graceMs: args.graceMs, pollMs: 50 }),
      ...(args.options ? { options: args.options } : {}),
    }),
  ),
);
clearInterval(sampler);
peakRss = Math.max(peakRss, process.memoryUsage.rss());
await emit({
  event: 'done',
  partitions: results.flatMap((r) => r.partitions.map((p) => ({ topic: p.topic, partition: p.partition, status: p.status, nextOffset: p.nextOffset, error: p.error?.message }))),
  records: results.reduce((n, r) => n + r.stats.records, 0),
  stats: results.map((r) => r.stats),
  baselineRss,
  peakRss,
  budgetPeak: budget.peak,
});
// Connections close in the background; the result is out, so do not wait on them.
void Promise.all([...sessions.flatMap((s) => [s.source.close(), s.destination.close()]), db.destroy()]).finally(() => process.exit(0));
setTimeout(() => process.exit(0), 2_000).unref();
