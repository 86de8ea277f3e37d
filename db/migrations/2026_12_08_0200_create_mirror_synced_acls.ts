// The topic ACLs kmirror's ACL sync granted on a mirror's destination and has not revoked since
// (MirrorTopicAclsSynced): ACL sync revokes only these, never an ACL someone else made.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('mirror_synced_acls')
    .addColumn('mirror', 'text', (c) => c.notNull())
    .addColumn('topic', 'text', (c) => c.notNull())
    .addColumn('principal', 'text', (c) => c.notNull())
    .addColumn('host', 'text', (c) => c.notNull())
    .addColumn('operation', 'text', (c) => c.notNull())
    .addColumn('permission', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('mirror_synced_acls_pk', ['mirror', 'topic', 'principal', 'host', 'operation', 'permission'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('mirror_synced_acls').execute();
}
