// Temporal as the distributed engine (DESIGN §9): worker processes started like `npm start`, one
// killed with SIGKILL while it copies. A restarted worker, or a second worker already polling,
// takes the partitions over (the lease keeps one writer), the destination ends record-by-record
// equal to the source with no duplicate, and the stall — from the kill until the destination
// moves again while a producer writes steadily — is measured and printed; the survivor's metrics
// count the partitions it took over.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { awaitOperation, startOperation } from '../client/index.ts';
import { verifyPartition } from '../kafka/verify.ts';
import { start, type Child } from './support/child.ts';
import { controlPlane, type ControlPlane } from './support/control-plane.ts';
import { messages, steadyWriter } from './support/mirror-fixture.ts';
import { closedPort, randomName, stackConfigEnv } from './support/stack.ts';
import { scrapeWorker } from './support/exposition.ts';

let t: ControlPlane;
const workers: Child[] = [];
beforeAll(async () => {
  t = await controlPlane({ withWorker: false });
});
/** Each test starts its own workers: stop the ones still running when it ends. */
afterEach(async () => {
  for (const w of workers.splice(0)) {
    try {
      process.kill(w.process.pid!, 'SIGKILL');
    } catch {
      // gone already
    }
    await w.exited;
  }
});
afterAll(async () => t?.close());

/** A worker process (node + tsx, as `npm start` runs it) on the test's database and task queue,
 *  serving its metrics on a port of its own (`metricsPort`). */
async function startWorker(): Promise<Child & { metricsPort: number }> {
  const metricsPort = await closedPort();
  const env = { ...process.env, ...stackConfigEnv({ DATABASE_URL: t.databaseUrl, TEMPORAL_TASK_QUEUE: t.taskQueue, KMIRROR_LOG_LEVEL: 'info', KMIRROR_METRICS_PORT: String(metricsPort) }) };
  const child = start(process.execPath, ['--import', 'tsx', 'worker.ts'], { env });
  workers.push(child);
  await child.waitForLog((e) => e.msg === 'worker running', 60_000);
  return Object.assign(child, { metricsPort });
}

/** A counter's value on a worker's /metrics (0 when the series is absent). */
async function counter(port: number, series: string): Promise<number> {
  return (await scrapeWorker(port)).samples.get(series) ?? 0;
}

const sum = (values: Iterable<bigint>) => [...values].reduce((a, b) => a + b, 0n);
const all = (n: number) => Array.from({ length: n }, (_, i) => i);

/** The pid whose worker holds the copy lease of the topic (lease owners start with `<pid>@<host>`). */
async function leaseHolderPid(topic: string): Promise<number | undefined> {
  const rows = await t.db.selectFrom('partition_leases').select(['owner', 'expires_at']).where('topic', '=', topic).execute();
  const live = rows.find((r) => r.owner !== null && r.expires_at !== null && r.expires_at.getTime() > Date.now());
  return live?.owner ? Number(live.owner.split('@')[0]) : undefined;
}

async function mirrorTopic(partitions: number): Promise<{ mirror: string; topic: string }> {
  const mirror = randomName('m');
  const topic = await t.sourceTopic({ partitions });
  t.track(topic);
  await awaitOperation(await startOperation(t.temporal, 'createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst' }));
  await awaitOperation(await startOperation(t.temporal, 'startTopics', { mirror, topics: [topic] }));
  return { mirror, topic };
}

/** Wait until the destination end has not moved for `quietMs`, then report the longest gap seen. */
async function watchStall(topic: string, partitions: number, from: number, until: () => boolean): Promise<number> {
  let last = sum((await t.dest.listOffsets(topic, all(partitions), 'latest')).values());
  let lastMoved = from;
  let longest = 0;
  while (!until()) {
    await new Promise((r) => setTimeout(r, 100));
    const now = sum((await t.dest.listOffsets(topic, all(partitions), 'latest').catch(() => new Map<number, bigint>())).values());
    if (now > last) {
      longest = Math.max(longest, Date.now() - lastMoved);
      lastMoved = Date.now();
      last = now;
    }
  }
  return longest;
}

