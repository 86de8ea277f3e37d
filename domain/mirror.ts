// The mirror aggregate: decide(command, state) → events, evolve(state, event) → state.
//
// Both consult the charts (machines/) through one mapping, chartEventOf(): decide builds the
// candidate events and asks the partition and mirror charts whether each is allowed; evolve folds
// the same events with the same charts. So nothing can be appended that cannot be folded, and a
// projection is exactly the fold of its events.
import { KmirrorError, type ErrorCode } from './errors.ts';
import { assertClusterName, assertMirrorName, assertTopicName, partitionName } from './names.ts';
import { RECORDS_LOST_POLICIES, type MirrorCommand, type PartitionSelection, type RecordLastMirrored, type StartTopics } from './commands.ts';
import { TOPIC_ACL_OPERATIONS, type MirrorEvent, type PartitionLifecycleEvent, type PartitionRef, type TopicAcl } from './events.ts';
import { stepMirror, type MirrorEvent as MirrorChartEvent, type MirrorState } from '../machines/mirror.ts';
import {
  newPartition,
  stepPartition,
  type PartitionEvent as PartitionChartEvent,
  type PartitionStatus,
} from '../machines/partition.ts';

export interface MirrorTopic {
  /** Index = partition number. */
  readonly partitions: readonly PartitionStatus[];
}

export interface Mirror {
  readonly name: string;
  /** null: never created. A deleted mirror's name may be created again. */
  readonly state: MirrorState | null;
  readonly sourceCluster: string | null;
  readonly destinationCluster: string | null;
  readonly include: readonly string[];
  readonly exclude: readonly string[];
  /** Consumer groups whose offsets are synced (whole-name patterns). */
  readonly groupInclude: readonly string[];
  readonly groupExclude: readonly string[];
  /** Principals whose topic ACLs are synced (whole-name patterns; no include: none). */
  readonly aclInclude: readonly string[];
  readonly aclExclude: readonly string[];
  readonly topics: ReadonlyMap<string, MirrorTopic>;
}

export function initialMirror(name: string): Mirror {
  return { name, state: null, sourceCluster: null, destinationCluster: null, include: [], exclude: [], groupInclude: ['.*'], groupExclude: [], aclInclude: [], aclExclude: [], topics: new Map() };
}

/** The topics decide() must see for `command`: a loader may read only these. 'all' = every topic. */
export function topicsNeeded(command: MirrorCommand): readonly string[] | 'all' {
  switch (command.type) {
    case 'CreateMirror':
    case 'CompleteMirrorDeletion':
      return [];
    case 'DeleteMirror':
      return 'all';
    case 'StartTopics':
      return command.topics.map((t) => t.topic);
    case 'GrowTopic':
    case 'SyncTopicConfigs':
    case 'SyncTopicAcls':
      return [command.topic];
    case 'OverrideIsrWait':
      return [...new Set(command.topics)];
    case 'SetGroupFilter':
    case 'SetAclFilter':
      return [];
    case 'RecordFailback':
      return [command.failback.topic];
    case 'RecordLastMirrored':
      return [...new Set(command.positions.map((p) => p.topic))];
    case 'RecordRecordsLost':
      return [...new Set(command.losses.map((p) => p.topic))];
    case 'AcceptRecordsLost':
      return [...new Set(command.topics)];
    default:
      return command.partitions === 'all' ? 'all' : [...new Set(command.partitions.map((p) => p.topic))];
  }
}

// ---------------------------------------------------------------------------------------------
// Events → chart events (the one mapping decide and evolve share)

export function chartEventOf(event: PartitionLifecycleEvent): PartitionChartEvent {
  switch (event.type) {
    case 'PartitionTruncationStarted':
      return { type: 'START' };
    case 'PartitionTruncationCompleted':
      return { type: 'TRUNCATED' };
    case 'PartitionPauseRequested':
      return { type: 'PAUSE' };
    case 'PartitionPaused':
      return { type: 'PAUSED' };
    case 'PartitionResumed':
      return { type: 'RESUME' };
    case 'PartitionStopRequested':
      return { type: 'STOP', mode: event.data.mode };
    case 'PartitionStopped':
      return { type: 'STOPPED' };
    case 'PartitionFailed':
      return { type: 'FAIL', error: event.data.error, retryable: event.data.retryable };
    case 'PartitionRetried':
      return { type: 'RETRY', trigger: event.data.trigger };
    case 'PartitionPositionRecorded':
      return {
        type: 'RECORD_POSITION',
        position: { offset: BigInt(event.data.offset), leaderEpoch: event.data.leaderEpoch, checksum: event.data.checksum },
        final: event.data.final === true,
      };
  }
}

