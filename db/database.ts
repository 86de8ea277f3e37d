// The Postgres schema as kysely sees it. snake_case columns; repository functions map rows to
// camelCase domain values explicitly. int8 columns are read as bigint (db/connect.ts installs the
// parser) and jsonb columns are written as JSON text.
//
// Three kinds of table:
//   event store   events (append-only, hash-chained), streams (version per stream), event_chain
//                 (the single head row every append locks: global position + last hash)
//   projections   clusters, mirrors, mirror_topics, mirror_partitions: a fold of the events,
//                 written in the appending transaction and rebuildable from the events
//   state of record, not derived from events
//                 cluster_connections (sealed credentials), partition_leases (fencing epochs);
//                 a rebuild never touches them: a fencing epoch must never go backwards, and a
//                 credential must never be in the append-only log.
import type { ColumnType, Generated, Insertable, Kysely, Selectable, Transaction } from 'kysely';

/** jsonb: read as the parsed value, written as JSON text. */
export type Json<T> = ColumnType<T, string, string>;

export interface EventsTable {
  position: bigint;
  stream_id: string;
  stream_version: bigint;
  type: string;
  data: Json<Record<string, unknown>>;
  metadata: Json<Record<string, unknown>>;
  recorded_at: Date;
  /** sha256(previous event's hash ‖ canonical content); see db/event-store/hash.ts. */
  hash: Buffer;
}

export interface StreamsTable {
  stream_id: string;
  version: bigint;
  updated_at: Date;
}

export interface EventChainTable {
  id: number;
  last_position: bigint;
  last_hash: Buffer;
}

export interface ClustersTable {
  name: string;
  /** ConnectionDescription: never a secret. */
  connection: Json<Record<string, unknown>>;
  created_at: Date;
  updated_at: Date;
}

export interface ClusterConnectionsTable {
  cluster: string;
  /** Identifies the key that sealed the row (not the key): HMAC-SHA256(key, label), 16 hex digits. */
  key_id: string;
  iv: Buffer;
  ciphertext: Buffer;
  auth_tag: Buffer;
  updated_at: Date;
}

export interface MirrorsTable {
  name: string;
  state: string;
  source_cluster: string;
  destination_cluster: string;
  include: Json<string[]>;
  exclude: Json<string[]>;
  /** Consumer groups synced (MirrorGroupFilterChanged); default every group. */
  group_include: ColumnType<string[], string | undefined, string>;
  group_exclude: ColumnType<string[], string | undefined, string>;
  /** Principals whose topic ACLs are synced (MirrorAclFilterChanged); default none. */
  acl_include: ColumnType<string[], string | undefined, string>;
  acl_exclude: ColumnType<string[], string | undefined, string>;
  created_at: Date;
  updated_at: Date;
}

/** A topic ACL ACL sync granted on the mirror's destination and has not revoked since. */
export interface MirrorSyncedAclsTable {
  mirror: string;
  topic: string;
  principal: string;
  host: string;
  operation: string;
  permission: string;
}

export interface MirrorTopicsTable {
  mirror: string;
  topic: string;
  partition_count: number;
  created_at: Date;
}

export interface MirrorPartitionsTable {
  mirror: string;
  topic: string;
  partition: number;
  state: string;
  previous_state: string | null;
  retry_attempt: number;
  retryable: boolean | null;
  error_code: string | null;
  error_message: string | null;
  stop_mode: string | null;
  final_position: Generated<boolean>;
  last_mirrored_offset: bigint | null;
  last_mirrored_epoch: number | null;
  last_mirrored_checksum: string | null;
  updated_at: Date;
}

export interface PartitionLeasesTable {
  mirror: string;
  topic: string;
  partition: number;
  /** null: released (free at once). */
  owner: string | null;
  /** Fencing epoch: +1 on every acquire, never reset. */
  epoch: bigint;
  expires_at: Date | null;
  /** The holder's grace period: free again at expires_at + grace_ms. */
  grace_ms: ColumnType<number, number | undefined, number>;
  updated_at: Date;
}

export interface AclGrantsTable {
  principal: string;
  operation: string;
  resource_type: string;
  resource: string;
  granted_at: Date;
}

export interface Database {
  events: EventsTable;
  streams: StreamsTable;
  event_chain: EventChainTable;
  clusters: ClustersTable;
  cluster_connections: ClusterConnectionsTable;
  mirrors: MirrorsTable;
  mirror_topics: MirrorTopicsTable;
  mirror_synced_acls: MirrorSyncedAclsTable;
  mirror_partitions: MirrorPartitionsTable;
  partition_leases: PartitionLeasesTable;
  acl_grants: AclGrantsTable;
}

export type Db = Kysely<Database>;
export type Trx = Transaction<Database>;

export type EventRow = Selectable<EventsTable>;
export type ClusterRow = Selectable<ClustersTable>;
export type NewClusterRow = Insertable<ClustersTable>;
export type ClusterConnectionRow = Selectable<ClusterConnectionsTable>;
export type MirrorRow = Selectable<MirrorsTable>;
export type NewMirrorRow = Insertable<MirrorsTable>;
export type MirrorTopicRow = Selectable<MirrorTopicsTable>;
export type NewMirrorTopicRow = Insertable<MirrorTopicsTable>;
export type MirrorPartitionRow = Selectable<MirrorPartitionsTable>;
export type NewMirrorPartitionRow = Insertable<MirrorPartitionsTable>;
export type PartitionLeaseRow = Selectable<PartitionLeasesTable>;
