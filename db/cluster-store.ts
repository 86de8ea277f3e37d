// Clusters: register and change connections (events carry only the description; the full
// connection is sealed into cluster_connections in the same transaction), describe without
// secrets, and open the sealed connection for the code that must connect.
import { decideCluster, evolveCluster } from '../domain/cluster.ts';
import { KmirrorError } from '../domain/errors.ts';
import { clusterStreamId } from '../domain/events.ts';
import { describeConnection, type ClusterConnection, type ConnectionDescription } from '../domain/connection.ts';
import type { Db, Trx } from './database.ts';
import { handleCommand, type CommandResult } from './command-handler.ts';
import type { EventMetadata } from './event-store/types.ts';
import { loadCluster, writeClusterRow } from './projections/cluster-rows.ts';
import { openConnection, sealConnection } from './sealed-connection.ts';

export interface ClusterInput {
  readonly cluster: string;
  readonly connection: ClusterConnection;
}

/** Plain JSON, safe for logs, CLI output and Temporal payloads. */
export interface ClusterDescription {
  readonly name: string;
  readonly connection: ConnectionDescription;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export function registerCluster(db: Db, secretKey: Buffer, input: ClusterInput, metadata: EventMetadata): Promise<CommandResult> {
  return storeCluster(db, secretKey, 'RegisterCluster', input, metadata);
}

export function changeClusterConnection(db: Db, secretKey: Buffer, input: ClusterInput, metadata: EventMetadata): Promise<CommandResult> {
  return storeCluster(db, secretKey, 'ChangeClusterConnection', input, metadata);
}

function storeCluster(db: Db, secretKey: Buffer, type: 'RegisterCluster' | 'ChangeClusterConnection', input: ClusterInput, metadata: EventMetadata): Promise<CommandResult> {
  const sealed = sealConnection(secretKey, input.cluster, input.connection);
  return handleCommand(
    db,
    {
      streamId: clusterStreamId(input.cluster),
      async load(trx) {
        await lockClusterRow(trx, input.cluster);
        return loadCluster(trx, input.cluster);
      },
      decide: (loaded) => decideCluster({ type, cluster: input.cluster, connection: describeConnection(input.connection) }, loaded.state),
      async project(trx, loaded, appended) {
        const state = appended.events.reduce(evolveCluster, loaded.state);
        await writeClusterRow(trx, state, loaded.createdAt ?? appended.recordedAt, appended.recordedAt);
        await upsertSealed(trx, input.cluster, sealed, appended.recordedAt);
      },
    },
    metadata,
  );
}

/** Forget a registered cluster: its row and its sealed connection are deleted (the events keep
 *  the history). CLUSTER_IN_USE while a mirror that is not deleted reads from or writes to it. */
export function removeCluster(db: Db, cluster: string, metadata: EventMetadata): Promise<CommandResult> {
  return handleCommand(
    db,
    {
      streamId: clusterStreamId(cluster),
      async load(trx) {
        // A mirror being created with this cluster holds a shared lock on its row (mirror-store):
        // either that creation commits first and is seen here, or it waits and finds the cluster gone.
        await lockClusterRow(trx, cluster);
        const using = await trx
          .selectFrom('mirrors')
          .select('name')
          .where('state', '!=', 'deleted')
          .where((eb) => eb.or([eb('source_cluster', '=', cluster), eb('destination_cluster', '=', cluster)]))
          .orderBy('name')
          .execute();
        return { ...(await loadCluster(trx, cluster)), mirrorsUsing: using.map((r) => r.name) };
      },
      decide: (loaded) => decideCluster({ type: 'RemoveCluster', cluster }, loaded.state, loaded.mirrorsUsing),
      async project(trx, loaded, appended) {
        const state = appended.events.reduce(evolveCluster, loaded.state);
        await writeClusterRow(trx, state, loaded.createdAt ?? appended.recordedAt, appended.recordedAt);
        await trx.deleteFrom('cluster_connections').where('cluster', '=', cluster).execute();
      },
    },
    metadata,
  );
}

/** Every cluster command locks the cluster's row before it appends to the event log (CreateMirror
 *  takes a shared lock on it first too): one lock order, so they never deadlock each other. */
async function lockClusterRow(trx: Trx, cluster: string): Promise<void> {
  await trx.selectFrom('clusters').select('name').where('name', '=', cluster).forUpdate().execute();
}

async function upsertSealed(trx: Trx, cluster: string, sealed: ReturnType<typeof sealConnection>, at: Date): Promise<void> {
  const row = { key_id: sealed.keyId, iv: sealed.iv, ciphertext: sealed.ciphertext, auth_tag: sealed.authTag, updated_at: at };
  await trx
    .insertInto('cluster_connections')
    .values({ cluster, ...row })
    .onConflict((oc) => oc.column('cluster').doUpdateSet(row))
    .execute();
}

export async function describeCluster(db: Db | Trx, name: string): Promise<ClusterDescription> {
  const row = await db.selectFrom('clusters').selectAll().where('name', '=', name).executeTakeFirst();
  if (row === undefined) throw new KmirrorError('UNKNOWN_CLUSTER', `cluster ${name} is not registered`, { cluster: name });
  return describeRow(row);
}

export async function listClusters(db: Db | Trx): Promise<ClusterDescription[]> {
  return (await db.selectFrom('clusters').selectAll().orderBy('name').execute()).map(describeRow);
}

function describeRow(row: { name: string; connection: Record<string, unknown>; created_at: Date; updated_at: Date }): ClusterDescription {
  return {
    name: row.name,
    connection: row.connection as unknown as ConnectionDescription,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** The full connection, credentials included: for the Kafka edge only, never to be persisted or
 *  sent to Temporal. Fails with SECRET_KEY_INVALID (naming KMIRROR_SECRET_KEY) under a wrong key. */
export async function readClusterConnection(db: Db | Trx, secretKey: Buffer, name: string): Promise<ClusterConnection> {
  const row = await db.selectFrom('cluster_connections').selectAll().where('cluster', '=', name).executeTakeFirst();
  if (row === undefined) throw new KmirrorError('UNKNOWN_CLUSTER', `cluster ${name} is not registered`, { cluster: name });
  return openConnection(secretKey, name, { keyId: row.key_id, iv: row.iv, ciphertext: row.ciphertext, authTag: row.auth_tag });
}
