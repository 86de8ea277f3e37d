// Read one stream in version order.
import type { DomainEvent } from '../../domain/events.ts';
import type { Db, Trx } from '../database.ts';
import { toRecordedEvent, type RecordedEvent } from './types.ts';

export interface ReadStreamOptions {
  /** First version to read (default 1). */
  readonly fromVersion?: bigint;
  readonly limit?: number;
}

export async function readStream<E extends DomainEvent = DomainEvent>(db: Db | Trx, streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent<E>[]> {
  let query = db
    .selectFrom('events')
    .selectAll()
    .where('stream_id', '=', streamId)
    .where('stream_version', '>=', options.fromVersion ?? 1n)
    .orderBy('stream_version');
  if (options.limit !== undefined) query = query.limit(options.limit);
  return (await query.execute()).map((row) => toRecordedEvent<E>(row));
}
