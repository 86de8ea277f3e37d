// Write one mirror's projection changes: the mirror row, new topic rows, and the touched partition
// rows as one multi-row INSERT (partitions of new topics) and one multi-row UPDATE (the rest), both
// from unnest(…), so N partitions cost one or two statements, not N.
import { sql } from 'kysely';
import { KmirrorError } from '../../domain/errors.ts';
import type { Mirror } from '../../domain/mirror.ts';
import type { TopicAcl } from '../../domain/events.ts';
import type { NewMirrorPartitionRow, Trx } from '../database.ts';
import { partitionName } from '../../domain/names.ts';
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
        group_include: row.group_include!,
        group_exclude: row.group_exclude!,
        acl_include: row.acl_include!,
        acl_exclude: row.acl_exclude!,
        created_at: row.created_at,
        updated_at: row.updated_at,
      }),
    )
    .execute();
  if (changes.resetTopics) await trx.deleteFrom('mirror_topics').where('mirror', '=', mirror.name).execute();
  if (changes.resetTopics) await trx.deleteFrom('mirror_synced_acls').where('mirror', '=', mirror.name).execute();
  for (const { topic, granted, revoked } of changes.acls) {
    const row = (a: TopicAcl) => ({ mirror: mirror.name, topic, principal: a.principal, host: a.host, operation: a.operation, permission: a.permission });
    if (granted.length > 0) await trx.insertInto('mirror_synced_acls').values(granted.map(row)).onConflict((oc) => oc.doNothing()).execute();
    for (const a of revoked) {
      const r = row(a);
      await trx.deleteFrom('mirror_synced_acls').where('mirror', '=', r.mirror).where('topic', '=', topic).where('principal', '=', r.principal).where('host', '=', r.host).where('operation', '=', r.operation).where('permission', '=', r.permission).execute();
    }
  }
  if (changes.topics.size > 0) {
    await trx
      .insertInto('mirror_topics')
      .values([...changes.topics].map(([topic, t]) => ({ mirror: mirror.name, topic, partition_count: t.partitionCount, created_at: t.createdAt })))
      .execute();
  }
  const inserts: NewMirrorPartitionRow[] = [];
  const updates: NewMirrorPartitionRow[] = [];
  const grownNew = new Set<string>();
  for (const [topic, partitionCount] of changes.grown) {
    const stored = await trx.selectFrom('mirror_topics').select('partition_count').where('mirror', '=', mirror.name).where('topic', '=', topic).executeTakeFirst();
    if (stored === undefined) throw new KmirrorError('EVENT_HISTORY_INVALID', `mirror ${mirror.name}: topic ${topic} grew but has no projection row; rebuild the projections`);
    await trx.updateTable('mirror_topics').set({ partition_count: partitionCount }).where('mirror', '=', mirror.name).where('topic', '=', topic).execute();
    const statuses = mirror.topics.get(topic)?.partitions ?? [];
    for (let partition = stored.partition_count; partition < partitionCount; partition++) {
      inserts.push(partitionRow(mirror.name, topic, partition, statuses[partition]!, changes.updatedAt));
      grownNew.add(partitionName(topic, partition));
    }
  }
  for (const { topic, partition, at } of changes.partitions.values()) {
    const status = mirror.topics.get(topic)?.partitions[partition];
    if (status === undefined) continue; // touched, then removed by a later deletion in the same run
    if (grownNew.has(partitionName(topic, partition))) continue; // inserted above with its latest status
    (changes.resetTopics || changes.topics.has(topic) ? inserts : updates).push(partitionRow(mirror.name, topic, partition, status, at));
  }
  for (let i = 0; i < inserts.length; i += CHUNK) await insertPartitionRows(trx, mirror.name, inserts.slice(i, i + CHUNK));
  for (let i = 0; i < updates.length; i += CHUNK) {
    const chunk = updates.slice(i, i + CHUNK);
    const updated = await updatePartitionRows(trx, mirror.name, chunk);
    if (updated !== chunk.length) {
      throw new KmirrorError('EVENT_HISTORY_INVALID', `mirror ${mirror.name}: ${chunk.length - updated} partition rows are missing from the projection; rebuild the projections`);
    }
  }
}

/** The status columns of `rows` as arrays for unnest(…), in the column order of the statements below. */
function columns(rows: readonly NewMirrorPartitionRow[]) {
  const column = <K extends keyof NewMirrorPartitionRow>(key: K) => rows.map((r) => r[key] ?? null);
  return sql`unnest(
      ${column('topic')}::text[], ${column('partition')}::int4[], ${column('state')}::text[], ${column('previous_state')}::text[],
      ${column('retry_attempt')}::int4[], ${column('retryable')}::bool[], ${column('error_code')}::text[], ${column('error_message')}::text[],
      ${column('stop_mode')}::text[], ${column('final_position')}::bool[], ${column('last_mirrored_offset')}::int8[],
      ${column('last_mirrored_epoch')}::int4[], ${column('last_mirrored_checksum')}::text[], ${column('updated_at')}::timestamptz[]
    ) as u(topic, partition, state, previous_state, retry_attempt, retryable, error_code, error_message, stop_mode,
           final_position, last_mirrored_offset, last_mirrored_epoch, last_mirrored_checksum, updated_at)`;
}

async function insertPartitionRows(trx: Trx, mirror: string, rows: readonly NewMirrorPartitionRow[]): Promise<void> {
  await sql`
    insert into mirror_partitions (mirror, topic, partition, state, previous_state, retry_attempt, retryable, error_code, error_message,
                                   stop_mode, final_position, last_mirrored_offset, last_mirrored_epoch, last_mirrored_checksum, updated_at)
    select ${mirror}, u.* from ${columns(rows)}`.execute(trx);
}

async function updatePartitionRows(trx: Trx, mirror: string, rows: readonly NewMirrorPartitionRow[]): Promise<number> {
  const result = await sql`
    update mirror_partitions p set
      state = u.state, previous_state = u.previous_state, retry_attempt = u.retry_attempt, retryable = u.retryable,
      error_code = u.error_code, error_message = u.error_message, stop_mode = u.stop_mode, final_position = u.final_position,
      last_mirrored_offset = u.last_mirrored_offset, last_mirrored_epoch = u.last_mirrored_epoch,
      last_mirrored_checksum = u.last_mirrored_checksum, updated_at = u.updated_at
    from ${columns(rows)}
    where p.mirror = ${mirror} and p.topic = u.topic and p.partition = u.partition`.execute(trx);
  return Number(result.numAffectedRows ?? 0n);
}
