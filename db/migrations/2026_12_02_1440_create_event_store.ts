// The event store: an append-only, hash-chained log with a global position and a version per stream.
// Appends serialise on the single event_chain row (see db/event-store/append-to-stream.ts), which
// holds the global head: the last position and the last hash.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('events')
    .addColumn('position', 'int8', (c) => c.primaryKey())
    .addColumn('stream_id', 'text', (c) => c.notNull())
    .addColumn('stream_version', 'int8', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('data', 'jsonb', (c) => c.notNull())
    .addColumn('metadata', 'jsonb', (c) => c.notNull())
    .addColumn('recorded_at', 'timestamptz', (c) => c.notNull())
    .addColumn('hash', 'bytea', (c) => c.notNull())
    .addUniqueConstraint('events_stream_version_unique', ['stream_id', 'stream_version'])
    .addCheckConstraint('events_position_positive', sql`position > 0 and stream_version > 0`)
    .execute();

  await db.schema
    .createTable('streams')
    .addColumn('stream_id', 'text', (c) => c.primaryKey())
    .addColumn('version', 'int8', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('event_chain')
    .addColumn('id', 'int2', (c) => c.primaryKey().check(sql`id = 1`))
    .addColumn('last_position', 'int8', (c) => c.notNull())
    .addColumn('last_hash', 'bytea', (c) => c.notNull())
    .execute();
  await sql`insert into event_chain (id, last_position, last_hash) values (1, 0, ${Buffer.alloc(32)})`.execute(db);

  // Append-only, enforced by the database and not only by the code that writes it.
  await sql`
    create function events_refuse_change() returns trigger language plpgsql as $$
    begin
      raise exception 'events is append-only: % refused', tg_op using errcode = 'insufficient_privilege';
    end $$`.execute(db);
  await sql`create trigger events_append_only before update or delete on events for each row execute function events_refuse_change()`.execute(db);
  await sql`create trigger events_no_truncate before truncate on events for each statement execute function events_refuse_change()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('event_chain').execute();
  await db.schema.dropTable('streams').execute();
  await db.schema.dropTable('events').execute();
  await sql`drop function events_refuse_change()`.execute(db);
}
