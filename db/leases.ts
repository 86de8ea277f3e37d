// Write leases on mirror partitions with a fencing epoch (DESIGN §5.3): one writer per partition.
//   acquire  only when every partition asked for is free: never held, released, or expired for
//            longer than its holder's grace period; all or none; each acquire increments the epoch.
//   renew    only by the owner at the epoch it acquired, and only before expiry.
//   release  the same; frees the partitions at once (no grace wait for the next owner).
// A fenced owner gets LEASE_LOST. Expiry is judged by the database clock, so workers' clocks do
// not matter; validUntil() of the PartitionLease adapter is judged by the local clock, counted from
// before the request was sent, so it never runs past the database's view.
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { KmirrorError } from '../domain/errors.ts';
import type { PartitionLease } from '../kafka/lease.ts';
import type { Db, Trx } from './database.ts';

export interface LeaseTarget {
  readonly mirror: string;
  readonly topic: string;
  readonly partitions: readonly number[];
}

export interface HeldLease extends LeaseTarget {
  readonly owner: string;
  /** Fencing epoch per partition, in the order of `partitions`. */
  readonly epochs: readonly bigint[];
  readonly expiresAt: Date;
  /** Partitions taken from an owner whose lease had expired without a release (a takeover). */
  readonly takenOver: number;
}

export interface LeaseTiming {
  readonly ttlMs: number;
  /** How long after this owner's lease expires before another owner may take it; must exceed this
   *  owner's longest in-flight write (its produce request timeout). Stored with the lease. */
  readonly graceMs: number;
}

const interval = (ms: number) => sql`make_interval(secs => ${ms / 1000}::float8)`;

function describeTarget(t: LeaseTarget): string {
  const parts = [...t.partitions].sort((a, b) => a - b);
  return `${t.mirror}/${t.topic}[${parts.length > 6 ? `${parts.slice(0, 6).join(',')},… (${parts.length})` : parts.join(',')}]`;
}

function normalize(target: LeaseTarget): LeaseTarget {
  const partitions = [...new Set(target.partitions)].sort((a, b) => a - b);
  if (partitions.length === 0 || partitions.some((p) => !Number.isInteger(p) || p < 0)) {
    throw new KmirrorError('INVALID_ARGUMENT', `lease ${target.mirror}/${target.topic}: partitions must be a non-empty list of integers ≥ 0`);
  }
  return { mirror: target.mirror, topic: target.topic, partitions };
}

/** Take the lease on every partition of `target`, or throw LEASE_HELD (and take none: roll the
 *  transaction back). Locks the lease rows until `trx` ends. */
export async function acquireLeases(trx: Trx, target: LeaseTarget, owner: string, timing: LeaseTiming): Promise<HeldLease> {
  if (owner === '') throw new KmirrorError('INVALID_ARGUMENT', 'lease owner must not be empty');
  const t = normalize(target);
  await sql`
    insert into partition_leases (mirror, topic, partition, owner, epoch, expires_at, updated_at)
    select ${t.mirror}, ${t.topic}, p, null, 0, null, now() from unnest(${t.partitions}::int4[]) as p
    on conflict do nothing`.execute(trx);
  // Rows locked in partition order, so two acquirers of overlapping sets cannot deadlock.
  const { rows } = await sql<{ partition: number; owner: string | null; epoch: bigint; expires_at: Date | null; free: boolean; free_at: Date | null }>`
    select partition, owner, epoch, expires_at,
           owner is null or expires_at + grace_ms * interval '1 millisecond' < now() as free,
           expires_at + grace_ms * interval '1 millisecond' as free_at
    from partition_leases
    where mirror = ${t.mirror} and topic = ${t.topic} and partition = any(${t.partitions}::int4[])
    order by partition
    for update`.execute(trx);
  const held = rows.filter((r) => !r.free);
  if (held.length > 0) {
    const first = held[0]!;
    throw new KmirrorError(
      'LEASE_HELD',
      `lease ${describeTarget(t)}: partition ${first.partition} is held by ${first.owner} (epoch ${first.epoch}) until ${first.expires_at?.toISOString()}; free after ${first.free_at?.toISOString()}`,
      { holder: first.owner, epoch: first.epoch.toString(), freeAt: first.free_at?.toISOString() ?? null, held: held.length },
    );
  }
  const updated = await sql<{ partition: number; epoch: bigint; expires_at: Date }>`
    update partition_leases
    set owner = ${owner}, epoch = epoch + 1, expires_at = now() + ${interval(timing.ttlMs)}, grace_ms = ${Math.ceil(timing.graceMs)}, updated_at = now()
    where mirror = ${t.mirror} and topic = ${t.topic} and partition = any(${t.partitions}::int4[])
    returning partition, epoch, expires_at`.execute(trx);
  const byPartition = new Map(updated.rows.map((r) => [r.partition, r]));
  const takenOver = rows.filter((r) => r.owner !== null && r.owner !== owner).length;
  return { ...t, owner, epochs: t.partitions.map((p) => byPartition.get(p)!.epoch), expiresAt: updated.rows[0]!.expires_at, takenOver };
}