// ---------------------------------------------------------------------------------------------
// decide

export function decide(command: MirrorCommand, state: Mirror): MirrorEvent[] {
  switch (command.type) {
    case 'CreateMirror':
      return decideCreate(command, state);
    case 'StartTopics':
      return decideStart(command, state);
    case 'GrowTopic':
      return decideGrow(command, state);
    case 'RecordFailback': {
      requireMirror(state);
      const notStopped = topicOf(state, command.failback.topic).partitions.findIndex((p) => p.state !== 'STOPPED');
      if (notStopped >= 0) {
        const status = state.topics.get(command.failback.topic)!.partitions[notStopped]!;
        throw new KmirrorError(
          'MIRROR_TOPIC_NOT_STOPPED',
          `cannot fail back topic ${command.failback.topic} of mirror ${state.name}: partition ${partitionName(command.failback.topic, notStopped)} is ${status.state}; fail it over first`,
          { mirror: state.name, topic: command.failback.topic, partition: notStopped, state: status.state },
        );
      }
      return [{ type: 'FailbackTopicPrepared', data: command.failback }];
    }
    case 'SetGroupFilter':
    case 'SetAclFilter': {
      requireMirror(state);
      const what = command.type === 'SetGroupFilter' ? 'group' : 'principal';
      for (const pattern of [...command.include, ...command.exclude]) {
        try {
          new RegExp(pattern);
        } catch (err) {
          throw new KmirrorError('INVALID_TOPIC_PATTERN', `${what} pattern ${JSON.stringify(pattern)} is not a valid regular expression`, { pattern }, { cause: err });
        }
      }
      const data = { include: [...command.include], exclude: [...command.exclude] };
      return [command.type === 'SetGroupFilter' ? { type: 'MirrorGroupFilterChanged', data } : { type: 'MirrorAclFilterChanged', data }];
    }
    case 'SyncTopicAcls': {
      requireMirror(state);
      topicOf(state, command.topic);
      if (command.granted.length === 0 && command.revoked.length === 0 && command.denied.length === 0) {
        throw new KmirrorError('INVALID_ARGUMENT', `ACL sync of ${command.topic} in mirror ${state.name}: nothing was granted, revoked or denied`, { mirror: state.name, topic: command.topic });
      }
      for (const acl of [...command.granted, ...command.revoked]) {
        if (typeof acl?.principal !== 'string' || typeof acl.host !== 'string' || !TOPIC_ACL_OPERATIONS.includes(acl.operation) || (acl.permission !== 'ALLOW' && acl.permission !== 'DENY')) {
          throw new KmirrorError('INVALID_ARGUMENT', `ACL sync of ${command.topic} in mirror ${state.name}: ${JSON.stringify(acl)} is not a topic ACL`, { mirror: state.name, topic: command.topic });
        }
      }
      const copy = (acls: readonly TopicAcl[]) => acls.map(({ principal, host, operation, permission }) => ({ principal, host, operation, permission }));
      return [{ type: 'MirrorTopicAclsSynced', data: { topic: command.topic, granted: copy(command.granted), revoked: copy(command.revoked), denied: [...command.denied] } }];
    }
    case 'SyncTopicConfigs': {
      requireMirror(state);
      topicOf(state, command.topic);
      if (Object.keys(command.set).length === 0 && command.removed.length === 0) {
        throw new KmirrorError('INVALID_ARGUMENT', `config sync of ${command.topic} in mirror ${state.name}: nothing was set or removed`, { mirror: state.name, topic: command.topic });
      }
      return [{ type: 'MirrorTopicConfigsSynced', data: { topic: command.topic, set: { ...command.set }, removed: [...command.removed] } }];
    }
    case 'OverrideIsrWait': {
      requireMirror(state);
      if (command.topics.length === 0) throw new KmirrorError('INVALID_ARGUMENT', `override the ISR wait of mirror ${state.name}: name at least one topic`);
      for (const topic of command.topics) topicOf(state, topic);
      return [{ type: 'IsrWaitOverridden', data: { topics: [...new Set(command.topics)] } }];
    }
    case 'RecordLastMirrored':
      return decideRecord(command, state);
    case 'RecordRecordsLost': {
      requireMirror(state);
      return command.losses.map(({ topic, partition, from, to }) => {
        partitionOf(state, topic, partition);
        if (from < 0n || to <= from) throw new KmirrorError('INVALID_ARGUMENT', `records lost in ${partitionName(topic, partition)}: [${from}, ${to}) is not a range of offsets`);
        return { type: 'PartitionRecordsLost' as const, data: { topic, partition, from: from.toString(), to: to.toString() } };
      });
    }
    case 'AcceptRecordsLost': {
      requireMirror(state);
      if (command.topics.length === 0) throw new KmirrorError('INVALID_ARGUMENT', `accept records lost on mirror ${state.name}: name at least one topic`);
      for (const topic of command.topics) topicOf(state, topic);
      return [{ type: 'RecordsLossAccepted', data: { topics: [...new Set(command.topics)] } }];
    }
    case 'DeleteMirror':
      return decideDelete(state);
    case 'CompleteMirrorDeletion':
      // Completing a completed deletion (a retry whose first attempt committed) changes nothing.
      if (state.state === 'deleted') return [];
      requireMirror(state);
      if (stepMirror(state.state!, { type: 'DELETE_COMPLETED' }) === undefined) {
        throw new KmirrorError('INVALID_CLUSTER_MIRROR_STATES', `mirror ${state.name} is ${state.state}, not deleting: nothing to complete`, {
          mirror: state.name,
          state: state.state,
        });
      }
      return [{ type: 'MirrorDeleted', data: { mirror: state.name } }];
    default: {
      const targets = select(state, command.partitions).filter((t) => command.partitions !== 'all' || !settledFor(command.type, t.status.state));
      const build = partitionEventBuilder(command);
      return checked(command.type, state, targets.map(build));
    }
  }
}

