// Write leases for mirror partitions, with a fencing epoch (DESIGN §5.3). State of record, not a
// projection: a rebuild must never reset an epoch, or a fenced writer could match it again.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('partition_leases')
    .addColumn('mirror', 'text', (c) => c.notNull())
    .addColumn('topic', 'text', (c) => c.notNull())
    .addColumn('partition', 'int4', (c) => c.notNull())
    .addColumn('owner', 'text')
    .addColumn('epoch', 'int8', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('partition_leases_pk', ['mirror', 'topic', 'partition'])
    .addCheckConstraint('partition_leases_held', sql`(owner is null) = (expires_at is null)`)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('partition_leases').execute();
}
