// Whether the current stop of a partition recorded its final position (machines/partition.ts
// PartitionContext.finalPosition): a stop run again must not record writes the destination took
// after it was made writable as mirrored data.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('mirror_partitions')
    .addColumn('final_position', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('mirror_partitions').dropColumn('final_position').execute();
}