function requireMirror(state: Mirror): asserts state is Mirror & { state: MirrorState } {
  if (state.state === null || state.state === 'deleted') {
    throw new KmirrorError('UNKNOWN_CLUSTER_MIRROR', `mirror ${state.name} does not exist`, { mirror: state.name });
  }
}

function decideCreate(command: Extract<MirrorCommand, { type: 'CreateMirror' }>, state: Mirror): MirrorEvent[] {
  assertMirrorName(command.mirror);
  if (state.state !== null && state.state !== 'deleted') {
    throw new KmirrorError('CLUSTER_MIRROR_ALREADY_EXISTS', `mirror ${command.mirror} already exists (${state.state})`, {
      mirror: command.mirror,
      state: state.state,
    });
  }
  assertClusterName(command.sourceCluster);
  assertClusterName(command.destinationCluster);
  if (command.sourceCluster === command.destinationCluster) {
    throw new KmirrorError('INVALID_ARGUMENT', `mirror ${command.mirror}: source and destination are the same cluster (${command.sourceCluster})`);
  }
  if (command.onRecordsLost !== undefined && !RECORDS_LOST_POLICIES.includes(command.onRecordsLost)) {
    throw new KmirrorError('INVALID_ARGUMENT', `mirror ${command.mirror}: onRecordsLost must be one of ${RECORDS_LOST_POLICIES.join(', ')}, not ${JSON.stringify(command.onRecordsLost)}`);
  }
  const { mirror, sourceCluster, destinationCluster, onRecordsLost } = command;
  return [{ type: 'MirrorCreated', data: { mirror, sourceCluster, destinationCluster, ...(onRecordsLost === undefined ? {} : { onRecordsLost }) } }];
}

