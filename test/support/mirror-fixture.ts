// A source/destination topic pair on the stack's two clusters, with the clients a copier test
// needs: raw sessions, admins, a producer into the source, a Postgres for leases.
import { afterAll, beforeAll } from 'vitest';
import type { Admin, Kafka, Message, Producer } from 'kafkajs';
import { createTopicsAndWait, deleteTopicsAndWait } from '../../kafka/admin.ts';
import { createKafka } from '../../kafka/connection.ts';
import { IsolationLevel, RawCluster, type FetchedPartition } from '../../kafka/protocol.ts';
import { ByteBudget } from '../../kafka/budget.ts';
import { copy, type CopyRequest, type CopyResult } from '../../kafka/copier.ts';
import { verifyPartition, type PartitionVerification } from '../../kafka/verify.ts';
import { createDatabase } from '../../db/connect.ts';
import { migrateToLatest } from '../../db/migrate.ts';
import { createPartitionLease } from '../../db/leases.ts';
import type { Db } from '../../db/database.ts';
import type { PartitionLease } from '../../kafka/lease.ts';
import { createTestDatabase, destConnection, randomName, sourceConnection, testClientOptions } from './stack.ts';

export interface MirrorFixture {
  readonly sourceKafka: Kafka;
  readonly destKafka: Kafka;
  readonly source: RawCluster;
  readonly dest: RawCluster;
  readonly sourceAdmin: Admin;
  readonly destAdmin: Admin;
  readonly db: Db;
  readonly databaseUrl: string;
  producer(): Promise<Producer>;
  /** Create `topic` on both clusters (same partitions; configs on the source, destConfigs on the destination). */
  topicPair(opts?: { partitions?: number; configs?: Record<string, string>; destConfigs?: Record<string, string>; sourceReplicationFactor?: number; destReplicationFactor?: number }): Promise<string>;
  lease(topic: string, partitions: readonly number[], opts?: { owner?: string; ttlMs?: number; graceMs?: number }): PartitionLease;
  /** copy() on one topic with test defaults: a produce timeout of 2 s under a lease grace of 2.5 s. */
  copy(
    req: { topic: string; partitions: readonly number[] } & Omit<CopyRequest, 'source' | 'destination' | 'assignments' | 'budget' | 'lease' | 'signal'> &
      Partial<Pick<CopyRequest, 'budget' | 'lease' | 'signal'>>,
  ): Promise<CopyResult>;
  verifyAll(topic: string, partitions: readonly number[]): Promise<PartitionVerification[]>;
  close(): Promise<void>;
}

/** The copier's produce timeout in tests: short, so a lease takeover need not wait 10 s. */
export const TEST_PRODUCE_TIMEOUT_MS = 2_000;

export async function mirrorFixture(): Promise<MirrorFixture> {
  const sourceKafka = createKafka(sourceConnection(), testClientOptions);
  const destKafka = createKafka(destConnection(), testClientOptions);
  const source = new RawCluster(sourceKafka);
  const dest = new RawCluster(destKafka);
  const sourceAdmin = sourceKafka.admin();
  const destAdmin = destKafka.admin();
  await Promise.all([sourceAdmin.connect(), destAdmin.connect()]);
  const database = await createTestDatabase('copier');
  const db = createDatabase(database.url);
  await migrateToLatest(db);
  const producers: Producer[] = [];
  // Deleted in close(): a broker keeps files open per partition, and test topics of thousands of
  // partitions left behind exhaust its file limit within a few runs.
  const topics: string[] = [];
  const fixture: MirrorFixture = {
    sourceKafka,
    destKafka,
    source,
    dest,
    sourceAdmin,
    destAdmin,
    db,
    databaseUrl: database.url,
    async producer() {
      const p = sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
      await p.connect();
      producers.push(p);
      return p;
    },
    async topicPair(opts = {}) {
      const topic = randomName('mirror');
      topics.push(topic);
      const spec = (configs: Record<string, string> | undefined, replicationFactor = 1) => ({ topic, partitions: opts.partitions ?? 1, replicationFactor, configs: configs ?? {} });
      await createTopicsAndWait(sourceAdmin, [spec(opts.configs, opts.sourceReplicationFactor)]);
      await createTopicsAndWait(destAdmin, [spec(opts.destConfigs ?? opts.configs, opts.destReplicationFactor)]);
      return topic;
    },
    lease(topic, partitions, opts = {}) {
      return createPartitionLease(db, {
        mirror: 'test',
        assignments: [{ topic, partitions }],
        owner: opts.owner ?? randomName('owner'),
        ttlMs: opts.ttlMs ?? 3_000,
        graceMs: opts.graceMs ?? TEST_PRODUCE_TIMEOUT_MS + 500,
        pollMs: 100,
      });
    },
    copy({ topic, partitions, ...req }) {
      return copy({
        source,
        destination: dest,
        assignments: [{ topic, partitions }],
        budget: req.budget ?? new ByteBudget(32 * 1024 * 1024),
        lease: req.lease ?? fixture.lease(topic, partitions),
        signal: req.signal ?? new AbortController().signal,
        ...req,
        options: { produceTimeoutMs: TEST_PRODUCE_TIMEOUT_MS, ...req.options },
      });
    },
    async verifyAll(topic, partitions) {
      return Promise.all(partitions.map((p) => verifyPartition(source, dest, topic, p)));
    },
    async close() {
      await Promise.all(producers.map((p) => p.disconnect()));
      await deleteTopicsAndWait(sourceAdmin, topics);
      await deleteTopicsAndWait(destAdmin, topics);
      await Promise.all([source.close(), dest.close(), sourceAdmin.disconnect(), destAdmin.disconnect()]);
      await db.destroy();
      await database.drop();
    },
  };
  return fixture;
}

