// What the mirroring benchmarks (throughput, runner) share, so that every tool is filled and
// measured the same way: the local stack's two clusters, topics created and removed again, the
// source fill (ProducerPerformance), the copier in a process of its own (scripts/copy-topic.ts) and
// the yardstick — the destination's end offsets polled from outside until every record is there.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Admin, Kafka } from 'kafkajs';
import { createDatabase } from '../../db/connect.ts';
import { migrateToLatest } from '../../db/migrate.ts';
import type { ClusterConnection } from '../../domain/connection.ts';
import { createTopicsAndWait, deleteTopicsAndWait } from '../../kafka/admin.ts';
import type { CopyOptions, CopyStats } from '../../kafka/copier.ts';
import { createKafka } from '../../kafka/connection.ts';
import { IsolationLevel, RawCluster } from '../../kafka/protocol.ts';
import { runCopyTopic, type CopyTopicProcess } from '../../scripts/copy-topic-process.ts';
import type { CopyTopicArgs } from '../../scripts/copy-topic.ts';
import { brokerPids, connectionFor, dataDirs } from '../../scripts/stack/kafka.ts';
import { databaseUrl } from '../../scripts/stack/postgres.ts';
import { projectRoot } from '../../scripts/stack/topology.ts';
import { producerPerformance, type ProducerPerfResult } from './kafka-tools.ts';
import { cpuSeconds, cpuSplit } from './proc-cpu.ts';

/** A `RESULT name=value [unit]` line on stdout: what a benchmark reports. */
export const result = (name: string, value: number | string, unit = ''): void => {
  process.stdout.write(`RESULT ${name}=${value}${unit === '' ? '' : ` ${unit}`}\n`);
};
/** A `# …` line on stderr: how the figures came about. */
export const note = (line: string): void => void process.stderr.write(`# ${line}\n`);
export const round1 = (n: number): number => Math.round(n * 10) / 10;
export const round2 = (n: number): number => Math.round(n * 100) / 100;
export const mibPerS = (bytes: number, ms: number): number => round1(bytes / 2 ** 20 / (ms / 1000));
export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
export const sum = (m: ReadonlyMap<number, bigint>): bigint => [...m.values()].reduce((a, b) => a + b, 0n);
export const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/**
 * Wait until the stack is idle before a tool is measured: the partition directories of deleted
 * topics are gone from every broker's log directory (Kafka renames them `…-delete` and removes them
 * in the background) and the brokers use less than a tenth of a core over 2 s. A tool measured
 * right after another would otherwise share the machine with that cleanup. Returns the wait in ms
 * (also when the stack did not settle within `timeoutMs`: the caller notes it).
 */
export async function settleStack(timeoutMs = 180_000): Promise<{ waitedMs: number; settled: boolean }> {
  const started = Date.now();
  const pending = (): number => (['source', 'dest'] as const).flatMap((c) => dataDirs(c)).reduce((n, dir) => n + readdirSync(dir).filter((e) => e.endsWith('-delete')).length, 0);
  const brokers = [...brokerPids('source'), ...brokerPids('dest')];
  const brokerCpu = (): number => brokers.reduce((n, pid) => n + cpuSeconds(pid), 0);
  while (Date.now() - started < timeoutMs) {
    if (pending() === 0) {
      const before = brokerCpu();
      await sleep(2_000);
      if ((brokerCpu() - before) / 2 < 0.1) return { waitedMs: Date.now() - started, settled: true };
    } else {
      await sleep(1_000);
    }
  }
  return { waitedMs: Date.now() - started, settled: false };
}

/** `npm run stack -- up --quiet`: the benchmark's clusters, Postgres and Temporal. Exits on failure. */
export function stackUp(): void {
  const up = spawnSync(process.execPath, ['--import', 'tsx', join(projectRoot, 'scripts', 'stack.ts'), 'up', '--quiet'], { stdio: 'inherit' });
  if (up.status !== 0) process.exit(up.status ?? 1);
}

