// Sealed cluster connections (AES-256-GCM). State of record, not a projection: credentials never
// enter the append-only log, so they can be rotated or erased. No foreign key to clusters, so a
// projection rebuild (which truncates clusters) cannot cascade into it.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('cluster_connections')
    .addColumn('cluster', 'text', (c) => c.primaryKey())
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('iv', 'bytea', (c) => c.notNull())
    .addColumn('ciphertext', 'bytea', (c) => c.notNull())
    .addColumn('auth_tag', 'bytea', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('cluster_connections').execute();
}
