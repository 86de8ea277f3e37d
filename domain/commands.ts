// Commands: imperative requests that decide() checks against the charts before any event exists.
// Offsets are bigint here (inside TypeScript); the events they produce carry decimal strings.
import type { ConnectionDescription } from './connection.ts';
import type { LastMirrored, RetryTrigger, StopMode } from '../machines/partition.ts';
import type { FailbackTopicPrepared, TopicAcl } from './events.ts';

/** Which partitions a command is about: every partition of the mirror, or topics (all their
 *  partitions unless `partitions` narrows it). Duplicates are ignored. */
export type PartitionSelection = 'all' | readonly { readonly topic: string; readonly partitions?: readonly number[] }[];

export interface RegisterCluster {
  readonly type: 'RegisterCluster';
  readonly cluster: string;
  /** Only the non-secret description: the store seals the full connection beside the event. */
  readonly connection: ConnectionDescription;
}

export interface ChangeClusterConnection {
  readonly type: 'ChangeClusterConnection';
  readonly cluster: string;
  readonly connection: ConnectionDescription;
}

/** Forget a cluster: its description and sealed connection go; refused while a mirror (not
 *  deleted) reads from or writes to it (the store finds those). */
export interface RemoveCluster {
  readonly type: 'RemoveCluster';
  readonly cluster: string;
}

export type ClusterCommand = RegisterCluster | ChangeClusterConnection | RemoveCluster;

/** What the copier does when the source's retention removed records before they were mirrored:
 *  record the lost range and go on (`continue`, the default), or fail the partition (`fail`) until
 *  an operator accepts the loss (AcceptRecordsLost). */
export type RecordsLostPolicy = 'continue' | 'fail';
export const RECORDS_LOST_POLICIES: readonly RecordsLostPolicy[] = ['continue', 'fail'];

export interface CreateMirror {
  readonly type: 'CreateMirror';
  readonly mirror: string;
  readonly sourceCluster: string;
  readonly destinationCluster: string;
  /** Default `continue`. */
  readonly onRecordsLost?: RecordsLostPolicy;
}

export interface StartTopics {
  readonly type: 'StartTopics';
  readonly mirror: string;
  /** Resolved from the source: names with their partition counts. */
  readonly topics: readonly { readonly topic: string; readonly partitionCount: number }[];
  /** Patterns kept for auto-discovery; replaces the mirror's current filter when given. */
  readonly filter?: { readonly include: readonly string[]; readonly exclude: readonly string[] };
}

/** The source topic has more partitions now (Kafka only ever adds them): mirror the new ones. */
export interface GrowTopic {
  readonly type: 'GrowTopic';
  readonly mirror: string;
  readonly topic: string;
  readonly partitionCount: number;
}

/** Record a config sync of a mirror topic (the runner has altered the destination topic's configs). */
export interface SyncTopicConfigs {
  readonly type: 'SyncTopicConfigs';
  readonly mirror: string;
  readonly topic: string;
  readonly set: Readonly<Record<string, string>>;
  readonly removed: readonly string[];
}

/** Record a failback's decision for a topic (see FailbackTopicPrepared); the topic's partitions
 *  must all be STOPPED (failed over). */
export interface RecordFailback {
  readonly type: 'RecordFailback';
  readonly mirror: string;
  readonly failback: FailbackTopicPrepared['data'];
}

/** Which consumer groups' offsets the mirror syncs (whole-name patterns). */
export interface SetGroupFilter {
  readonly type: 'SetGroupFilter';
  readonly mirror: string;
  readonly include: readonly string[];
  readonly exclude: readonly string[];
}

/** Whose topic ACLs the mirror syncs (whole-name principal patterns; no include: none). */
export interface SetAclFilter {
  readonly type: 'SetAclFilter';
  readonly mirror: string;
  readonly include: readonly string[];
  readonly exclude: readonly string[];
}

/** Record an ACL round's change to a mirror topic (the runner has applied it on the destination). */
export interface SyncTopicAcls {
  readonly type: 'SyncTopicAcls';
  readonly mirror: string;
  readonly topic: string;
  readonly granted: readonly TopicAcl[];
  readonly revoked: readonly TopicAcl[];
  readonly denied: readonly string[];
}

/** Let the ISR wait of these topics end now (a broker is down for longer than the operation may
 *  wait); the reason is required, in the metadata. */
export interface OverrideIsrWait {
  readonly type: 'OverrideIsrWait';
  readonly mirror: string;
  readonly topics: readonly string[];
}

interface PartitionsCommand<Type extends string> {
  readonly type: Type;
  readonly mirror: string;
  readonly partitions: PartitionSelection;
}

export type CompleteTruncation = PartitionsCommand<'CompleteTruncation'>;
export type PauseTopics = PartitionsCommand<'PauseTopics'>;
export type CompletePause = PartitionsCommand<'CompletePause'>;
export type ResumeTopics = PartitionsCommand<'ResumeTopics'>;
/** Failover (`failover`: immediate) or promote (`promote`: planned, after lag reached 0). */
export type StopTopics = PartitionsCommand<'StopTopics'> & { readonly mode: StopMode };
export type CompleteStop = PartitionsCommand<'CompleteStop'>;
export type FailPartitions = PartitionsCommand<'FailPartitions'> & {
  readonly error: { readonly code: string; readonly message: string };
  readonly retryable: boolean;
};
export type RetryPartitions = PartitionsCommand<'RetryPartitions'> & { readonly trigger: RetryTrigger };

export interface RecordLastMirrored {
  readonly type: 'RecordLastMirrored';
  readonly mirror: string;
  /** final: a stop's position (machines/partition.ts: the last one until a restart). */
  readonly positions: readonly ({ readonly topic: string; readonly partition: number; readonly final?: boolean } & LastMirrored)[];
  /** Drop the positions the chart refuses instead of refusing the command (the copy activities'
   *  periodic recording races with operations that change partition states). */
  readonly skipRefused?: boolean;
}

/** The copier found records the source's retention removed before they were mirrored. */
export interface RecordRecordsLost {
  readonly type: 'RecordRecordsLost';
  readonly mirror: string;
  readonly losses: readonly { readonly topic: string; readonly partition: number; readonly from: bigint; readonly to: bigint }[];
}

/** An operator accepts that records the source's retention removed are lost to the mirror: the
 *  next loss found in each partition of these topics is skipped (and recorded) even under the
 *  `fail` policy. The reason is required, in the metadata. */
export interface AcceptRecordsLost {
  readonly type: 'AcceptRecordsLost';
  readonly mirror: string;
  readonly topics: readonly string[];
}

export interface DeleteMirror {
  readonly type: 'DeleteMirror';
  readonly mirror: string;
}

export interface CompleteMirrorDeletion {
  readonly type: 'CompleteMirrorDeletion';
  readonly mirror: string;
}

export type MirrorCommand =
  | CreateMirror
  | StartTopics
  | GrowTopic
  | SyncTopicConfigs
  | OverrideIsrWait
  | SetGroupFilter
  | SetAclFilter
  | SyncTopicAcls
  | RecordFailback
  | CompleteTruncation
  | PauseTopics
  | CompletePause
  | ResumeTopics
  | StopTopics
  | CompleteStop
  | FailPartitions
  | RetryPartitions
  | RecordLastMirrored
  | RecordRecordsLost
  | AcceptRecordsLost
  | DeleteMirror
  | CompleteMirrorDeletion;
