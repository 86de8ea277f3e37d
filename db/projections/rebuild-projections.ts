// Rebuild every projection from the event log: truncate clusters, mirrors, mirror_topics,
// mirror_partitions, mirror_synced_acls and acl_grants, fold all streams with the same evolve and the same row rules as the live path,
// and write the rows. One transaction holding the event_chain lock, so no append interleaves and
// readers see either the old rows or the new ones. cluster_connections and partition_leases are
// state of record and are left alone. Reads the log in pages; memory holds the folded state (one
// status per partition), not the events.
import { sql } from 'kysely';
import { evolveCluster, initialCluster, type Cluster } from '../../domain/cluster.ts';
import { KmirrorError } from '../../domain/errors.ts';
import { fold, initialMirror, type Mirror } from '../../domain/mirror.ts';
import type { ClusterEvent, MirrorEvent } from '../../domain/events.ts';
import type { AuthorizationEvent } from '../../domain/authorization.ts';
import { writeGrantChanges } from '../acl-store.ts';
import type { Db } from '../database.ts';
import { readAll } from '../event-store/read-all.ts';
import { writeClusterRow } from './cluster-rows.ts';
import { collectMirrorChanges, emptyMirrorChanges, type MirrorChanges } from './mirror-rows.ts';
import { writeMirrorChanges } from './write-mirror.ts';

export interface RebuildReport {
  readonly events: bigint;
  readonly clusters: number;
  readonly mirrors: number;
}

export async function rebuildProjections(db: Db, options: { readonly pageSize?: number } = {}): Promise<RebuildReport> {
  const pageSize = options.pageSize ?? 10_000;
  return db.transaction().execute(async (trx) => {
    await sql`select 1 from event_chain where id = 1 for update`.execute(trx);
    const clusters = new Map<string, { state: Cluster; createdAt: Date; updatedAt: Date }>();
    const mirrors = new Map<string, { state: Mirror; changes: MirrorChanges }>();
    const grants: { event: AuthorizationEvent; at: Date }[] = [];
    let after = 0n;
    for (;;) {
      const page = await readAll(trx, { after, limit: pageSize });
      if (page.events.length === 0) break;
      after = page.last;
      // Consecutive events of one mirror are folded together: one copy per run, not per event.
      const runs: { name: string; events: MirrorEvent[] }[] = [];
      for (const event of page.events) {
        const [kind, name] = splitStreamId(event.streamId);
        if (kind === 'cluster') {
          const entry = clusters.get(name);
          const state = evolveCluster(entry?.state ?? initialCluster(name), event as ClusterEvent);
          // Registered again after a removal: a new registration, a new creation time.
          const createdAt = entry === undefined || entry.state.connection === null ? event.recordedAt : entry.createdAt;
          clusters.set(name, { state, createdAt, updatedAt: event.recordedAt });
          continue;
        }
        if (kind === 'acl') {
          grants.push({ event: event as AuthorizationEvent, at: event.recordedAt });
          continue;
        }
        let entry = mirrors.get(name);
        if (entry === undefined) mirrors.set(name, (entry = { state: initialMirror(name), changes: emptyMirrorChanges(null) }));
        collectMirrorChanges(entry.changes, event as MirrorEvent, event.recordedAt);
        const run = runs.at(-1);
        if (run?.name === name) run.events.push(event as MirrorEvent);
        else runs.push({ name, events: [event as MirrorEvent] });
      }
      for (const run of runs) {
        const entry = mirrors.get(run.name)!;
        entry.state = fold(entry.state, run.events);
      }
    }
    await sql`truncate mirror_partitions, mirror_topics, mirror_synced_acls, mirrors, clusters, acl_grants`.execute(trx);
    for (const { event, at } of grants) await writeGrantChanges(trx, [event], at);
    for (const { state, createdAt, updatedAt } of clusters.values()) await writeClusterRow(trx, state, createdAt, updatedAt);
    for (const { state, changes } of mirrors.values()) await writeMirrorChanges(trx, state, changes);
    return { events: after, clusters: clusters.size, mirrors: mirrors.size };
  });
}

function splitStreamId(streamId: string): ['cluster' | 'mirror' | 'acl', string] {
  const colon = streamId.indexOf(':');
  const kind = streamId.slice(0, colon);
  if (colon < 0 || (kind !== 'cluster' && kind !== 'mirror' && kind !== 'acl')) {
    throw new KmirrorError('EVENT_HISTORY_INVALID', `stream ${streamId} is not a cluster, mirror or acl stream`);
  }
  return [kind, streamId.slice(colon + 1)];
}
