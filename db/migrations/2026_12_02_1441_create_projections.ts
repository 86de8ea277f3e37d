// Projections of the event log: written in the appending transaction, rebuildable from the events
// (db/projections/rebuild-projections.ts truncates and refills exactly these four tables).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('clusters')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('connection', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('mirrors')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('state', 'text', (c) => c.notNull().check(sql`state in ('created', 'active', 'deleting', 'deleted')`))
    .addColumn('source_cluster', 'text', (c) => c.notNull())
    .addColumn('destination_cluster', 'text', (c) => c.notNull())
    .addColumn('include', 'jsonb', (c) => c.notNull())
    .addColumn('exclude', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('mirror_topics')
    .addColumn('mirror', 'text', (c) => c.notNull().references('mirrors.name').onDelete('cascade'))
    .addColumn('topic', 'text', (c) => c.notNull())
    .addColumn('partition_count', 'int4', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('mirror_topics_pk', ['mirror', 'topic'])
    .execute();

  await db.schema
    .createTable('mirror_partitions')
    .addColumn('mirror', 'text', (c) => c.notNull())
    .addColumn('topic', 'text', (c) => c.notNull())
    .addColumn('partition', 'int4', (c) => c.notNull())
    .addColumn('state', 'text', (c) =>
      c.notNull().check(sql`state in ('LOG_TRUNCATION', 'MIRRORING', 'PAUSING', 'PAUSED', 'STOPPING', 'STOPPED', 'FAILED')`),
    )
    .addColumn('previous_state', 'text')
    .addColumn('retry_attempt', 'int4', (c) => c.notNull())
    .addColumn('retryable', 'boolean')
    .addColumn('error_code', 'text')
    .addColumn('error_message', 'text')
    .addColumn('stop_mode', 'text')
    .addColumn('last_mirrored_offset', 'int8')
    .addColumn('last_mirrored_epoch', 'int4')
    .addColumn('last_mirrored_checksum', 'text')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('mirror_partitions_pk', ['mirror', 'topic', 'partition'])
    .addForeignKeyConstraint('mirror_partitions_topic_fk', ['mirror', 'topic'], 'mirror_topics', ['mirror', 'topic'], (fk) => fk.onDelete('cascade'))
    .execute();
  // `describe --failed` and the retry loop look partitions up by state.
  await db.schema.createIndex('mirror_partitions_state').on('mirror_partitions').columns(['mirror', 'state']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('mirror_partitions').execute();
  await db.schema.dropTable('mirror_topics').execute();
  await db.schema.dropTable('mirrors').execute();
  await db.schema.dropTable('clusters').execute();
}
