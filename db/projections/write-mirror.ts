// Write one mirror's projection changes: the mirror row, new topic rows, and every touched
// partition row as one multi-row upsert (unnest), so N partitions cost one statement, not N.
import { sql } from 'kysely';
import { KmirrorError } from '../../domain/errors.ts';
import type { Mirror } from '../../domain/mirror.ts';
import type { NewMirrorPartitionRow, Trx } from '../database.ts';
import { mirrorRow, partitionRow, type MirrorChanges } from './mirror-rows.ts';

/** Rows per upsert statement: large enough that a 50,000-partition change is one statement. */
const CHUNK = 50_000;

export async function writeMirrorChanges(trx: Trx, mirror: Mirror, changes: MirrorChanges): Promise<void> {
  if (changes.updatedAt === null) return;
  if (mirror.state === null || changes.createdAt === null) {
    throw new KmirrorError('EVENT_HISTORY_INVALID', `mirror ${mirror.name}: projection written before the mirror was created`);
  }
  const row = mirrorRow(mirror, changes.createdAt, changes.updatedAt);
  await trx
    .insertInto('mirrors')
    .values(row)
    .onConflict((oc) =>
      oc.column('name').doUpdateSet({
        state: row.state,
        source_cluster: row.source_cluster,
        destination_cluster: row.destination_cluster,
        include: row.include,
        exclude: row.exclude,
        created_at: row.created_at,
        updated_at: row.updated_at,
      }),
    )
    .execute();
  if (changes.resetTopics) await trx.deleteFrom('mirror_topics').where('mirror', '=', mirror.name).execute();
  if (changes.topics.size > 0) {
    await trx
      .insertInto('mirror_topics')
      .values([...changes.topics].map(([topic, t]) => ({ mirror: mirror.name, topic, partition_count: t.partitionCount, created_at: t.createdAt })))
      .execute();
  }
  const rows: NewMirrorPartitionRow[] = [];
  for (const { topic, partition, at } of changes.partitions.values()) {
    const status = mirror.topics.get(topic)?.partitions[partition];
    if (status === undefined) continue; // touched, then removed by a later deletion in the same run
    rows.push(partitionRow(mirror.name, topic, partition, status, at));
  }
  for (let i = 0; i < rows.length; i += CHUNK) await upsertPartitionRows(trx, mirror.name, rows.slice(i, i + CHUNK));
}

async function upsertPartitionRows(trx: Trx, mirror: string, rows: readonly NewMirrorPartitionRow[]): Promise<void> {
  const column = <K extends keyof NewMirrorPartitionRow>(key: K) => rows.map((r) => r[key] ?? null);
  await sql`
    insert into mirror_partitions (mirror, topic, partition, state, previous_state, retry_attempt, retryable, error_code, error_message,
                                   stop_mode, last_mirrored_offset, last_mirrored_epoch, last_mirrored_checksum, updated_at)
    select ${mirror}, u.* from unnest(
      ${column('topic')}::text[], ${column('partition')}::int4[], ${column('state')}::text[], ${column('previous_state')}::text[],
      ${column('retry_attempt')}::int4[], ${column('retryable')}::bool[], ${column('error_code')}::text[], ${column('error_message')}::text[],
      ${column('stop_mode')}::text[], ${column('last_mirrored_offset')}::int8[], ${column('last_mirrored_epoch')}::int4[],
      ${column('last_mirrored_checksum')}::text[], ${column('updated_at')}::timestamptz[]
    ) as u
    on conflict (mirror, topic, partition) do update set
      state = excluded.state, previous_state = excluded.previous_state, retry_attempt = excluded.retry_attempt,
      retryable = excluded.retryable, error_code = excluded.error_code, error_message = excluded.error_message,
      stop_mode = excluded.stop_mode, last_mirrored_offset = excluded.last_mirrored_offset,
      last_mirrored_epoch = excluded.last_mirrored_epoch, last_mirrored_checksum = excluded.last_mirrored_checksum,
      updated_at = excluded.updated_at`.execute(trx);
}
