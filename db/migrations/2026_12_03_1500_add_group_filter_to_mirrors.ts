// Which consumer groups a mirror syncs (MirrorGroupFilterChanged): whole-name patterns, every group
// by default.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('mirrors')
    .addColumn('group_include', 'jsonb', (c) => c.notNull().defaultTo(sql`'[".*"]'::jsonb`))
    .addColumn('group_exclude', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('mirrors').dropColumn('group_include').dropColumn('group_exclude').execute();
}
