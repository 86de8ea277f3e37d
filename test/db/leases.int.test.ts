import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import {
  acquireLeases as acquireIn,
  createPartitionLease,
  releaseLeases as releaseIn,
  renewLeases as renewIn,
  type HeldLease,
  type LeaseTarget,
  type LeaseTiming,
} from '../../db/leases.ts';
import type { Db } from '../../db/database.ts';
import type { PartitionLease } from '../../kafka/lease.ts';
import { randomName } from '../support/stack.ts';
import { migratedDatabase, type TestDatabase } from './fixture.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await migratedDatabase('leases');
});
afterAll(async () => t?.close());

const long = { ttlMs: 60_000, graceMs: 1_000 };
const short = { ttlMs: 300, graceMs: 400 };
/** acquireLeases / renewLeases lock, so they take a transaction; each call here is its own, on one topic. */
const acquireLeases = async (db: Db, where: LeaseTarget, owner: string, timing: LeaseTiming) => (await db.transaction().execute((trx) => acquireIn(trx, [where], owner, timing)))[0]!;
const renewLeases = (db: Db, lease: HeldLease, ttlMs: number) => db.transaction().execute((trx) => renewIn(trx, [lease], ttlMs));
const releaseLeases = (db: Db, lease: HeldLease) => releaseIn(db, [lease]);
const target = (partitions: number[] = [0, 1, 2]): LeaseTarget => ({ mirror: randomName('m'), topic: 'orders', partitions });

describe('partition leases', () => {
  it('acquires free partitions at epoch 1; a second owner gets LEASE_HELD naming the holder', async () => {
    const where = target();
    const lease = await acquireLeases(t.db, where, 'worker-a', long);
    expect(lease.epochs).toEqual([1n, 1n, 1n]);
    expect(lease.expiresAt.getTime()).toBeGreaterThan(Date.now() + 50_000);
    await expect(acquireLeases(t.db, where, 'worker-b', long)).rejects.toMatchObject({ code: 'LEASE_HELD', message: expect.stringMatching(/held by worker-a \(epoch 1\)/) });
    await expect(acquireLeases(t.db, where, 'worker-a', long)).rejects.toMatchObject({ code: 'LEASE_HELD' });
  });

  it('is all or nothing: a set that overlaps a held partition takes none of them', async () => {
    const where = target([1]);
    await acquireLeases(t.db, where, 'worker-a', long);
    await expect(acquireLeases(t.db, { ...where, partitions: [0, 1, 2] }, 'worker-b', long)).rejects.toMatchObject({ code: 'LEASE_HELD' });
    const other = await acquireLeases(t.db, { ...where, partitions: [0, 2] }, 'worker-c', long);
    expect(other.epochs).toEqual([1n, 1n]);
  });

  it('lets exactly one of many concurrent acquirers win', async () => {
    const where = target([0, 1, 2, 3]);
    const pools = Array.from({ length: 5 }, () => t.connect());
    const results = await Promise.allSettled(pools.map((db, i) => acquireLeases(db, where, `worker-${i}`, long)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'LEASE_HELD' });
  });

  it("after expiry, waits out the holder's grace period; the new acquire increments the epoch and fences the old owner", async () => {
    const where = target([0, 1]);
    const old = await acquireLeases(t.db, where, 'worker-a', short);
    await sleep(short.ttlMs + 50);
    // Expired, but within the holder's grace; the acquirer's own (zero) grace does not matter.
    await expect(acquireLeases(t.db, where, 'worker-b', { ttlMs: 60_000, graceMs: 0 })).rejects.toMatchObject({ code: 'LEASE_HELD' });
    await expect(renewLeases(t.db, old, short.ttlMs)).rejects.toMatchObject({ code: 'LEASE_LOST', message: expect.stringMatching(/expired before it was renewed/) });
    await sleep(short.graceMs + 50);
    const taken = await acquireLeases(t.db, where, 'worker-b', long);
    expect(taken.epochs).toEqual([2n, 2n]);
    await expect(renewLeases(t.db, old, long.ttlMs)).rejects.toMatchObject({ code: 'LEASE_LOST', message: expect.stringMatching(/held by worker-b at epoch 2 \(ours was 1\)/) });
    await expect(releaseLeases(t.db, old)).rejects.toMatchObject({ code: 'LEASE_LOST' });
    await expect(acquireLeases(t.db, where, 'worker-c', long)).rejects.toMatchObject({ code: 'LEASE_HELD', message: expect.stringMatching(/worker-b/) }); // the fenced release freed nothing
  });

  it('renews only at the current epoch and releases for the next owner at once', async () => {
    const where = target([0]);
    const lease = await acquireLeases(t.db, where, 'worker-a', { ttlMs: 2_000, graceMs: 60_000 });
    const renewed = await renewLeases(t.db, lease, 30_000);
    expect(renewed.getTime()).toBeGreaterThan(lease.expiresAt.getTime());
    await expect(renewLeases(t.db, { ...lease, epochs: [7n] }, 30_000)).rejects.toMatchObject({ code: 'LEASE_LOST' });
    await expect(renewLeases(t.db, { ...lease, owner: 'worker-z' }, 30_000)).rejects.toMatchObject({ code: 'LEASE_LOST' });
    await releaseLeases(t.db, lease);
    const next = await acquireLeases(t.db, where, 'worker-b', { ttlMs: 2_000, graceMs: 60_000 }); // no grace wait after a release
    expect(next.epochs).toEqual([2n]);
  });
});