/** The stack's database at the latest schema: the copier process keeps its leases there. */
export async function migrateStackDatabase(): Promise<void> {
  const db = createDatabase(databaseUrl, { maxConnections: 1 });
  try {
    await migrateToLatest(db);
  } finally {
    await db.destroy();
  }
}

/** The stack's two clusters as the benchmarks use them, with the topics they created. */
export interface BenchClusters {
  readonly sourceConnection: ClusterConnection;
  readonly destConnection: ClusterConnection;
  readonly sourceKafka: Kafka;
  readonly destKafka: Kafka;
  readonly source: RawCluster;
  readonly dest: RawCluster;
  readonly sourceAdmin: Admin;
  readonly destAdmin: Admin;
  /** Create a topic (retrying while a just-deleted one of the same name is still going away) and remember it. */
  createTopic(admin: Admin, topic: string, partitions: number, configs?: Record<string, string>): Promise<void>;
  /** Remember a topic created by someone else (a start creates its destination topic). */
  track(admin: Admin, topic: string): void;
  /** Delete a topic and forget it. */
  deleteTopic(admin: Admin, topic: string): Promise<void>;
  /** Delete every topic still remembered, then disconnect. */
  close(): Promise<void>;
}

export async function openClusters(): Promise<BenchClusters> {
  const sourceConnection = connectionFor('source');
  const destConnection = connectionFor('dest');
  const sourceKafka = createKafka(sourceConnection, { retries: 8 });
  const destKafka = createKafka(destConnection, { retries: 8 });
  const source = new RawCluster(sourceKafka);
  const dest = new RawCluster(destKafka);
  const sourceAdmin = sourceKafka.admin();
  const destAdmin = destKafka.admin();
  await Promise.all([source.connect(), dest.connect(), sourceAdmin.connect(), destAdmin.connect()]);
  const created: { admin: Admin; topic: string }[] = [];

  const deleteTopic = async (admin: Admin, topic: string): Promise<void> => {
    await deleteTopicsAndWait(admin, [topic]);
    const at = created.findIndex((c) => c.admin === admin && c.topic === topic);
    if (at >= 0) created.splice(at, 1);
  };
  return {
    sourceConnection,
    destConnection,
    sourceKafka,
    destKafka,
    source,
    dest,
    sourceAdmin,
    destAdmin,
    async createTopic(admin, topic, partitions, configs = {}) {
      // A just-deleted topic of the same name may still be going away: retry until it is gone.
      for (let attempt = 0; ; attempt++) {
        try {
          if (!(await createTopicsAndWait(admin, [{ topic, partitions, replicationFactor: 1, configs }]))) throw new Error(`${topic} still exists`);
          created.push({ admin, topic });
          return;
        } catch (err) {
          if (attempt >= 60) throw err;
          await sleep(500);
        }
      }
    },
    track(admin, topic) {
      if (!created.some((c) => c.admin === admin && c.topic === topic)) created.push({ admin, topic });
    },
    deleteTopic,
    async close() {
      for (const { admin, topic } of [...created].reverse()) await deleteTopic(admin, topic).catch(() => undefined);
      await Promise.all([source.close(), dest.close(), sourceAdmin.disconnect(), destAdmin.disconnect()]);
    },
  };
}

/**
 * Poll the destination's end offsets every 50 ms until `expected` records are there; time from the
 * first record's arrival to the last (activeMs) and from the call (wallMs), and the CPU seconds
 * each process of `cpuOf` (name → pid) used in the same window (from the first poll that saw a
 * record to the one that saw them all). The same yardstick for every tool. The topic must exist on
 * the destination. `failed` is asked on every poll: what it returns ends the wait with an error.
 */