function decideStart(command: StartTopics, state: Mirror): MirrorEvent[] {
  requireMirror(state);
  if (stepMirror(state.state, { type: 'TOPICS_STARTED' }) === undefined) {
    throw new KmirrorError('INVALID_CLUSTER_MIRROR_STATES', `mirror ${state.name} is ${state.state}: no topics can be started`, {
      mirror: state.name,
      state: state.state,
    });
  }
  if (command.topics.length === 0 && command.filter === undefined) {
    throw new KmirrorError('INVALID_ARGUMENT', `start on mirror ${state.name}: no topics and no filter given`);
  }
  const events: MirrorEvent[] = [];
  if (command.filter !== undefined) {
    for (const pattern of [...command.filter.include, ...command.filter.exclude]) {
      try {
        new RegExp(pattern);
      } catch (err) {
        throw new KmirrorError('INVALID_TOPIC_PATTERN', `topic pattern ${JSON.stringify(pattern)} is not a valid regular expression`, { pattern }, { cause: err });
      }
    }
    // Patterns accumulate: a later start adds its patterns to those auto-discovery already follows
    // (replacing them silently stopped discovering the earlier ones).
    const merged = (before: readonly string[], added: readonly string[]) => [...new Set([...before, ...added])];
    events.push({ type: 'MirrorTopicFilterChanged', data: { include: merged(state.include, command.filter.include), exclude: merged(state.exclude, command.filter.exclude) } });
  }
  const seen = new Set<string>();
  const restarts: PartitionLifecycleEvent[] = [];
  for (const { topic, partitionCount } of command.topics) {
    assertTopicName(topic);
    if (seen.has(topic)) throw new KmirrorError('INVALID_ARGUMENT', `start on mirror ${state.name}: topic ${topic} is named twice`);
    seen.add(topic);
    if (!Number.isSafeInteger(partitionCount) || partitionCount < 1) {
      throw new KmirrorError('INVALID_ARGUMENT', `topic ${topic}: partition count ${partitionCount} is not a positive integer`);
    }
    const existing = state.topics.get(topic);
    if (existing === undefined) {
      events.push({ type: 'MirrorTopicAdded', data: { topic, partitionCount } });
      continue;
    }
    if (existing.partitions.length !== partitionCount) {
      throw new KmirrorError(
        'INVALID_ARGUMENT',
        `topic ${topic} has ${existing.partitions.length} partitions in mirror ${state.name} but ${partitionCount} were given; partition growth is not supported yet`,
        { mirror: state.name, topic },
      );
    }
    for (let partition = 0; partition < partitionCount; partition++) {
      restarts.push({ type: 'PartitionTruncationStarted', data: { topic, partition } });
    }
  }
  return [...events, ...checked('StartTopics', state, restarts)];
}

function decideGrow(command: Extract<MirrorCommand, { type: 'GrowTopic' }>, state: Mirror): MirrorEvent[] {
  requireMirror(state);
  const current = topicOf(state, command.topic).partitions.length;
  if (!Number.isSafeInteger(command.partitionCount) || command.partitionCount <= current) {
    throw new KmirrorError('INVALID_ARGUMENT', `topic ${command.topic} has ${current} partitions in mirror ${state.name}; it can only grow (asked: ${command.partitionCount})`, {
      mirror: state.name,
      topic: command.topic,
    });
  }
  if (stepMirror(state.state, { type: 'PARTITIONS_CHANGED' }) === undefined) {
    throw new KmirrorError('INVALID_CLUSTER_MIRROR_STATES', `mirror ${state.name} is ${state.state}: its partitions cannot change`, { mirror: state.name, state: state.state });
  }
  return [{ type: 'MirrorTopicGrown', data: { topic: command.topic, partitionCount: command.partitionCount } }];
}

function decideRecord(command: RecordLastMirrored, state: Mirror): MirrorEvent[] {
  requireMirror(state);
  const events: PartitionLifecycleEvent[] = [];
  const seen = new Set<string>();
  for (const p of command.positions) {
    partitionOf(state, p.topic, p.partition);
    const key = partitionName(p.topic, p.partition);
    if (seen.has(key)) throw new KmirrorError('INVALID_ARGUMENT', `record position on mirror ${state.name}: partition ${key} is named twice`);
    seen.add(key);
    if (!Number.isSafeInteger(p.leaderEpoch) || p.leaderEpoch < -1) {
      throw new KmirrorError('INVALID_ARGUMENT', `partition ${key}: leader epoch ${p.leaderEpoch} is not an integer ≥ -1`);
    }
    if (p.checksum === '') throw new KmirrorError('INVALID_ARGUMENT', `partition ${key}: the boundary record checksum is empty`);
    if (p.offset < 0n) throw new KmirrorError('INVALID_ARGUMENT', `partition ${key}: offset ${p.offset} is negative`);
    events.push({
      type: 'PartitionPositionRecorded',
      data: { topic: p.topic, partition: p.partition, offset: p.offset.toString(), leaderEpoch: p.leaderEpoch, checksum: p.checksum, ...(p.final === true ? { final: true as const } : {}) },
    });
  }
  if (command.skipRefused === true) {
    // The copy activities record positions while operations change partition states: a position
    // the chart refuses now (a partition meanwhile FAILED, or recorded further already) is dropped.
    return checked(
      'RecordLastMirrored',
      state,
      events.filter((e) => stepPartition(state.topics.get(e.data.topic)!.partitions[e.data.partition]!, chartEventOf(e)) !== undefined),
    );
  }
  return checked('RecordLastMirrored', state, events);
}

