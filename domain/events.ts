// Domain events: past tense, plain JSON (they are hashed, stored as jsonb and may cross Temporal).
// Offsets are decimal strings. No event carries a credential: a cluster's connection appears only as
// its non-secret description. docs/events.md documents every type and its JSON shape.
import type { AuthorizationEvent } from './authorization.ts';
import type { RecordsLostPolicy } from './commands.ts';
import type { ConnectionDescription } from './connection.ts';
import type { RetryTrigger, StopMode } from '../machines/partition.ts';

export interface Event<Type extends string, Data extends object> {
  readonly type: Type;
  readonly data: Data;
}

export interface PartitionRef {
  readonly topic: string;
  readonly partition: number;
}

export type ClusterRegistered = Event<'ClusterRegistered', { readonly cluster: string; readonly connection: ConnectionDescription }>;
/** The connection (and so possibly its credentials) was replaced; the description is the new one. */
export type ClusterConnectionChanged = Event<'ClusterConnectionChanged', { readonly cluster: string; readonly connection: ConnectionDescription }>;
export type ClusterRemoved = Event<'ClusterRemoved', { readonly cluster: string }>;
export type ClusterEvent = ClusterRegistered | ClusterConnectionChanged | ClusterRemoved;

/** onRecordsLost is absent on mirrors created before the setting existed (= `continue`). */
export type MirrorCreated = Event<'MirrorCreated', { readonly mirror: string; readonly sourceCluster: string; readonly destinationCluster: string; readonly onRecordsLost?: RecordsLostPolicy }>;
/** The include/exclude patterns kept for auto-discovery of new source topics. */
export type MirrorTopicFilterChanged = Event<'MirrorTopicFilterChanged', { readonly include: readonly string[]; readonly exclude: readonly string[] }>;
/** A topic joined the mirror; all its partitions start in LOG_TRUNCATION. */
export type MirrorTopicAdded = Event<'MirrorTopicAdded', { readonly topic: string; readonly partitionCount: number }>;
/** A failback's decision for one topic of a failed-over mirror (DESIGN §6): per partition the old
 *  primary's end against the recorded last mirrored offset, and what was done — continue from there,
 *  or recreate the topic on the old primary (its divergent tail archived to `archiveTopic`, or
 *  discarded when that is null and a tail existed). */
export type FailbackTopicPrepared = Event<
  'FailbackTopicPrepared',
  {
    readonly topic: string;
    readonly reverseMirror: string;
    readonly action: 'continue' | 'recreate';
    readonly archiveTopic: string | null;
    /** The new primary's partition count (absent in events before 2026-12-07). */
    readonly partitionCount?: number;
    readonly partitions: readonly {
      readonly partition: number;
      readonly lastMirrored: string | null;
      /** Absent in events before 2026-12-07. */
      readonly oldPrimaryStart?: string;
      readonly oldPrimaryEnd: string;
      readonly reason: string;
      readonly divergent: { readonly from: string; readonly to: string; readonly records: number | null } | null;
    }[];
  }
>;
/** The consumer groups whose offsets the mirror syncs (whole-name patterns; default: every group). */
export type MirrorGroupFilterChanged = Event<'MirrorGroupFilterChanged', { readonly include: readonly string[]; readonly exclude: readonly string[] }>;
/** An operator let the ISR wait of these topics end although replicas are missing (the event's
 *  metadata holds who and why); waits that began before it are released. */
export type IsrWaitOverridden = Event<'IsrWaitOverridden', { readonly topics: readonly string[] }>;
/** The source topic grew: partitions [previous count, partitionCount) join, in LOG_TRUNCATION. */
export type MirrorTopicGrown = Event<'MirrorTopicGrown', { readonly topic: string; readonly partitionCount: number }>;
/** The runner brought the destination topic's configs in step with the source topic's (config
 *  sync): `set` the values it wrote, `removed` the configs it dropped (no longer set on the source). */
export type MirrorTopicConfigsSynced = Event<'MirrorTopicConfigsSynced', { readonly topic: string; readonly set: Readonly<Record<string, string>>; readonly removed: readonly string[] }>;
/** The ACL operations a topic ACL can name (Kafka's AclOperation), by name. */
export const TOPIC_ACL_OPERATIONS = ['ALL', 'READ', 'WRITE', 'CREATE', 'DELETE', 'ALTER', 'DESCRIBE', 'DESCRIBE_CONFIGS', 'ALTER_CONFIGS'] as const;
export type TopicAclOperation = (typeof TOPIC_ACL_OPERATIONS)[number];
/** One ACL on one topic (a principal is a name, never a credential). */
export interface TopicAcl {
  readonly principal: string;
  readonly host: string;
  readonly operation: TopicAclOperation;
  readonly permission: 'ALLOW' | 'DENY';
}
/** Whose topic ACLs the mirror syncs: principals whose whole name (e.g. `User:alice`) matches an
 *  include pattern and no exclude pattern; no include pattern (the default): none. */