/** Extend a held lease; LEASE_LOST when any partition was fenced or expired (roll `trx` back then,
 *  so nothing is extended). */
export async function renewLeases(trx: Trx, lease: HeldLease, ttlMs: number): Promise<Date> {
  const { rows } = await sql<{ expires_at: Date }>`
    update partition_leases l set expires_at = now() + ${interval(ttlMs)}, updated_at = now()
    from unnest(${lease.partitions}::int4[], ${lease.epochs.map(String)}::int8[]) as h(partition, epoch)
    where l.mirror = ${lease.mirror} and l.topic = ${lease.topic} and l.partition = h.partition
      and l.epoch = h.epoch and l.owner = ${lease.owner} and l.expires_at > now()
    returning l.expires_at`.execute(trx);
  if (rows.length !== lease.partitions.length) throw await leaseLost(trx, lease, 'renew');
  return rows[0]!.expires_at;
}

/** Give a held lease up. Releases the partitions still held at their epoch; LEASE_LOST names any
 *  that were fenced meanwhile (those are left to their new owner). */
export async function releaseLeases(db: Db | Trx, lease: HeldLease): Promise<void> {
  const { rows } = await sql<{ partition: number }>`
    update partition_leases l set owner = null, expires_at = null, updated_at = now()
    from unnest(${lease.partitions}::int4[], ${lease.epochs.map(String)}::int8[]) as h(partition, epoch)
    where l.mirror = ${lease.mirror} and l.topic = ${lease.topic} and l.partition = h.partition
      and l.epoch = h.epoch and l.owner = ${lease.owner}
    returning l.partition`.execute(db);
  if (rows.length !== lease.partitions.length) throw await leaseLost(db, lease, 'release');
}

async function leaseLost(db: Db | Trx, lease: HeldLease, action: string): Promise<KmirrorError> {
  const { rows } = await sql<{ partition: number; owner: string | null; epoch: bigint; expired: boolean }>`
    select partition, owner, epoch, coalesce(expires_at <= now(), true) as expired from partition_leases
    where mirror = ${lease.mirror} and topic = ${lease.topic} and partition = any(${lease.partitions}::int4[])
    order by partition`.execute(db);
  const mine = new Map(lease.partitions.map((p, i) => [p, lease.epochs[i]!]));
  const lost = rows.find((r) => r.owner !== lease.owner || r.epoch !== mine.get(r.partition) || r.expired);
  const why =
    lost === undefined
      ? 'the lease rows are gone'
      : lost.owner === lease.owner && lost.epoch === mine.get(lost.partition)
        ? `partition ${lost.partition} expired before it was renewed`
        : `partition ${lost.partition} is now ${lost.owner === null ? 'released' : `held by ${lost.owner}`} at epoch ${lost.epoch} (ours was ${mine.get(lost.partition)})`;
  return new KmirrorError('LEASE_LOST', `cannot ${action} lease ${describeTarget(lease)} for ${lease.owner}: ${why}`, {
    owner: lease.owner,
    partition: lost?.partition ?? null,
  });
}

