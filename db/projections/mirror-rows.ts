// Mapping between the mirror aggregate and its projection rows, and the one rule for which rows an
// event touches. The live path (one append) and rebuildProjections (a whole stream) both collect
// changes with collectMirrorChanges and write them with writeMirrorChanges, so a rebuild produces
// the rows the live path wrote, by construction.
import { partitionName } from '../../domain/names.ts';
import { isPartitionLifecycleEvent, type MirrorEvent, type TopicAcl } from '../../domain/events.ts';
import type { Mirror } from '../../domain/mirror.ts';
import type { MirrorState } from '../../machines/mirror.ts';
import type { PartitionState, PartitionStatus, RecoverableState, StopMode } from '../../machines/partition.ts';
import type { MirrorPartitionRow, MirrorRow, NewMirrorPartitionRow, NewMirrorRow } from '../database.ts';

export function partitionRow(mirror: string, topic: string, partition: number, status: PartitionStatus, updatedAt: Date): NewMirrorPartitionRow {
  const c = status.context;
  return {
    mirror,
    topic,
    partition,
    state: status.state,
    previous_state: c.previousState,
    retry_attempt: c.retryAttempt,
    retryable: c.retryable,
    error_code: c.error?.code ?? null,
    error_message: c.error?.message ?? null,
    stop_mode: c.stopMode,
    final_position: c.finalPosition,
    last_mirrored_offset: status.lastMirrored?.offset ?? null,
    last_mirrored_epoch: status.lastMirrored?.leaderEpoch ?? null,
    last_mirrored_checksum: status.lastMirrored?.checksum ?? null,
    updated_at: updatedAt,
  };
}

type StatusColumns = Pick<
  MirrorPartitionRow,
  | 'state'
  | 'previous_state'
  | 'retry_attempt'
  | 'retryable'
  | 'error_code'
  | 'error_message'
  | 'stop_mode'
  | 'final_position'
  | 'last_mirrored_offset'
  | 'last_mirrored_epoch'
  | 'last_mirrored_checksum'
>;

export function partitionStatusFromRow(row: StatusColumns): PartitionStatus {
  return {
    state: row.state as PartitionState,
    context: {
      previousState: row.previous_state as RecoverableState | null,
      retryAttempt: row.retry_attempt,
      retryable: row.retryable,
      error: row.error_code === null ? null : { code: row.error_code, message: row.error_message ?? '' },
      stopMode: row.stop_mode as StopMode | null,
      finalPosition: row.final_position,
    },
    lastMirrored:
      row.last_mirrored_offset === null
        ? null
        : { offset: row.last_mirrored_offset, leaderEpoch: row.last_mirrored_epoch ?? -1, checksum: row.last_mirrored_checksum ?? '' },
  };
}

export function mirrorRow(mirror: Mirror, createdAt: Date, updatedAt: Date): NewMirrorRow {
  return {
    name: mirror.name,
    state: mirror.state!,
    source_cluster: mirror.sourceCluster!,
    destination_cluster: mirror.destinationCluster!,
    include: JSON.stringify(mirror.include),
    exclude: JSON.stringify(mirror.exclude),
    group_include: JSON.stringify(mirror.groupInclude),
    group_exclude: JSON.stringify(mirror.groupExclude),
    acl_include: JSON.stringify(mirror.aclInclude),
    acl_exclude: JSON.stringify(mirror.aclExclude),
    created_at: createdAt,
    updated_at: updatedAt,
  };
}

export function mirrorFromRow(row: MirrorRow): Omit<Mirror, 'topics'> {
  return {
    name: row.name,
    state: row.state as MirrorState,
    sourceCluster: row.source_cluster,
    destinationCluster: row.destination_cluster,
    include: row.include,
    exclude: row.exclude,
    groupInclude: row.group_include,
    groupExclude: row.group_exclude,
    aclInclude: row.acl_include,
    aclExclude: row.acl_exclude,
  };
}

/** What a run of recorded events changed in one mirror's projection rows. */
export interface MirrorChanges {
  createdAt: Date | null;
  updatedAt: Date | null;
  /** The mirror was (re)created or deleted: its topic and partition rows go first. */
  resetTopics: boolean;
  readonly topics: Map<string, { readonly partitionCount: number; readonly createdAt: Date }>;
  /** Topics that grew, to their new partition count: the topic row changes, the new partitions' rows
   *  are inserted (the writer reads where the stored topic ended). */
  readonly grown: Map<string, number>;
  /** partitionName → the time of the last event that touched it. */
  readonly partitions: Map<string, { readonly topic: string; readonly partition: number; readonly at: Date }>;
  /** ACL sync's grants and revocations (MirrorTopicAclsSynced), in order: the synced-ACL rows. */
  readonly acls: { readonly topic: string; readonly granted: readonly TopicAcl[]; readonly revoked: readonly TopicAcl[] }[];
}

export function emptyMirrorChanges(createdAt: Date | null): MirrorChanges {
  return { createdAt, updatedAt: null, resetTopics: false, topics: new Map(), grown: new Map(), partitions: new Map(), acls: [] };
}

/** Which rows `event` touches. Every event touches the mirror row. */
export function collectMirrorChanges(changes: MirrorChanges, event: MirrorEvent, recordedAt: Date): void {
  changes.updatedAt = recordedAt;
  if (isPartitionLifecycleEvent(event)) {
    const { topic, partition } = event.data;
    changes.partitions.set(partitionName(topic, partition), { topic, partition, at: recordedAt });
    return;
  }
  switch (event.type) {
    case 'MirrorCreated':
    case 'MirrorDeleted':
      if (event.type === 'MirrorCreated') changes.createdAt = recordedAt;
      changes.resetTopics = true;
      changes.topics.clear();
      changes.grown.clear();
      changes.partitions.clear();
      changes.acls.length = 0;
      return;
    case 'MirrorTopicAdded': {
      const { topic, partitionCount } = event.data;
      changes.topics.set(topic, { partitionCount, createdAt: recordedAt });
      for (let partition = 0; partition < partitionCount; partition++) {
        changes.partitions.set(partitionName(topic, partition), { topic, partition, at: recordedAt });
      }
      return;
    }
    case 'MirrorTopicGrown': {
      const { topic, partitionCount } = event.data;
      const added = changes.topics.get(topic);
      if (added !== undefined) {
        // Added and grown in the same run: one new row with the final count.
        changes.topics.set(topic, { partitionCount, createdAt: added.createdAt });
        for (let partition = added.partitionCount; partition < partitionCount; partition++) changes.partitions.set(partitionName(topic, partition), { topic, partition, at: recordedAt });
        return;
      }
      changes.grown.set(topic, partitionCount);
      return;
    }
    case 'MirrorTopicAclsSynced':
      changes.acls.push({ topic: event.data.topic, granted: event.data.granted, revoked: event.data.revoked });
      return;
    case 'MirrorTopicFilterChanged':
    case 'MirrorDeletionStarted':
    case 'IsrWaitOverridden':
    case 'MirrorGroupFilterChanged':
    case 'MirrorAclFilterChanged':
    case 'FailbackTopicPrepared':
    case 'PartitionRecordsLost':
    case 'RecordsLossAccepted':
    case 'MirrorTopicConfigsSynced':
      return;
  }
}