export type MirrorAclFilterChanged = Event<'MirrorAclFilterChanged', { readonly include: readonly string[]; readonly exclude: readonly string[] }>;
/** The runner's ACL round changed a mirror topic's ACLs on the destination: `granted` and `revoked`
 *  ACLs synced from the source (ACL filter), `denied` the principals given a DENY WRITE because an
 *  ALLOW lets them write the topic (the read-only guard kept current). */
export type MirrorTopicAclsSynced = Event<'MirrorTopicAclsSynced', { readonly topic: string; readonly granted: readonly TopicAcl[]; readonly revoked: readonly TopicAcl[]; readonly denied: readonly string[] }>;
/** STOPPED or FAILED → LOG_TRUNCATION: the topic is started again (re-mirror, failback). */
export type PartitionTruncationStarted = Event<'PartitionTruncationStarted', PartitionRef>;
/** LOG_TRUNCATION → MIRRORING: aligned and the ISR converged. */
export type PartitionTruncationCompleted = Event<'PartitionTruncationCompleted', PartitionRef>;
export type PartitionPauseRequested = Event<'PartitionPauseRequested', PartitionRef>;
/** PAUSING → PAUSED: fetching has stopped. */
export type PartitionPaused = Event<'PartitionPaused', PartitionRef>;
export type PartitionResumed = Event<'PartitionResumed', PartitionRef>;
export type PartitionStopRequested = Event<'PartitionStopRequested', PartitionRef & { readonly mode: StopMode }>;
/** STOPPING → STOPPED: the destination partition is writable. */
export type PartitionStopped = Event<'PartitionStopped', PartitionRef>;
export type PartitionFailed = Event<
  'PartitionFailed',
  PartitionRef & { readonly error: { readonly code: string; readonly message: string }; readonly retryable: boolean }
>;
export type PartitionRetried = Event<'PartitionRetried', PartitionRef & { readonly trigger: RetryTrigger }>;
/** final: the position a stop's copies ended at, recorded before the topic is made writable; the
 *  last one until the partition is restarted (machines/partition.ts). */
export type PartitionPositionRecorded = Event<
  'PartitionPositionRecorded',
  PartitionRef & { readonly offset: string; readonly leaderEpoch: number; readonly checksum: string; readonly final?: true }
>;
/** Records the source's retention removed before they were mirrored, [from, to): the copier moved
 *  the destination past them (DESIGN §5, invariant 7) — never a silent skip. */
export type PartitionRecordsLost = Event<'PartitionRecordsLost', PartitionRef & { readonly from: string; readonly to: string }>;
/** An operator accepted the loss of records the source's retention removed, for the next loss found
 *  in each partition of these topics (the metadata holds who and why). */
export type RecordsLossAccepted = Event<'RecordsLossAccepted', { readonly topics: readonly string[] }>;
export type MirrorDeletionStarted = Event<'MirrorDeletionStarted', { readonly mirror: string }>;
export type MirrorDeleted = Event<'MirrorDeleted', { readonly mirror: string }>;

export type PartitionLifecycleEvent =
  | PartitionTruncationStarted
  | PartitionTruncationCompleted
  | PartitionPauseRequested
  | PartitionPaused
  | PartitionResumed
  | PartitionStopRequested
  | PartitionStopped
  | PartitionFailed
  | PartitionRetried
  | PartitionPositionRecorded;

export type MirrorEvent =
  | MirrorCreated
  | MirrorTopicFilterChanged
  | MirrorTopicAdded
  | MirrorTopicGrown
  | MirrorTopicConfigsSynced
  | MirrorAclFilterChanged
  | MirrorTopicAclsSynced
  | IsrWaitOverridden
  | MirrorGroupFilterChanged
  | FailbackTopicPrepared
  | PartitionRecordsLost
  | RecordsLossAccepted
  | PartitionLifecycleEvent
  | MirrorDeletionStarted
  | MirrorDeleted;

export type DomainEvent = ClusterEvent | MirrorEvent | AuthorizationEvent;
export type DomainEventType = DomainEvent['type'];

export const PartitionLifecycleEventTypes = [
  'PartitionTruncationStarted',
  'PartitionTruncationCompleted',
  'PartitionPauseRequested',
  'PartitionPaused',
  'PartitionResumed',
  'PartitionStopRequested',
  'PartitionStopped',
  'PartitionFailed',
  'PartitionRetried',
  'PartitionPositionRecorded',
] as const satisfies readonly PartitionLifecycleEvent['type'][];

export function isPartitionLifecycleEvent(event: DomainEvent): event is PartitionLifecycleEvent {
  return (PartitionLifecycleEventTypes as readonly string[]).includes(event.type);
}

/** Stream ids: `mirror:<name>` and `cluster:<name>`. Names cannot contain ':', so ids never collide. */
export const mirrorStreamId = (mirror: string): string => `mirror:${mirror}`;
export const clusterStreamId = (cluster: string): string => `cluster:${cluster}`;