describe('a worker killed while it copies', () => {
  it('kill -9 the only worker, start a new one: copying continues; the destination equals the source, nothing duplicated', async () => {
    const first = await startWorker();
    const { topic } = await mirrorTopic(3);
    const writer = steadyWriter(t.sourceKafka, topic, 3);
    await expect.poll(async () => sum((await t.dest.listOffsets(topic, all(3), 'latest')).values()), { timeout: 30_000 }).toBeGreaterThan(200n);
    process.kill(first.process.pid!, 'SIGKILL');
    await first.exited;
    await new Promise((r) => setTimeout(r, 2_000));
    await startWorker();
    await new Promise((r) => setTimeout(r, 5_000));
    const sent = await writer.stop();
    await expect.poll(async () => sum((await t.dest.listOffsets(topic, all(3), 'latest')).values()), { timeout: 60_000 }).toBe(BigInt(sent));
    for (const p of all(3)) expect(await verifyPartition(t.source, t.dest, topic, p)).toMatchObject({ equal: true });
  });

  it('two workers, kill -9 the one holding the lease: the other takes the partitions over; the stall is measured', async () => {
    const a = await startWorker();
    const b = await startWorker();
    const { mirror, topic } = await mirrorTopic(4);
    const writer = steadyWriter(t.sourceKafka, topic, 4);
    await expect.poll(async () => sum((await t.dest.listOffsets(topic, all(4), 'latest')).values()), { timeout: 30_000 }).toBeGreaterThan(200n);
    const holder = await leaseHolderPid(topic);
    const victim = [a, b].find((w) => w.process.pid === holder);
    expect(victim, `the lease holder pid ${holder} is one of the two workers`).toBeDefined();
    const survivor = victim === a ? b : a;
    const killedAt = Date.now();
    process.kill(victim!.process.pid!, 'SIGKILL');
    let settled = false;
    const stall = watchStall(topic, 4, killedAt, () => settled);
    // The survivor takes the lease over and the destination catches up with the writer.
    await expect.poll(() => leaseHolderPid(topic), { timeout: 60_000 }).toBe(survivor.process.pid);
    // The survivor counts the four partitions it took from an owner whose lease had expired.
    await expect.poll(() => counter(survivor.metricsPort, `kmirror_lease_takeovers_total{mirror="${mirror}"}`), { timeout: 20_000 }).toBe(4);
    await new Promise((r) => setTimeout(r, 3_000));
    const sent = await writer.stop();
    await expect.poll(async () => sum((await t.dest.listOffsets(topic, all(4), 'latest')).values()), { timeout: 60_000 }).toBe(BigInt(sent));
    settled = true;
    const stallMs = await stall;
    console.log(`RESULT takeover_stall_ms=${stallMs} (kill -9 of the worker holding the lease until the destination moved again; defaults: copy heartbeat timeout 10 s, lease ttl 6 s, grace 6 s)`);
    for (const p of all(4)) expect(await verifyPartition(t.source, t.dest, topic, p)).toMatchObject({ equal: true });
    expect(stallMs).toBeLessThan(45_000);
  });
});

describe('a worker killed during failover and failback', () => {
  it('a restarted worker completes each operation; nothing lost, nothing duplicated, no step done twice with a different result', async () => {
    const first = await startWorker();
    const { mirror, topic } = await mirrorTopic(2);
    const producer = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await producer.send({ topic, messages: messages(400, 2) });
    await expect.poll(async () => sum((await t.dest.listOffsets(topic, all(2), 'latest')).values()), { timeout: 30_000 }).toBe(400n);

    // Failover, with its worker killed a moment after it started.
    const failing = await startOperation(t.temporal, 'failover', { mirror, allTopics: true, reason: 'drill' });
    await new Promise((r) => setTimeout(r, 700));
    process.kill(first.process.pid!, 'SIGKILL');
    await first.exited;
    const second = await startWorker();
    const failedOver = await awaitOperation<'failover'>(failing);
    expect(failedOver).toMatchObject({ states: { STOPPED: 2 } });
    const rows = await t.db.selectFrom('mirror_partitions').select(['state', 'last_mirrored_offset']).where('mirror', '=', mirror).orderBy('partition').execute();
    expect(rows.map((r) => [r.state, r.last_mirrored_offset])).toEqual([
      ['STOPPED', 200n],
      ['STOPPED', 200n],
    ]);
    // No position was recorded twice with a different result: never beyond the stop point, and the
    // stop point with one boundary checksum per partition.
    const recorded = await t.db.selectFrom('events').select('data').where('stream_id', '=', `mirror:${mirror}`).where('type', '=', 'PartitionPositionRecorded').execute();
    expect(recorded.every((r) => BigInt(r.data.offset as string) <= 200n)).toBe(true);
    for (const p of all(2)) {
      const atStop = recorded.filter((r) => r.data.partition === p && r.data.offset === '200');
      expect(new Set(atStop.map((r) => r.data.checksum)).size, `partition ${p}`).toBe(1);
    }

    // The new primary takes writes; failback, with its worker killed a moment after it started.
    const destProducer = t.destKafka.producer();
    await destProducer.connect();
    await destProducer.send({ topic, messages: messages(20, 2, { from: 5_000 }) });
    await destProducer.disconnect();
    const failingBack = await startOperation(t.temporal, 'failback', { mirror, reason: 'drill' });
    await new Promise((r) => setTimeout(r, 1_500));
    process.kill(second.process.pid!, 'SIGKILL');
    await second.exited;
    await startWorker();
    const failedBack = await awaitOperation<'failback'>(failingBack);
    expect(failedBack).toMatchObject({ topics: [{ topic, action: 'continue' }], started: { states: { MIRRORING: 2 } } });
    // The old primary catches up with the new one: the same records, once.
    await expect.poll(async () => [...(await t.source.listOffsets(topic, all(2), 'latest')).values()].sort(), { timeout: 60_000 }).toEqual([210n, 210n]);
    for (const p of all(2)) expect(await verifyPartition(t.dest, t.source, topic, p)).toMatchObject({ equal: true, recordsCompared: 210 });
    await producer.disconnect();
  });
});