export async function watchDestination(
  dest: RawCluster,
  topic: string,
  partitions: readonly number[],
  expected: bigint,
  opts: { timeoutMs?: number; cpuOf?: Readonly<Record<string, number>>; failed?: () => string | undefined } = {},
): Promise<{ activeMs: number; wallMs: number; cpuSeconds: Record<string, number> }> {
  const timeoutMs = opts.timeoutMs ?? 20 * 60_000;
  // Per process its total and, as `<name>.system`, the kernel's share.
  const cpuNow = (): Record<string, number> =>
    Object.fromEntries(
      Object.entries(opts.cpuOf ?? {}).flatMap(([name, pid]) => {
        const { user, system } = cpuSplit(pid);
        return [[name, user + system], [`${name}.system`, system]];
      }),
    );
  const t0 = performance.now();
  let first: { at: number; cpu: Record<string, number> } | undefined;
  for (;;) {
    const have = await dest.listOffsets(topic, partitions, 'latest').then(sum, (err: unknown) => {
      // A topic created a moment ago: its leader answers NOT_LEADER_FOR_PARTITION (retriable)
      // until it has loaded the partition, though the metadata already names it.
      if ((err as { retriable?: boolean }).retriable) return 0n;
      throw err;
    });
    const now = performance.now();
    if (have > 0n && first === undefined) first = { at: now, cpu: cpuNow() };
    if (have >= expected) {
      const cpu = cpuNow();
      const cpuSeconds = Object.fromEntries(Object.entries(cpu).map(([name, s]) => [name, round2(s - (first?.cpu[name] ?? s))]));
      return { activeMs: now - (first?.at ?? t0), wallMs: now - t0, cpuSeconds };
    }
    const failure = opts.failed?.();
    if (failure !== undefined) throw new Error(`${topic}: the mirroring process failed: ${failure}`);
    if (now - t0 > timeoutMs) throw new Error(`${topic}: only ${have} of ${expected} records reached the destination in ${timeoutMs} ms`);
    await sleep(50);
  }
}

/** Every partition's end offset on the destination equals the source's (else throws, naming `tool`). */
export async function checkEndOffsets(clusters: BenchClusters, tool: string, topic: string, partitions: readonly number[]): Promise<void> {
  const [srcEnd, dstEnd] = await Promise.all([clusters.source.listOffsets(topic, partitions, 'latest'), clusters.dest.listOffsets(topic, partitions, 'latest')]);
  for (const p of partitions) if (srcEnd.get(p) !== dstEnd.get(p)) throw new Error(`${tool}: partition ${p} ends at ${dstEnd.get(p)} on the destination, ${srcEnd.get(p)} on the source`);
}

/** The source fill: `records` records of `recordBytes` bytes by ProducerPerformance, batched by
 *  `batchBytes` (kmirror copies the source's batches, so their size matters) and compressed. */
export function fillTopic(opts: { propertiesFile: string; topic: string; records: number; recordBytes: number; compression: string; batchBytes: string }): Promise<ProducerPerfResult> {
  return producerPerformance({
    propertiesFile: opts.propertiesFile,
    topic: opts.topic,
    records: opts.records,
    recordSize: opts.recordBytes,
    extra: { 'compression.type': opts.compression, 'batch.size': opts.batchBytes },
  });
}

/** Records per batch at the head of a source partition: shows the producer settings took effect. */
export async function headBatchRecords(source: RawCluster, topic: string): Promise<number> {
  const leader = await source.leaderOf(topic, 0);
  const [fetched] = await source.fetch({ leader, partitions: [{ topic, partition: 0, fetchOffset: 0n, maxBytes: 4 * 2 ** 20 }], maxWaitMs: 100, maxBytes: 4 * 2 ** 20, isolationLevel: IsolationLevel.READ_UNCOMMITTED });
  const batches = fetched?.batches ?? [];
  return round1(batches.reduce((n, b) => n + b.recordsCount, 0) / Math.max(1, batches.length));
}

export interface CopierSettings {
  readonly budgetBytes: number;
  /** Concurrent copiers in the process, splitting the partitions and sharing the budget, each
   *  with connections of its own (as the product's copy activities). */
  readonly copiers: number;
  /** Fetch sizes and the like; the copier's defaults (the product's) when absent. */
  readonly options?: Partial<CopyOptions>;
}

