// The event store's vocabulary. Positions and versions are bigint (int8 in Postgres). Version 0
// means "no stream yet"; a stream with n events has version n.
import { KmirrorError } from '../../domain/errors.ts';
import type { DomainEvent } from '../../domain/events.ts';
import type { EventRow } from '../database.ts';

/** Who asked and why (DESIGN §8), plus the Temporal execution when the append runs in one. */
export interface EventMetadata {
  readonly actor: string;
  readonly reason?: string;
  readonly workflowId?: string;
  readonly runId?: string;
}

/** A version the stream must be at (0n: must not exist), or 'any' to skip the check. */
export type ExpectedVersion = bigint | 'any';

export interface Recorded {
  readonly metadata: EventMetadata;
  readonly streamId: string;
  readonly streamVersion: bigint;
  readonly position: bigint;
  readonly recordedAt: Date;
  readonly hash: Buffer;
}

/** An event as stored. Distributes over the union, so `type` still narrows `data`. */
export type RecordedEvent<E extends DomainEvent = DomainEvent> = E extends DomainEvent ? E & Recorded : never;

const MAX_ACTOR = 256;
const MAX_REASON = 4_096;

/** Validated metadata with absent fields left out (so its JSON is the same stored and hashed). */
export function normalizeMetadata(metadata: EventMetadata): EventMetadata {
  if (typeof metadata.actor !== 'string' || metadata.actor.trim() === '' || metadata.actor.length > MAX_ACTOR) {
    throw new KmirrorError('INVALID_ARGUMENT', `event metadata: actor must be a non-empty string of at most ${MAX_ACTOR} characters`);
  }
  if (metadata.reason !== undefined && metadata.reason.length > MAX_REASON) {
    throw new KmirrorError('INVALID_ARGUMENT', `event metadata: reason is longer than ${MAX_REASON} characters`);
  }
  return {
    actor: metadata.actor,
    ...(metadata.reason === undefined ? {} : { reason: metadata.reason }),
    ...(metadata.workflowId === undefined ? {} : { workflowId: metadata.workflowId }),
    ...(metadata.runId === undefined ? {} : { runId: metadata.runId }),
  };
}

export function toRecordedEvent<E extends DomainEvent = DomainEvent>(row: EventRow): RecordedEvent<E> {
  return {
    type: row.type,
    data: row.data,
    metadata: row.metadata as unknown as EventMetadata,
    streamId: row.stream_id,
    streamVersion: row.stream_version,
    position: row.position,
    recordedAt: row.recorded_at,
    hash: row.hash,
  } as RecordedEvent<E>;
}
