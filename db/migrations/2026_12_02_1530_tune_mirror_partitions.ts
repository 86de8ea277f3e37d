// Mass state changes (VK3: 50,000 partitions in one operation) rewrite every row of a mirror.
// An index on `state` would turn each of those updates into index inserts and rule out HOT updates;
// describe --failed reads one mirror's rows through the primary key prefix instead. Leaving 30%
// of each page free lets the rewritten row versions stay on their page (HOT).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('mirror_partitions_state').execute();
  await sql`alter table mirror_partitions set (fillfactor = 70)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table mirror_partitions reset (fillfactor)`.execute(db);
  await db.schema.createIndex('mirror_partitions_state').on('mirror_partitions').columns(['mirror', 'state']).execute();
}
