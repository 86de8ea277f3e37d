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

/** A partition's key in maps of several topics. */
const at = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

/** The partitions of several targets of one mirror, as parallel arrays for unnest(). */
function rows(targets: readonly LeaseTarget[]): { mirror: string; topics: string[]; partitions: number[] } {
  const mirror = targets[0]!.mirror;
  if (targets.some((t) => t.mirror !== mirror)) throw new KmirrorError('INVALID_ARGUMENT', `leases taken together must be of one mirror (${mirror})`);
  return { mirror, topics: targets.flatMap((t) => t.partitions.map(() => t.topic)), partitions: targets.flatMap((t) => [...t.partitions]) };
}

/**
 * Take the lease on every partition of every target (topics of one mirror), or throw LEASE_HELD
 * (and take none: roll the transaction back). Three statements whatever the number of topics (a
 * copier of 1,000 partitions in 100 topics took 300 round trips one topic at a time). Locks the
 * lease rows until `trx` ends, in (topic, partition) order, so two acquirers of overlapping sets
 * cannot deadlock.
 */
export async function acquireLeases(trx: Trx, targets: readonly LeaseTarget[], owner: string, timing: LeaseTiming): Promise<HeldLease[]> {
  if (owner === '') throw new KmirrorError('INVALID_ARGUMENT', 'lease owner must not be empty');
  const ts = targets.map(normalize);
  const { mirror, topics, partitions } = rows(ts);
  await sql`
    insert into partition_leases (mirror, topic, partition, owner, epoch, expires_at, updated_at)
    select ${mirror}, u.topic, u.partition, null, 0, null, now() from unnest(${topics}::text[], ${partitions}::int4[]) as u(topic, partition)
    on conflict do nothing`.execute(trx);
  const { rows: locked } = await sql<{ topic: string; partition: number; owner: string | null; epoch: bigint; expires_at: Date | null; free: boolean; free_at: Date | null }>`
    select l.topic, l.partition, l.owner, l.epoch, l.expires_at,
           l.owner is null or l.expires_at + l.grace_ms * interval '1 millisecond' < now() as free,
           l.expires_at + l.grace_ms * interval '1 millisecond' as free_at
    from partition_leases l join unnest(${topics}::text[], ${partitions}::int4[]) as u(topic, partition) on l.topic = u.topic and l.partition = u.partition
    where l.mirror = ${mirror}
    order by l.topic collate "C", l.partition
    for update of l`.execute(trx);
  const first = locked.find((r) => !r.free);
  if (first !== undefined) {
    const target = ts.find((t) => t.topic === first.topic)!;
    throw new KmirrorError(
      'LEASE_HELD',
      `lease ${describeTarget(target)}: partition ${first.partition} is held by ${first.owner} (epoch ${first.epoch}) until ${first.expires_at?.toISOString()}; free after ${first.free_at?.toISOString()}`,
      { holder: first.owner, epoch: first.epoch.toString(), freeAt: first.free_at?.toISOString() ?? null, held: locked.filter((r) => !r.free).length },
    );
  }
  const { rows: updated } = await sql<{ topic: string; partition: number; epoch: bigint; expires_at: Date }>`
    update partition_leases l
    set owner = ${owner}, epoch = l.epoch + 1, expires_at = now() + ${interval(timing.ttlMs)}, grace_ms = ${Math.ceil(timing.graceMs)}, updated_at = now()
    from unnest(${topics}::text[], ${partitions}::int4[]) as u(topic, partition)
    where l.mirror = ${mirror} and l.topic = u.topic and l.partition = u.partition
    returning l.topic, l.partition, l.epoch, l.expires_at`.execute(trx);
  const epochOf = new Map(updated.map((r) => [at(r.topic, r.partition), r.epoch]));
  const takenOver = (topic: string) => locked.filter((r) => r.topic === topic && r.owner !== null && r.owner !== owner).length;
  return ts.map((t) => ({ ...t, owner, epochs: t.partitions.map((p) => epochOf.get(at(t.topic, p))!), expiresAt: updated[0]!.expires_at, takenOver: takenOver(t.topic) }));
}