function decideDelete(state: Mirror): MirrorEvent[] {
  requireMirror(state);
  const notStopped: Refusal[] = [];
  for (const [topic, { partitions }] of state.topics) {
    partitions.forEach((status, partition) => {
      if (status.state !== 'STOPPED') notStopped.push({ ref: { topic, partition }, status, code: 'CLUSTER_MIRROR_NOT_EMPTY' });
    });
  }
  // Deleting a mirror that is being deleted joins that deletion (a retry whose first attempt
  // committed, or an operator repeating a delete that failed after this step): nothing to record.
  if (state.state === 'deleting') return [];
  if (stepMirror(state.state, { type: 'DELETE_REQUESTED', partitionsNotStopped: notStopped.length }) === undefined) {
    throw refusalError('DeleteMirror', state, notStopped);
  }
  return [{ type: 'MirrorDeletionStarted', data: { mirror: state.name } }];
}

interface Selected extends PartitionRef {
  readonly status: PartitionStatus;
}

function topicOf(state: Mirror, topic: string): MirrorTopic {
  const entry = state.topics.get(topic);
  if (entry === undefined) {
    throw new KmirrorError('TOPIC_NOT_IN_CLUSTER_MIRROR', `topic ${topic} is not in mirror ${state.name}`, { mirror: state.name, topic });
  }
  return entry;
}

function partitionOf(state: Mirror, topic: string, partition: number): PartitionStatus {
  const entry = topicOf(state, topic);
  const status = Number.isInteger(partition) ? entry.partitions[partition] : undefined;
  if (status === undefined) {
    throw new KmirrorError(
      'TOPIC_NOT_IN_CLUSTER_MIRROR',
      `partition ${partitionName(topic, partition)} is not in mirror ${state.name} (${topic} has ${entry.partitions.length} partitions)`,
      { mirror: state.name, topic, partition },
    );
  }
  return status;
}

/**
 * Partitions a whole-mirror pause or resume (`--all-topics`) passes over instead of refusing: those
 * already where the command leads (PAUSING/PAUSED for a pause, MIRRORING for a resume), and those
 * failed over (STOPPING/STOPPED) that neither applies to. Named topics are refused as before.
 */
function settledFor(commandType: MirrorCommand['type'], state: string): boolean {
  if (state === 'STOPPING' || state === 'STOPPED') return commandType === 'PauseTopics' || commandType === 'ResumeTopics';
  if (commandType === 'PauseTopics') return state === 'PAUSING' || state === 'PAUSED';
  if (commandType === 'ResumeTopics') return state === 'MIRRORING';
  return false;
}

function select(state: Mirror, selection: PartitionSelection): Selected[] {
  requireMirror(state);
  const out: Selected[] = [];
  if (selection === 'all') {
    for (const [topic, { partitions }] of state.topics) partitions.forEach((status, partition) => out.push({ topic, partition, status }));
    return out;
  }
  const seen = new Set<string>();
  for (const { topic, partitions } of selection) {
    const numbers = partitions ?? topicOf(state, topic).partitions.map((_, i) => i);
    for (const partition of numbers) {
      const status = partitionOf(state, topic, partition);
      const key = partitionName(topic, partition);
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ topic, partition, status });
    }
  }
  return out;
}

type PartitionCommand = Exclude<
  MirrorCommand,
  {
    type:
      | 'CreateMirror'
      | 'StartTopics'
      | 'GrowTopic'
      | 'SyncTopicConfigs'
      | 'OverrideIsrWait'
      | 'SetGroupFilter'
      | 'SetAclFilter'
      | 'SyncTopicAcls'
      | 'RecordFailback'
      | 'RecordLastMirrored'
      | 'RecordRecordsLost'
      | 'AcceptRecordsLost'
      | 'DeleteMirror'
      | 'CompleteMirrorDeletion';
  }
>;

