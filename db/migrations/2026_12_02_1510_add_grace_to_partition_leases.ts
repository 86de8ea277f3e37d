// The grace period belongs to the holder (it must exceed the holder's produce timeout), so it is
// stored with the lease instead of being chosen by whoever tries to take it over.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('partition_leases').addColumn('grace_ms', 'int4', (c) => c.notNull().defaultTo(0)).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('partition_leases').dropColumn('grace_ms').execute();
}
