// Whose topic ACLs a mirror syncs (MirrorAclFilterChanged): whole-name principal patterns, none by
// default (ACL sync off).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('mirrors')
    .addColumn('acl_include', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('acl_exclude', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('mirrors').dropColumn('acl_include').dropColumn('acl_exclude').execute();
}
