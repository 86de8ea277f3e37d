// Load the part of a mirror aggregate a command needs (domain/mirror.ts topicsNeeded), from the
// projections, with the stream version to append against. Rows are turned back into chart
// statuses. The version is read first, from `streams`: the state read after it can only be as new
// or newer, and a newer state makes the append fail its expected-version check (then the command
// is decided again) rather than succeed on a stale decision.
import { KmirrorError } from '../../domain/errors.ts';
import { initialMirror, type Mirror, type MirrorTopic } from '../../domain/mirror.ts';
import { mirrorStreamId } from '../../domain/events.ts';
import type { PartitionStatus } from '../../machines/partition.ts';
import type { Db, MirrorRow, Trx } from '../database.ts';
import { mirrorFromRow, partitionStatusFromRow } from './mirror-rows.ts';

export interface LoadedMirror {
  readonly state: Mirror;
  /** 0n: no stream yet. */
  readonly version: bigint;
  readonly createdAt: Date | null;
}

export async function loadMirror(db: Db | Trx, name: string, topics: readonly string[] | 'all'): Promise<LoadedMirror> {
  // One statement, one snapshot: the version and the mirror row agree.
  const head = await db
    .selectNoFrom((eb) => [
      eb.selectFrom('streams').select('version').where('stream_id', '=', mirrorStreamId(name)).as('version'),
      eb.selectFrom('mirrors').select((m) => m.fn.toJson('mirrors').as('row')).where('name', '=', name).as('row'),
    ])
    .executeTakeFirstOrThrow();
  const version = head.version ?? 0n;
  if (head.row === null) return { state: initialMirror(name), version, createdAt: null };
  const row: MirrorRow = { ...head.row, created_at: new Date(head.row.created_at), updated_at: new Date(head.row.updated_at) };

  const map = new Map<string, MirrorTopic>();
  if (topics === 'all' || topics.length > 0) {
    let query = db
      .selectFrom('mirror_partitions')
      .select([
        'topic',
        'partition',
        'state',
        'previous_state',
        'retry_attempt',
        'retryable',
        'error_code',
        'error_message',
        'stop_mode',
        'final_position',
        'last_mirrored_offset',
        'last_mirrored_epoch',
        'last_mirrored_checksum',
      ])
      .where('mirror', '=', name)
      .orderBy('topic')
      .orderBy('partition');
    if (topics !== 'all') query = query.where('topic', 'in', topics);
    let current: PartitionStatus[] = [];
    for (const r of await query.execute()) {
      if (!map.has(r.topic)) map.set(r.topic, { partitions: (current = []) });
      if (r.partition !== current.length) {
        throw new KmirrorError('EVENT_HISTORY_INVALID', `mirror ${name}: projection of topic ${r.topic} lacks partition ${current.length}; rebuild the projections`);
      }
      current.push(partitionStatusFromRow(r));
    }
  }
  return { state: { ...mirrorFromRow(row), topics: map }, version, createdAt: row.created_at };
}