function partitionEventBuilder(command: PartitionCommand): (target: PartitionRef) => PartitionLifecycleEvent {
  switch (command.type) {
    case 'CompleteTruncation':
      return ({ topic, partition }) => ({ type: 'PartitionTruncationCompleted', data: { topic, partition } });
    case 'PauseTopics':
      return ({ topic, partition }) => ({ type: 'PartitionPauseRequested', data: { topic, partition } });
    case 'CompletePause':
      return ({ topic, partition }) => ({ type: 'PartitionPaused', data: { topic, partition } });
    case 'ResumeTopics':
      return ({ topic, partition }) => ({ type: 'PartitionResumed', data: { topic, partition } });
    case 'StopTopics':
      return ({ topic, partition }) => ({ type: 'PartitionStopRequested', data: { topic, partition, mode: command.mode } });
    case 'CompleteStop':
      return ({ topic, partition }) => ({ type: 'PartitionStopped', data: { topic, partition } });
    case 'FailPartitions': {
      const error = { code: command.error.code, message: command.error.message };
      return ({ topic, partition }) => ({ type: 'PartitionFailed', data: { topic, partition, error, retryable: command.retryable } });
    }
    case 'RetryPartitions':
      return ({ topic, partition }) => ({ type: 'PartitionRetried', data: { topic, partition, trigger: command.trigger } });
  }
}

interface Refusal {
  readonly ref: PartitionRef;
  readonly status: PartitionStatus;
  readonly code: ErrorCode;
  readonly why?: string;
}

/** Ask the charts about every candidate event; all are allowed, or the command is refused. */
function checked(commandType: MirrorCommand['type'], state: Mirror, events: PartitionLifecycleEvent[]): PartitionLifecycleEvent[] {
  if (events.length === 0) return events;
  requireMirror(state);
  if (stepMirror(state.state, { type: 'PARTITIONS_CHANGED' }) === undefined) {
    throw new KmirrorError('INVALID_CLUSTER_MIRROR_STATES', `mirror ${state.name} is ${state.state}: its partitions cannot change`, {
      mirror: state.name,
      state: state.state,
    });
  }
  const refusals: Refusal[] = [];
  for (const event of events) {
    const status = state.topics.get(event.data.topic)!.partitions[event.data.partition]!;
    const chartEvent = chartEventOf(event);
    if (stepPartition(status, chartEvent) === undefined) refusals.push(refusal(commandType, event.data, status, chartEvent));
  }
  if (refusals.length > 0) throw refusalError(commandType, state, refusals);
  return events;
}

/** The KIP error for a partition that refuses a command in its state (KIP review AS17). */
function refusal(commandType: MirrorCommand['type'], ref: PartitionRef, status: PartitionStatus, event: PartitionChartEvent): Refusal {
  const { state } = status;
  const stopping = state === 'STOPPING' || state === 'STOPPED';
  const base = { ref: { topic: ref.topic, partition: ref.partition }, status };
  switch (commandType) {
    case 'StartTopics':
      return { ...base, code: 'TOPIC_ALREADY_IN_CLUSTER_MIRROR', why: 'only STOPPED or FAILED partitions can be started again' };
    case 'PauseTopics':
      if (state === 'PAUSING' || state === 'PAUSED') return { ...base, code: 'MIRROR_TOPIC_ALREADY_PAUSED' };
      return { ...base, code: stopping ? 'MIRROR_TOPIC_BEING_STOPPED' : 'INVALID_CLUSTER_MIRROR_STATES', why: 'only a MIRRORING partition can be paused' };
    case 'ResumeTopics':
      return { ...base, code: stopping ? 'MIRROR_TOPIC_BEING_STOPPED' : 'MIRROR_TOPIC_NOT_PAUSED', why: 'only a PAUSED partition can be resumed' };
    case 'StopTopics':
      return { ...base, code: stopping ? 'MIRROR_TOPIC_BEING_STOPPED' : 'INVALID_CLUSTER_MIRROR_STATES' };
    case 'RetryPartitions':
      if (state === 'FAILED') {
        const why =
          status.context.retryable === false
            ? `its error (${status.context.error?.code}) is not retryable; an operator can retry or stop it`
            : 'its automatic retries are exhausted; an operator can retry or stop it';
        return { ...base, code: 'INVALID_CLUSTER_MIRROR_STATES', why };
      }
      return { ...base, code: 'INVALID_CLUSTER_MIRROR_STATES', why: 'only a FAILED partition can be retried' };
    case 'RecordLastMirrored': {
      // The chart refuses for one of three reasons.
      if (status.state === 'STOPPING' && status.context.finalPosition) {
        return { ...base, code: 'INVALID_CLUSTER_MIRROR_STATES', why: `its stop recorded its final position (${status.lastMirrored?.offset}) already` };
      }
      // Ask it again without the recorded position.
      if (stepPartition({ ...status, lastMirrored: null }, event) !== undefined) {
        return { ...base, code: 'OFFSET_DIVERGENCE', why: `the offset is below the recorded ${status.lastMirrored?.offset}` };
      }
      return { ...base, code: 'INVALID_CLUSTER_MIRROR_STATES', why: 'positions are recorded only while MIRRORING, PAUSING, PAUSED or STOPPING' };
    }
    default:
      return { ...base, code: 'INVALID_CLUSTER_MIRROR_STATES' };
  }
}

