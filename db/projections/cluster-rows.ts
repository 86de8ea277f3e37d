// The clusters projection: one row per registered cluster, with the connection's non-secret
// description. Shared by the live path and rebuildProjections.
import type { Cluster } from '../../domain/cluster.ts';
import type { ConnectionDescription } from '../../domain/connection.ts';
import type { Db, Trx } from '../database.ts';
import { clusterStreamId } from '../../domain/events.ts';

export interface LoadedCluster {
  readonly state: Cluster;
  readonly version: bigint;
  readonly createdAt: Date | null;
}

export async function loadCluster(db: Db | Trx, name: string): Promise<LoadedCluster> {
  // Version first, as in load-mirror.ts.
  const stream = await db.selectFrom('streams').select('version').where('stream_id', '=', clusterStreamId(name)).executeTakeFirst();
  const row = await db.selectFrom('clusters').selectAll().where('name', '=', name).executeTakeFirst();
  return {
    state: { name, connection: row === undefined ? null : (row.connection as unknown as ConnectionDescription) },
    version: stream?.version ?? 0n,
    createdAt: row?.created_at ?? null,
  };
}

/** The cluster's row, or none once it was removed. */
export async function writeClusterRow(trx: Trx, cluster: Cluster, createdAt: Date, updatedAt: Date): Promise<void> {
  if (cluster.connection === null) {
    await trx.deleteFrom('clusters').where('name', '=', cluster.name).execute();
    return;
  }
  const connection = JSON.stringify(cluster.connection);
  await trx
    .insertInto('clusters')
    .values({ name: cluster.name, connection, created_at: createdAt, updated_at: updatedAt })
    .onConflict((oc) => oc.column('name').doUpdateSet({ connection, created_at: createdAt, updated_at: updatedAt }))
    .execute();
}
