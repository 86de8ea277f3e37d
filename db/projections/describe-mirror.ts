// `describe` for mirrors: the projection as plain JSON (offsets and epochs as decimal strings,
// times as ISO-8601), with each partition's write lease. Never holds a credential: mirrors name
// clusters, and clusters are described by db/cluster-store.ts describeCluster.
import type { RecordsLostPolicy } from '../../domain/commands.ts';
import { KmirrorError } from '../../domain/errors.ts';
import { mirrorStreamId } from '../../domain/events.ts';
import { partitionName } from '../../domain/names.ts';
import type { Db, Trx } from '../database.ts';
import { recordsLost } from './records-lost.ts';

export interface PartitionDescription {
  readonly partition: number;
  readonly state: string;
  readonly previousState: string | null;
  readonly retryAttempt: number;
  readonly retryable: boolean | null;
  readonly error: { readonly code: string; readonly message: string } | null;
  readonly stopMode: string | null;
  readonly lastMirrored: { readonly offset: string; readonly leaderEpoch: number; readonly checksum: string } | null;
  readonly lease: { readonly owner: string | null; readonly epoch: string; readonly expiresAt: string | null } | null;
  /** Records the source's retention removed before they were mirrored (PartitionRecordsLost), in
   *  this incarnation of the mirror. */
  readonly recordsLost: string;
  readonly updatedAt: string;
}

export interface MirrorDescription {
  readonly name: string;
  readonly state: string;
  readonly sourceCluster: string;
  readonly destinationCluster: string;
  readonly include: readonly string[];
  readonly exclude: readonly string[];
  readonly groupInclude: readonly string[];
  readonly groupExclude: readonly string[];
  /** Principals whose topic ACLs are synced (none: ACL sync off). */
  readonly aclInclude: readonly string[];
  readonly aclExclude: readonly string[];
  /** What the copier does when the source's retention removed records before they were mirrored. */
  readonly onRecordsLost: RecordsLostPolicy;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly topics: readonly { readonly topic: string; readonly partitionCount: number; readonly partitions: readonly PartitionDescription[] }[];
}

export async function describeMirror(db: Db | Trx, name: string, options: { readonly failedOnly?: boolean } = {}): Promise<MirrorDescription> {
  const mirror = await db.selectFrom('mirrors').selectAll().where('name', '=', name).executeTakeFirst();
  if (mirror === undefined) throw new KmirrorError('UNKNOWN_CLUSTER_MIRROR', `mirror ${name} does not exist`, { mirror: name });
  const topics = await db.selectFrom('mirror_topics').selectAll().where('mirror', '=', name).orderBy('topic').execute();
  let query = db
    .selectFrom('mirror_partitions as p')
    .leftJoin('partition_leases as l', (join) => join.onRef('l.mirror', '=', 'p.mirror').onRef('l.topic', '=', 'p.topic').onRef('l.partition', '=', 'p.partition'))
    .selectAll('p')
    .select(['l.owner as lease_owner', 'l.epoch as lease_epoch', 'l.expires_at as lease_expires_at'])
    .where('p.mirror', '=', name)
    .orderBy('p.topic')
    .orderBy('p.partition');
  if (options.failedOnly === true) query = query.where('p.state', '=', 'FAILED');
  const losses = await recordsLost(db, name);
  const byTopic = new Map<string, PartitionDescription[]>(topics.map((t) => [t.topic, []]));
  for (const r of await query.execute()) {
    byTopic.get(r.topic)?.push({
      partition: r.partition,
      state: r.state,
      previousState: r.previous_state,
      retryAttempt: r.retry_attempt,
      retryable: r.retryable,
      error: r.error_code === null ? null : { code: r.error_code, message: r.error_message ?? '' },
      stopMode: r.stop_mode,
      lastMirrored:
        r.last_mirrored_offset === null
          ? null
          : { offset: r.last_mirrored_offset.toString(), leaderEpoch: r.last_mirrored_epoch ?? -1, checksum: r.last_mirrored_checksum ?? '' },
      lease: r.lease_epoch === null ? null : { owner: r.lease_owner, epoch: r.lease_epoch.toString(), expiresAt: r.lease_expires_at?.toISOString() ?? null },
      recordsLost: (losses.lost.get(partitionName(r.topic, r.partition)) ?? 0n).toString(),
      updatedAt: r.updated_at.toISOString(),
    });
  }
  return {
    name: mirror.name,
    state: mirror.state,
    sourceCluster: mirror.source_cluster,
    destinationCluster: mirror.destination_cluster,
    include: mirror.include,
    exclude: mirror.exclude,
    groupInclude: mirror.group_include,
    groupExclude: mirror.group_exclude,
    aclInclude: mirror.acl_include,
    aclExclude: mirror.acl_exclude,
    onRecordsLost: losses.policy,
    createdAt: mirror.created_at.toISOString(),
    updatedAt: mirror.updated_at.toISOString(),
    topics: topics.map((t) => ({ topic: t.topic, partitionCount: t.partition_count, partitions: byTopic.get(t.topic) ?? [] })),
  };
}

export interface MirrorSummary {
  readonly name: string;
  readonly state: string;
  readonly sourceCluster: string;
  readonly destinationCluster: string;
  readonly topics: number;
  readonly partitions: number;
  /** Partition count per state. */
  readonly states: Readonly<Record<string, number>>;
}

/** Every mirror that is not deleted, with its partitions counted by state (one query each). */
export async function listMirrors(db: Db | Trx): Promise<MirrorSummary[]> {
  const mirrors = await db.selectFrom('mirrors').selectAll().where('state', '!=', 'deleted').orderBy('name').execute();
  const topics = await db.selectFrom('mirror_topics').select(['mirror', (eb) => eb.fn.countAll<string>().as('n')]).groupBy('mirror').execute();
  const states = await db.selectFrom('mirror_partitions').select(['mirror', 'state', (eb) => eb.fn.countAll<string>().as('n')]).groupBy(['mirror', 'state']).execute();
  return mirrors.map((m) => {
    const byState: Record<string, number> = {};
    for (const s of states) if (s.mirror === m.name) byState[s.state] = Number(s.n);
    return {
      name: m.name,
      state: m.state,
      sourceCluster: m.source_cluster,
      destinationCluster: m.destination_cluster,
      topics: Number(topics.find((t) => t.mirror === m.name)?.n ?? 0),
      partitions: Object.values(byState).reduce((a, b) => a + b, 0),
      states: byState,
    };
  });
}