export interface PartitionLeaseOptions extends LeaseTiming {
  readonly mirror: string;
  /** The partitions, per topic, leased together (all or none). */
  readonly assignments: readonly { readonly topic: string; readonly partitions: readonly number[] }[];
  readonly owner: string;
  /** Default: a third of the time to live. */
  readonly renewEveryMs?: number;
  /** How often a waiting acquire tries again at most (default 1 s). */
  readonly pollMs?: number;
  /** Told how many partitions an acquire took over from an expired owner (metrics). */
  readonly onTakeover?: (partitions: number) => void;
}

/** The copier's PartitionLease (kafka/lease.ts) over these functions: every topic's partitions
 *  are acquired, renewed and released in one transaction each time, topics in name order (so two
 *  acquirers of overlapping sets cannot deadlock). */
export function createPartitionLease(db: Db, options: PartitionLeaseOptions): PartitionLease {
  const renewEveryMs = options.renewEveryMs ?? Math.floor(options.ttlMs / 3);
  const targets: LeaseTarget[] = [...options.assignments]
    .filter((a) => a.partitions.length > 0)
    .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0))
    .map((a) => normalize({ mirror: options.mirror, topic: a.topic, partitions: a.partitions }));
  const description =
    targets.length === 1 ? describeTarget(targets[0]!) : `${options.mirror}/${targets.length} topics (${targets.reduce((n, t) => n + t.partitions.length, 0)} partitions)`;
  if (targets.length === 0 || !(options.ttlMs > 0) || !(options.graceMs >= 0) || !(renewEveryMs > 0 && renewEveryMs < options.ttlMs)) {
    throw new KmirrorError('INVALID_CONFIG', `lease ${description}: need partitions, ttlMs > renewEveryMs > 0 and graceMs ≥ 0`);
  }
  const pollMs = options.pollMs ?? 1_000;
  let held: HeldLease[] | undefined;
  let validUntil = 0;
  const fenced = (err: unknown): never => {
    if (err instanceof KmirrorError && err.code === 'LEASE_LOST') {
      held = undefined;
      validUntil = 0;
    }
    throw err;
  };
  return {
    renewEveryMs,
    graceMs: options.graceMs,
    description: `${description} owner ${options.owner}`,
    async acquire(signal) {
      for (;;) {
        signal.throwIfAborted();
        const started = Date.now();
        try {
          held = await db.transaction().execute(async (trx) => {
            const leases: HeldLease[] = [];
            for (const target of targets) leases.push(await acquireLeases(trx, target, options.owner, options));
            return leases;
          });
          validUntil = started + options.ttlMs;
          options.onTakeover?.(held.reduce((n, l) => n + l.takenOver, 0));
          return;
        } catch (err) {
          if (!(err instanceof KmirrorError) || err.code !== 'LEASE_HELD') throw err;
          const freeAt = typeof err.details.freeAt === 'string' ? Date.parse(err.details.freeAt) : NaN;
          const wait = Number.isNaN(freeAt) ? pollMs : Math.min(pollMs, Math.max(10, freeAt - Date.now() + 10));
          // Rethrow the signal's own reason, as signal.throwIfAborted() does, not timers' AbortError.
          await sleep(wait, undefined, { signal }).catch((e: unknown) => {
            throw signal.aborted ? signal.reason : e;
          });
        }
      }
    },
    async renew() {
      if (held === undefined) throw new KmirrorError('LEASE_LOST', `lease ${description} is not held by ${options.owner}`);
      const started = Date.now();
      const leases = held;
      await db
        .transaction()
        .execute(async (trx) => {
          for (const lease of leases) await renewLeases(trx, lease, options.ttlMs);
        })
        .catch(fenced);
      validUntil = started + options.ttlMs;
    },
    async release() {
      const leases = held;
      held = undefined;
      validUntil = 0;
      if (leases !== undefined) {
        await db.transaction().execute(async (trx) => {
          for (const lease of leases) await releaseLeases(trx, lease);
        });
      }
    },
    validUntil: () => validUntil,
  };
}
