// The ClusterMirror permission model's grants (domain/authorization.ts): a projection of the
// `acl:grants` stream (AclGranted / AclRevoked), rebuilt with the others.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('acl_grants')
    .addColumn('principal', 'text', (c) => c.notNull())
    .addColumn('operation', 'text', (c) => c.notNull())
    .addColumn('resource_type', 'text', (c) => c.notNull())
    .addColumn('resource', 'text', (c) => c.notNull())
    .addColumn('granted_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('acl_grants_pkey', ['principal', 'operation', 'resource_type', 'resource'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('acl_grants').execute();
}