const verbs: Record<MirrorCommand['type'], string> = {
  CreateMirror: 'create',
  StartTopics: 'start topics',
  GrowTopic: 'grow a topic',
  SyncTopicConfigs: 'sync topic configs',
  OverrideIsrWait: 'override the ISR wait',
  SetGroupFilter: 'set the consumer-group filter',
  SetAclFilter: 'set the ACL filter',
  SyncTopicAcls: 'sync topic ACLs',
  RecordFailback: 'record a failback',
  CompleteTruncation: 'complete log truncation',
  PauseTopics: 'pause',
  CompletePause: 'complete the pause',
  ResumeTopics: 'resume',
  StopTopics: 'stop',
  CompleteStop: 'complete the stop',
  FailPartitions: 'mark failed',
  RetryPartitions: 'retry',
  RecordLastMirrored: 'record the last mirrored position',
  RecordRecordsLost: 'record records lost to retention',
  AcceptRecordsLost: 'accept records lost to retention',
  DeleteMirror: 'delete',
  CompleteMirrorDeletion: 'complete the deletion',
};

const SHOWN = 5;

function refusalError(commandType: MirrorCommand['type'], state: Mirror, refusals: readonly Refusal[]): KmirrorError {
  const codes = new Set(refusals.map((r) => r.code));
  const code: ErrorCode = codes.size === 1 ? refusals[0]!.code : 'INVALID_CLUSTER_MIRROR_STATES';
  const shown = refusals
    .slice(0, SHOWN)
    .map((r) => `partition ${partitionName(r.ref.topic, r.ref.partition)} is ${r.status.state}${r.why === undefined ? '' : ` (${r.why})`}`);
  const more = refusals.length > SHOWN ? `; ${refusals.length - SHOWN} more partitions refuse too` : '';
  const first = refusals[0]!;
  return new KmirrorError(code, `cannot ${verbs[commandType]} in mirror ${state.name}: ${shown.join('; ')}${more}`, {
    mirror: state.name,
    topic: first.ref.topic,
    partition: first.ref.partition,
    state: first.status.state,
    refused: refusals.length,
  });
}

// ---------------------------------------------------------------------------------------------
// evolve

/** Fold one event. Pure: `state` is not modified. */
export function evolve(state: Mirror, event: MirrorEvent): Mirror {
  return fold(state, [event]);
}

/** Fold many events with one copy of the containers they touch (a batch of 50,000 partition
 *  events must not copy the mirror 50,000 times). Pure: `state` is not modified. Throws
 *  EVENT_HISTORY_INVALID when an event is one the charts do not allow: the log and the charts
 *  disagree, and folding on would invent a state. */