describe('createPartitionLease (the copier interface)', () => {
  it('waits for the holder to release, tracks validUntil, and reports LEASE_LOST once fenced', async () => {
    const t0 = target([0, 1]);
    const where = { mirror: t0.mirror, assignments: [{ topic: t0.topic, partitions: t0.partitions }] };
    const first: PartitionLease = createPartitionLease(t.db, { ...where, owner: 'copier-1', ...short, pollMs: 50 });
    const second: PartitionLease = createPartitionLease(t.db, { ...where, owner: 'copier-2', ttlMs: 1_000, graceMs: 300, pollMs: 50 });
    const before = Date.now();
    await first.acquire(AbortSignal.timeout(5_000));
    expect(first.validUntil()).toBeGreaterThanOrEqual(before + short.ttlMs);
    expect(first.validUntil()).toBeLessThanOrEqual(Date.now() + short.ttlMs);
    expect(first.renewEveryMs).toBe(100);
    expect(first.description).toContain('copier-1');

    let acquired = false;
    const waiting = second.acquire(AbortSignal.timeout(10_000)).then(() => (acquired = true));
    await sleep(150);
    expect(acquired).toBe(false);
    await first.renew();
    await first.release();
    expect(first.validUntil()).toBe(0);
    await waiting;
    expect(second.validUntil()).toBeGreaterThan(Date.now());

    // A waiting acquire observes its signal.
    const third = createPartitionLease(t.db, { ...where, owner: 'copier-3', ...short, pollMs: 50 });
    await expect(third.acquire(AbortSignal.timeout(200))).rejects.toMatchObject({ name: 'TimeoutError' });

    // second stops renewing; first takes over after second's ttl + grace; second is then fenced.
    const waitedFrom = Date.now();
    await first.acquire(AbortSignal.timeout(10_000));
    expect(Date.now() - waitedFrom).toBeGreaterThanOrEqual(800);
    await expect(second.renew()).rejects.toMatchObject({ code: 'LEASE_LOST' });
    expect(second.validUntil()).toBe(0);
  }, 30_000);

  it('leases several topics all or none: an owner of one of them keeps the whole set waiting', async () => {
    const mirror = randomName('m');
    const both = createPartitionLease(t.db, { mirror, assignments: [{ topic: 'b', partitions: [0] }, { topic: 'a', partitions: [0, 1] }], owner: 'both', ...short, pollMs: 50 });
    const onlyB = createPartitionLease(t.db, { mirror, assignments: [{ topic: 'b', partitions: [0] }], owner: 'only-b', ...short, pollMs: 50 });
    const onlyA = createPartitionLease(t.db, { mirror, assignments: [{ topic: 'a', partitions: [1] }], owner: 'only-a', ...short, pollMs: 50 });
    expect(both.description).toContain('2 topics (3 partitions)');
    await onlyB.acquire(AbortSignal.timeout(5_000));
    // 'both' cannot take topic a either while b is held: nothing is acquired partially.
    await expect(both.acquire(AbortSignal.timeout(300))).rejects.toMatchObject({ name: 'TimeoutError' });
    await onlyA.acquire(AbortSignal.timeout(1_000));
    await onlyA.release();
    await onlyB.release();
    await both.acquire(AbortSignal.timeout(5_000));
    await both.renew();
    await both.release();
    // Renewed and released together, and fenced together: a partition of one topic taken by
    // another owner fails the renewal of the whole set, naming that partition.
    await both.acquire(AbortSignal.timeout(5_000));
    await sql`update partition_leases set owner = 'thief', epoch = epoch + 1 where mirror = ${mirror} and topic = 'a' and partition = 1`.execute(t.db);
    await expect(both.renew()).rejects.toMatchObject({ code: 'LEASE_LOST', message: expect.stringMatching(/lease .*\/a\[0,1\].*partition 1 is now held by thief at epoch 4 \(ours was 3\)/) });
    const rows = await t.db.selectFrom('partition_leases').select(['topic', 'partition', 'owner']).where('mirror', '=', mirror).orderBy('topic').orderBy('partition').execute();
    expect(rows).toEqual([
      { topic: 'a', partition: 0, owner: 'both' },
      { topic: 'a', partition: 1, owner: 'thief' },
      { topic: 'b', partition: 0, owner: 'both' },
    ]);
  }, 30_000);
});