/** Extend held leases (one statement); LEASE_LOST when any partition was fenced or expired (roll
 *  `trx` back then, so nothing is extended). */
export async function renewLeases(trx: Trx, leases: readonly HeldLease[], ttlMs: number): Promise<Date> {
  const { mirror, topics, partitions } = rows(leases);
  const owner = leases[0]!.owner;
  const { rows: renewed } = await sql<{ expires_at: Date }>`
    update partition_leases l set expires_at = now() + ${interval(ttlMs)}, updated_at = now()
    from unnest(${topics}::text[], ${partitions}::int4[], ${leases.flatMap((l) => l.epochs.map(String))}::int8[]) as h(topic, partition, epoch)
    where l.mirror = ${mirror} and l.topic = h.topic and l.partition = h.partition
      and l.epoch = h.epoch and l.owner = ${owner} and l.expires_at > now()
    returning l.expires_at`.execute(trx);
  if (renewed.length !== partitions.length) throw await leaseLost(trx, leases, 'renew');
  return renewed[0]!.expires_at;
}

/** Give held leases up (one statement). Releases the partitions still held at their epoch;
 *  LEASE_LOST names any that were fenced meanwhile (those are left to their new owner). */
export async function releaseLeases(db: Db | Trx, leases: readonly HeldLease[]): Promise<void> {
  const { mirror, topics, partitions } = rows(leases);
  const { rows: released } = await sql<{ partition: number }>`
    update partition_leases l set owner = null, expires_at = null, updated_at = now()
    from unnest(${topics}::text[], ${partitions}::int4[], ${leases.flatMap((l) => l.epochs.map(String))}::int8[]) as h(topic, partition, epoch)
    where l.mirror = ${mirror} and l.topic = h.topic and l.partition = h.partition
      and l.epoch = h.epoch and l.owner = ${leases[0]!.owner}
    returning l.partition`.execute(db);
  if (released.length !== partitions.length) throw await leaseLost(db, leases, 'release');
}

async function leaseLost(db: Db | Trx, leases: readonly HeldLease[], action: string): Promise<KmirrorError> {
  const { mirror, topics, partitions } = rows(leases);
  const { rows: now } = await sql<{ topic: string; partition: number; owner: string | null; epoch: bigint; expired: boolean }>`
    select l.topic, l.partition, l.owner, l.epoch, coalesce(l.expires_at <= now(), true) as expired
    from partition_leases l join unnest(${topics}::text[], ${partitions}::int4[]) as u(topic, partition) on l.topic = u.topic and l.partition = u.partition
    where l.mirror = ${mirror}
    order by l.topic collate "C", l.partition`.execute(db);
  const owner = leases[0]!.owner;
  const mine = new Map(leases.flatMap((l) => l.partitions.map((p, i) => [at(l.topic, p), l.epochs[i]!] as const)));
  const lost = now.find((r) => r.owner !== owner || r.epoch !== mine.get(at(r.topic, r.partition)) || r.expired);
  const lease = leases.find((l) => l.topic === lost?.topic) ?? leases[0]!;
  const why =
    lost === undefined
      ? 'the lease rows are gone'
      : lost.owner === owner && lost.epoch === mine.get(at(lost.topic, lost.partition))
        ? `partition ${lost.partition} expired before it was renewed`
        : `partition ${lost.partition} is now ${lost.owner === null ? 'released' : `held by ${lost.owner}`} at epoch ${lost.epoch} (ours was ${mine.get(at(lost.topic, lost.partition))})`;
  return new KmirrorError('LEASE_LOST', `cannot ${action} lease ${describeTarget(lease)} for ${owner}: ${why}`, {
    owner,
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
 *  are acquired, renewed and released together, in one transaction each time. */
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
          held = await db.transaction().execute((trx) => acquireLeases(trx, targets, options.owner, options));
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
        .execute((trx) => renewLeases(trx, leases, options.ttlMs))
        .catch(fenced);
      validUntil = started + options.ttlMs;
    },
    async release() {
      const leases = held;
      held = undefined;
      validUntil = 0;
      if (leases !== undefined) {
        await releaseLeases(db, leases);
      }
    },
    validUntil: () => validUntil,
  };
}
