// Kafka clients for the clusters a worker talks to, by cluster name. The worker unseals each
// cluster's connection from Postgres itself (DESIGN §8): activities receive names, never
// credentials. One kafkajs client, one admin and one raw session per cluster are shared by every
// activity of the process; a changed connection (ClusterConnectionChanged) replaces them.
import type { Admin, Kafka } from 'kafkajs';
import type { Db } from '../db/database.ts';
import { readClusterConnection } from '../db/cluster-store.ts';
import { KmirrorError } from '../domain/errors.ts';
import { describeConnection, type ConnectionDescription } from '../domain/connection.ts';
import { createKafka, type KafkaClientOptions } from '../kafka/connection.ts';
import { kafkaFailure } from '../kafka/errors.ts';
import { RawCluster } from '../kafka/protocol.ts';

export interface ClusterClient {
  readonly name: string;
  readonly description: ConnectionDescription;
  /** `User:<sasl username>` when the connection authenticates, else undefined (ANONYMOUS). */
  readonly principal: string | undefined;
  readonly kafka: Kafka;
  /** Connected. */
  readonly admin: Admin;
  readonly raw: RawCluster;
}

interface Entry {
  readonly updatedAt: number;
  readonly client: Promise<ClusterClient>;
}

export interface MirrorClusters {
  readonly mirror: string;
  readonly state: string;
  readonly sourceCluster: string;
  readonly destinationCluster: string;
}

export class ClusterClients {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly db: Db,
    private readonly secretKey: Buffer,
    private readonly options: KafkaClientOptions = { retries: 2, connectionTimeoutMs: 5_000, requestTimeoutMs: 30_000 },
  ) {}

  /** The clusters a mirror links; UNKNOWN_CLUSTER_MIRROR when it does not exist (or was deleted). */
  async mirror(name: string): Promise<MirrorClusters> {
    const row = await this.db.selectFrom('mirrors').select(['name', 'state', 'source_cluster', 'destination_cluster']).where('name', '=', name).executeTakeFirst();
    if (row === undefined || row.state === 'deleted') throw new KmirrorError('UNKNOWN_CLUSTER_MIRROR', `mirror ${name} does not exist`, { mirror: name });
    return { mirror: row.name, state: row.state, sourceCluster: row.source_cluster, destinationCluster: row.destination_cluster };
  }

  /** The cluster's clients, connected; UNKNOWN_CLUSTER when not registered, CLUSTER_UNREACHABLE
   *  when it does not answer. */
  async get(name: string): Promise<ClusterClient> {
    const row = await this.db.selectFrom('clusters').select('updated_at').where('name', '=', name).executeTakeFirst();
    if (row === undefined) throw new KmirrorError('UNKNOWN_CLUSTER', `cluster ${name} is not registered`, { cluster: name });
    const updatedAt = row.updated_at.getTime();
    const cached = this.entries.get(name);
    if (cached !== undefined && cached.updatedAt === updatedAt) {
      try {
        return await cached.client;
      } catch {
        // a failed connect is not cached: try again below
      }
    }
    if (cached !== undefined) void this.dispose(cached);
    const client = this.open(name);
    this.entries.set(name, { updatedAt, client });
    client.catch(() => {
      if (this.entries.get(name)?.client === client) this.entries.delete(name);
    });
    return client;
  }

  private async open(name: string): Promise<ClusterClient> {
    const connection = await readClusterConnection(this.db, this.secretKey, name);
    const kafka = createKafka({ ...connection, clientId: 'kmirror' }, this.options);
    const admin = kafka.admin();
    const raw = new RawCluster(kafka);
    try {
      await admin.connect();
      await raw.connect();
    } catch (err) {
      await Promise.allSettled([admin.disconnect(), raw.close()]);
      throw kafkaFailure(err, `cannot connect to cluster ${name} (${connection.bootstrap.join(',')})`);
    }
    return {
      name,
      description: describeConnection(connection),
      principal: connection.sasl === undefined ? undefined : `User:${connection.sasl.username}`,
      kafka,
      admin,
      raw,
    };
  }

  private async dispose(entry: Entry): Promise<void> {
    const client = await entry.client.catch(() => undefined);
    if (client !== undefined) await Promise.allSettled([client.admin.disconnect(), client.raw.close()]);
  }

  async close(): Promise<void> {
    const entries = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(entries.map((e) => this.dispose(e)));
  }
}