/** Timestamps near now: records older than the brokers' retention (7 days) would be deleted by it. */
const epoch = Date.now() - 60_000;

/** `count` messages spread over `partitions`, each distinct (key, value, a header, a timestamp). */
export function messages(count: number, partitions: number, opts: { valueBytes?: number; from?: number } = {}): Message[] {
  const from = opts.from ?? 0;
  return Array.from({ length: count }, (_, i) => {
    const n = from + i;
    return {
      partition: n % partitions,
      key: `key-${n}`,
      value: Buffer.alloc(opts.valueBytes ?? 100, n % 251),
      headers: { seq: String(n) },
      timestamp: String(epoch + n),
    };
  });
}

/** A producer (idempotent, one request in flight) writing `perStep` messages() to `topic` every
 *  50 ms until stopped; stop() resolves with how many it wrote (numbered from 0). */
export function steadyWriter(kafka: Kafka, topic: string, partitions: number, perStep = 20): { stop(): Promise<number> } {
  let writing = true;
  const done = (async () => {
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    let sent = 0;
    while (writing) {
      await producer.send({ topic, messages: messages(perStep, partitions, { from: sent }) });
      sent += perStep;
      await new Promise((r) => setTimeout(r, 50));
    }
    await producer.disconnect();
    return sent;
  })();
  return {
    stop: async () => {
      writing = false;
      return done;
    },
  };
}

/** Send in chunks (kafkajs builds one request per send). A topic of thousands of partitions
 *  answers NOT_LEADER for a moment after creation, so retriable errors are retried. */
export async function sendAll(producer: Producer, topic: string, all: readonly Message[], chunk = 500): Promise<void> {
  for (let i = 0; i < all.length; i += chunk) {
    for (let attempt = 0; ; attempt++) {
      try {
        await producer.send({ topic, messages: all.slice(i, i + chunk) });
        break;
      } catch (err) {
        const e = err as { retriable?: boolean; cause?: { retriable?: boolean } };
        const retriable = e.retriable === true || e.cause?.retriable === true;
        if (!retriable || attempt >= 10) throw err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }
}

/** One raw fetch of a partition from `from` (default 0) at its leader, without waiting: the
 *  batches as the log holds them (read_uncommitted unless told). */
export async function fetchBatches(cluster: RawCluster, topic: string, partition: number, opts: { from?: bigint; isolationLevel?: number; maxBytes?: number } = {}): Promise<FetchedPartition> {
  const maxBytes = opts.maxBytes ?? 16 * 1024 * 1024;
  const [fetched] = await cluster.fetch({
    leader: await cluster.leaderOf(topic, partition),
    partitions: [{ topic, partition, fetchOffset: opts.from ?? 0n, maxBytes }],
    maxWaitMs: 0,
    maxBytes,
    isolationLevel: opts.isolationLevel ?? IsolationLevel.READ_UNCOMMITTED,
  });
  if (fetched === undefined) throw new Error(`no fetch answer for ${topic}-${partition}`);
  return fetched;
}

/** Partition numbers 0..n-1. */
export const allPartitions = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** One fixture per test file: opened before its tests, closed (topics deleted) after them. */
export function useMirrorFixture(): () => MirrorFixture {
  let fixture: MirrorFixture | undefined;
  beforeAll(async () => {
    fixture = await mirrorFixture();
  });
  afterAll(async () => {
    await fixture?.close();
  });
  return () => {
    if (!fixture) throw new Error('the mirror fixture is used before beforeAll ran');
    return fixture;
  };
}