export function fold(state: Mirror, events: Iterable<MirrorEvent>): Mirror {
  let current: Mirror = state;
  let topics: Map<string, MirrorTopic> | undefined;
  const copied = new Map<string, PartitionStatus[]>();
  const view = (): ReadonlyMap<string, MirrorTopic> => topics ?? current.topics;
  const writableTopics = (): Map<string, MirrorTopic> => (topics ??= new Map(current.topics));
  const writablePartitions = (topic: string): PartitionStatus[] => {
    let partitions = copied.get(topic);
    if (partitions === undefined) {
      partitions = [...(writableTopics().get(topic)?.partitions ?? [])];
      copied.set(topic, partitions);
      writableTopics().set(topic, { partitions });
    }
    return partitions;
  };
  // The mirror chart's answer to a guard-less event depends only on the mirror state: ask once.
  let partitionsChangedFrom: MirrorState | null = null;

  const mirrorStep = (event: MirrorChartEvent, cause: MirrorEvent): MirrorState => {
    const next = current.state === null || current.state === 'deleted' ? undefined : stepMirror(current.state, event);
    if (next === undefined) throw historyInvalid(current, cause, `mirror is ${current.state ?? 'not created'}`);
    return next;
  };

  for (const event of events) {
    switch (event.type) {
      case 'MirrorCreated':
        if (current.state !== null && current.state !== 'deleted') throw historyInvalid(current, event, `mirror is ${current.state}`);
        topics = new Map();
        copied.clear();
        current = { ...initialMirror(current.name), state: 'created', sourceCluster: event.data.sourceCluster, destinationCluster: event.data.destinationCluster };
        break;
      case 'MirrorGroupFilterChanged':
        if (current.state === null || current.state === 'deleted') throw historyInvalid(current, event, 'mirror is not created');
        current = { ...current, groupInclude: event.data.include, groupExclude: event.data.exclude };
        break;
      case 'MirrorAclFilterChanged':
        if (current.state === null || current.state === 'deleted') throw historyInvalid(current, event, 'mirror is not created');
        current = { ...current, aclInclude: event.data.include, aclExclude: event.data.exclude };
        break;
      case 'FailbackTopicPrepared':
      case 'IsrWaitOverridden':
      case 'PartitionRecordsLost':
      case 'RecordsLossAccepted':
      case 'MirrorTopicConfigsSynced':
      case 'MirrorTopicAclsSynced':
        // A record of a decision or a fact: no state changes (the waiting activity and describe read it).
        if (current.state === null || current.state === 'deleted') throw historyInvalid(current, event, 'mirror is not created');
        break;
      case 'MirrorTopicFilterChanged':
        mirrorStep({ type: 'TOPICS_STARTED' }, event);
        current = { ...current, include: event.data.include, exclude: event.data.exclude };
        break;
      case 'MirrorTopicAdded': {
        const next = mirrorStep({ type: 'TOPICS_STARTED' }, event);
        if (view().has(event.data.topic)) throw historyInvalid(current, event, `topic ${event.data.topic} is already in the mirror`);
        const partitions = Array.from({ length: event.data.partitionCount }, newPartition);
        writableTopics().set(event.data.topic, { partitions });
        copied.set(event.data.topic, partitions);
        current = { ...current, state: next };
        break;
      }
      case 'MirrorTopicGrown': {
        mirrorStep({ type: 'PARTITIONS_CHANGED' }, event);
        const partitions = view().has(event.data.topic) ? writablePartitions(event.data.topic) : undefined;
        if (partitions === undefined || partitions.length >= event.data.partitionCount) {
          throw historyInvalid(current, event, `topic ${event.data.topic} cannot grow to ${event.data.partitionCount} partitions`);
        }
        while (partitions.length < event.data.partitionCount) partitions.push(newPartition());
        break;
      }
      case 'MirrorDeletionStarted': {
        let notStopped = 0;
        for (const { partitions } of view().values()) for (const p of partitions) if (p.state !== 'STOPPED') notStopped++;
        current = { ...current, state: mirrorStep({ type: 'DELETE_REQUESTED', partitionsNotStopped: notStopped }, event) };
        break;
      }
      case 'MirrorDeleted':
        current = { ...current, state: mirrorStep({ type: 'DELETE_COMPLETED' }, event) };
        topics = new Map();
        copied.clear();
        break;
      default: {
        if (partitionsChangedFrom !== current.state) {
          mirrorStep({ type: 'PARTITIONS_CHANGED' }, event);
          partitionsChangedFrom = current.state;
        }
        const { topic, partition } = event.data;
        const partitions = view().has(topic) ? writablePartitions(topic) : undefined;
        const status = partitions?.[partition];
        if (partitions === undefined || status === undefined) throw historyInvalid(current, event, `partition ${partitionName(topic, partition)} is not in the mirror`);
        const next = stepPartition(status, chartEventOf(event));
        if (next === undefined) throw historyInvalid(current, event, `partition ${partitionName(topic, partition)} is ${status.state}`);
        partitions[partition] = next;
      }
    }
  }
  return topics === undefined ? current : { ...current, topics };
}

function historyInvalid(state: Mirror, event: MirrorEvent, why: string): KmirrorError {
  return new KmirrorError('EVENT_HISTORY_INVALID', `mirror ${state.name}: ${event.type} cannot be applied: ${why}`, {
    mirror: state.name,
    event: event.type,
  });
}