/** The copier in a process of its own (scripts/copy-topic.ts), copying `partitions` of each of
 *  `topics` into the same-named destination topics (which must exist). Leases live in the stack's database. */
export function startCopier(topics: readonly string[], partitions: readonly number[], untilCaughtUp: boolean, settings: CopierSettings): CopyTopicProcess {
  const args: CopyTopicArgs = {
    databaseUrl,
    topics,
    partitions,
    owner: `bench-${process.pid}`,
    untilCaughtUp,
    ttlMs: 10_000,
    graceMs: 15_000,
    budgetBytes: settings.budgetBytes,
    copiers: settings.copiers,
    ...(settings.options === undefined ? {} : { options: settings.options }),
  };
  // KMIRROR_BENCH_COPIER_FLAGS: Node flags for the copier process, e.g. '--cpu-prof --cpu-prof-dir=/tmp/prof'
  // (docs/benchmarks.md, "Profiling the worker").
  return runCopyTopic(args, (process.env.KMIRROR_BENCH_COPIER_FLAGS ?? '').split(' ').filter(Boolean));
}

/** Wait for the copier process to end (SIGTERM it first unless it stops by itself) and note its memory. */
export async function finishCopier(child: CopyTopicProcess, opts: { terminate: boolean; budgetBytes: number }): Promise<void> {
  if (opts.terminate) process.kill(child.pid, 'SIGTERM');
  const exit = await child.done;
  if (exit.code !== 0) throw new Error(`kmirror copier exited with ${exit.code ?? exit.signal}: ${exit.stderr.slice(-2000)}`);
  const done = exit.events.find((e) => e.event === 'done') as { peakRss: number; budgetPeak: number; stats: CopyStats[] } | undefined;
  if (!done) return;
  const sum = (key: keyof CopyStats) => done.stats.reduce((n, s) => n + s[key], 0);
  note(`kmirror: peak RSS ${round1(done.peakRss / 2 ** 20)} MiB, budget peak ${round1(done.budgetPeak / 2 ** 20)} MiB of ${opts.budgetBytes / 2 ** 20} MiB`);
  note(
    `kmirror: ${sum('fetches')} fetches (${sum('gatheringFetches')} after a gathering wait, ${sum('incrementalFetches')} incremental, ${sum('prefetchesUsed')} prefetched), ` +
      `${sum('fetchSessionResets')} fetch session resets, ${sum('resyncs')} resyncs re-reading ${sum('resyncedPartitions')} partitions`,
  );
}

/** One destination batch's lag (of its first record), that record's timestamp as the source holds
 *  it (ms since the epoch), and how many records the batch carries. */
export interface BatchLag {
  readonly topic: string;
  readonly partition: number;
  readonly lagMs: number;
  readonly sourceTime: number;
  readonly records: number;
}

/**
 * Lag of every destination batch from offset `from` on, of a topic created with
 * message.timestamp.type=LogAppendTime: the broker then stamps each batch's maxTimestamp with its
 * append time and keeps its baseTimestamp, the source producer's timestamp of the batch's first
 * (oldest) record — so lag = destination append − source record time, the same yardstick for any
 * tool that keeps record timestamps.
 */
export async function batchLags(dest: RawCluster, topic: string, partitions: readonly number[], from = 0n): Promise<BatchLag[]> {
  const lags: BatchLag[] = [];
  const ends = await dest.listOffsets(topic, partitions, 'latest');
  for (const partition of partitions) {
    const leader = await dest.leaderOf(topic, partition);
    for (let offset = from; offset < ends.get(partition)!; ) {
      const [fetched] = await dest.fetch({ leader, partitions: [{ topic, partition, fetchOffset: offset, maxBytes: 8 * 2 ** 20 }], maxWaitMs: 100, maxBytes: 8 * 2 ** 20, isolationLevel: IsolationLevel.READ_UNCOMMITTED });
      if (!fetched || fetched.error) throw new Error(`reading ${topic}-${partition} at ${offset}: ${fetched?.error?.type ?? 'no data'}`);
      for (const batch of fetched.batches) {
        if (batch.lastOffset < offset) continue;
        if (!batch.logAppendTime) throw new Error(`${topic}-${partition}: batch at ${batch.baseOffset} is not LogAppendTime`);
        if (batch.baseOffset >= from) lags.push({ topic, partition, lagMs: Number(batch.maxTimestamp - batch.baseTimestamp), sourceTime: Number(batch.baseTimestamp), records: batch.recordsCount });
        offset = batch.lastOffset + 1n;
      }
    }
  }
  return lags;
}

