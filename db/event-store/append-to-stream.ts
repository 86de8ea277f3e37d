// Append events to one stream, in the caller's transaction, as three statements whatever the count:
//   1. lock the global head row (event_chain): last position and last hash;
//   2. read the stream's version and the clock — a separate statement on purpose: under READ
//      COMMITTED a statement that waited for the lock re-reads only the locked row, so a version
//      joined into statement 1 could predate the append that held the lock;
//   3. one INSERT … SELECT FROM unnest(…) for all events, with the stream and head updates as
//      data-modifying CTEs of the same statement.
// Why one global lock: positions are assigned from the head under it, so positions are gap-free
// and commit order equals position order. A follower reading `position > checkpoint` therefore
// never skips an event that a slower concurrent transaction commits later (it cannot: that
// transaction would hold the lock, and ours could not have taken a position). The same order makes
// the single global hash chain possible. The lock is held until commit, so keep the transaction short.
import { sql } from 'kysely';
import { ExpectedVersionConflictError, KmirrorError } from '../../domain/errors.ts';
import type { DomainEvent } from '../../domain/events.ts';
import type { Trx } from '../database.ts';
import { canonicalJson, chainHashes } from './hash.ts';
import { normalizeMetadata, type EventMetadata, type ExpectedVersion, type RecordedEvent } from './types.ts';

export interface AppendOptions {
  readonly expectedVersion: ExpectedVersion;
  readonly metadata: EventMetadata;
}

export interface AppendResult<E extends DomainEvent> {
  readonly streamId: string;
  /** The stream's version after the append. */
  readonly nextVersion: bigint;
  readonly firstPosition: bigint;
  readonly lastPosition: bigint;
  /** One recorded time for the whole append (the database clock, milliseconds). */
  readonly recordedAt: Date;
  readonly events: readonly RecordedEvent<E>[];
}

interface HeadRow {
  last_position: bigint;
  last_hash: Buffer;
}

export async function appendToStream<E extends DomainEvent>(
  trx: Trx,
  streamId: string,
  events: readonly E[],
  options: AppendOptions,
): Promise<AppendResult<E>> {
  if (events.length === 0) throw new KmirrorError('INVALID_ARGUMENT', `append to ${streamId}: no events`);
  const metadata = normalizeMetadata(options.metadata);
  const metadataJson = canonicalJson(metadata);

  const head = (await sql<HeadRow>`select last_position, last_hash from event_chain where id = 1 for update`.execute(trx)).rows[0];
  if (head === undefined) throw new KmirrorError('INVALID_CONFIG', 'event_chain has no head row: the event store schema is not migrated');
  const stream = (
    await sql<{ version: bigint | null; now: Date }>`
      select (select version from streams where stream_id = ${streamId}) as version, date_trunc('milliseconds', clock_timestamp()) as now`.execute(trx)
  ).rows[0]!;

  const current = stream.version ?? 0n;
  if (options.expectedVersion !== 'any' && options.expectedVersion !== current) {
    throw new ExpectedVersionConflictError(streamId, options.expectedVersion, current);
  }

  const recordedAt = stream.now;
  const firstPosition = head.last_position + 1n;
  const firstVersion = current + 1n;
  const types = events.map((e) => e.type);
  const datas = events.map((e) => canonicalJson(e.data));
  const hashes = chainHashes(head.last_hash, { firstPosition, streamId, firstVersion, metadataJson, recordedAt }, events.map((e, i) => ({ type: e.type, dataJson: datas[i]! })));
  const lastHash = Buffer.from(hashes.at(-1)!, 'hex');
  const recorded = events.map(
    (event, i) =>
      ({ ...event, metadata, streamId, streamVersion: firstVersion + BigInt(i), position: firstPosition + BigInt(i), recordedAt, hash: Buffer.from(hashes[i]!, 'hex') }) as RecordedEvent<E>,
  );
  const lastPosition = firstPosition + BigInt(events.length - 1);
  const nextVersion = current + BigInt(events.length);

  const inserted = (
    await sql<{ inserted: number }>`
      with inserted as (
        insert into events (position, stream_id, stream_version, type, data, metadata, recorded_at, hash)
        select ${firstPosition}::int8 + u.ord - 1, ${streamId}, ${firstVersion}::int8 + u.ord - 1, u.type, u.data::jsonb,
               ${metadataJson}::jsonb, ${recordedAt}::timestamptz, decode(u.hash, 'hex')
        from unnest(${types}::text[], ${datas}::text[], ${hashes}::text[]) with ordinality as u(type, data, hash, ord)
        returning 1
      ), stream as (
        insert into streams (stream_id, version, updated_at) values (${streamId}, ${nextVersion}::int8, ${recordedAt}::timestamptz)
        on conflict (stream_id) do update set version = excluded.version, updated_at = excluded.updated_at
      ), chain as (
        update event_chain set last_position = ${lastPosition}::int8, last_hash = ${lastHash} where id = 1
      )
      select count(*)::int4 as inserted from inserted`.execute(trx)
  ).rows[0]!.inserted;
  if (inserted !== events.length) {
    throw new KmirrorError('EVENT_CHAIN_BROKEN', `append to ${streamId}: inserted ${inserted} of ${events.length} events`);
  }

  return { streamId, nextVersion, firstPosition, lastPosition, recordedAt, events: recorded };
}