/** A load's lag: p50, p99 and max over the batches whose first record the source timestamped at or
 *  after `steadyFrom` (ms since the epoch: the load's start plus a warm-up, when the producer's and
 *  the tools' JITs are still warming), and p99 over every batch. */
export interface LagSummary {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly p99WithWarmup: number;
  readonly batches: number;
  readonly steadyBatches: number;
}

export function summarizeLags(lags: readonly BatchLag[], steadyFrom: number): LagSummary {
  const steady = lags.filter((l) => l.sourceTime >= steadyFrom);
  return {
    p50: weightedPercentile(steady, 0.5),
    p99: weightedPercentile(steady, 0.99),
    max: steady.reduce((m, l) => Math.max(m, l.lagMs), 0),
    p99WithWarmup: weightedPercentile(lags, 0.99),
    batches: lags.length,
    steadyBatches: steady.length,
  };
}

/** One second of the load (by the source time of the batches' first records) where lag was high. */
export interface LagSecond {
  /** Seconds since `from`. */
  readonly at: number;
  readonly maxMs: number;
  /** Partitions with a batch in this second, and those of them with a batch lagging over 1 s. */
  readonly partitions: number;
  readonly over1s: number;
  /** The partitions over 1 s, by the group `groupOf` puts each in (e.g. the copier copying it). */
  readonly over1sByGroup: ReadonlyMap<number, number>;
}

/**
 * The `count` seconds of the load with the highest lag: whether a spike held every partition (a
 * stall of the machine, a broker or the whole tool) or some (one copier, one leader).
 */
export function worstSeconds(lags: readonly BatchLag[], from: number, count: number, groupOf: (l: BatchLag) => number): LagSecond[] {
  const seconds = new Map<number, BatchLag[]>();
  for (const l of lags) {
    if (l.sourceTime < from) continue;
    const at = Math.floor((l.sourceTime - from) / 1000);
    const list = seconds.get(at);
    if (list === undefined) seconds.set(at, [l]);
    else list.push(l);
  }
  const out: LagSecond[] = [];
  for (const [at, list] of seconds) {
    const slow = new Map<string, BatchLag>();
    for (const l of list) if (l.lagMs > 1000) slow.set(`${l.topic}-${l.partition}`, l);
    const byGroup = new Map<number, number>();
    for (const l of slow.values()) byGroup.set(groupOf(l), (byGroup.get(groupOf(l)) ?? 0) + 1);
    out.push({
      at,
      maxMs: list.reduce((m, l) => Math.max(m, l.lagMs), 0),
      partitions: new Set(list.map((l) => `${l.topic}-${l.partition}`)).size,
      over1s: slow.size,
      over1sByGroup: byGroup,
    });
  }
  return out.sort((a, b) => b.maxMs - a.maxMs).slice(0, count);
}

/** The q-quantile of the lags, each batch weighted by its records. */
function weightedPercentile(samples: readonly BatchLag[], q: number): number {
  const sorted = [...samples].sort((a, b) => a.lagMs - b.lagMs);
  const total = sorted.reduce((n, s) => n + s.records, 0);
  let seen = 0;
  for (const s of sorted) {
    seen += s.records;
    if (seen >= q * total) return s.lagMs;
  }
  return sorted.at(-1)?.lagMs ?? Number.NaN;
}
