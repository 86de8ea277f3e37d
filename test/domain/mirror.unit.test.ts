import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { mirrorCommands } from './arbitraries.ts';
import { decide, evolve, fold, initialMirror, topicsNeeded, type Mirror } from '../../domain/mirror.ts';
import type { MirrorCommand } from '../../domain/commands.ts';
import type { MirrorEvent } from '../../domain/events.ts';
import { isKmirrorError, type ErrorCode } from '../../domain/errors.ts';

const M = 'dr-east';

const created: MirrorEvent = { type: 'MirrorCreated', data: { mirror: M, sourceCluster: 'east', destinationCluster: 'west' } };
const ordersAdded: MirrorEvent = { type: 'MirrorTopicAdded', data: { topic: 'orders', partitionCount: 3 } };
const each = (type: MirrorEvent['type'], topic = 'orders', count = 3, extra: object = {}): MirrorEvent[] =>
  Array.from({ length: count }, (_, partition) => ({ type, data: { topic, partition, ...extra } }) as MirrorEvent);
const mirroring = [created, ordersAdded, ...each('PartitionTruncationCompleted')];

/** given / when / then, emmett-style. */
function given(...history: MirrorEvent[]) {
  const state = fold(initialMirror(M), history);
  return {
    state,
    when(command: MirrorCommand) {
      const run = () => decide(command, state);
      return {
        then(expected: MirrorEvent[]) {
          expect(run()).toEqual(expected);
        },
        thenFails(code: ErrorCode, message?: RegExp) {
          let thrown: unknown;
          try {
            run();
          } catch (err) {
            thrown = err;
          }
          expect(isKmirrorError(thrown), `expected a KmirrorError ${code}, got ${String(thrown)}`).toBe(true);
          expect((thrown as Error & { code: string }).code).toBe(code);
          if (message) expect((thrown as Error).message).toMatch(message);
        },
      };
    },
  };
}

describe('CreateMirror', () => {
  const create = (mirror: string): MirrorCommand => ({ type: 'CreateMirror', mirror, sourceCluster: 'east', destinationCluster: 'west' });

  it('creates a mirror', () => given().when(create(M)).then([created]));

  it.each(['', '.', '..', 'has space', 'semi;colon', 'ü', 'x'.repeat(250)])('refuses the name %j (Kafka topic-name rules)', (name) => {
    expect(() => decide(create(name), initialMirror(name))).toThrowError(expect.objectContaining({ code: 'INVALID_CLUSTER_MIRROR_NAME' }));
  });

  it.each(['a', 'A.b_c-9', '...', 'x'.repeat(249)])('accepts the name %j', (name) => {
    expect(decide(create(name), initialMirror(name))).toHaveLength(1);
  });

  it('refuses a second mirror of the same name', () => given(created).when(create(M)).thenFails('CLUSTER_MIRROR_ALREADY_EXISTS', /dr-east already exists/));

  it('allows the name again once the mirror is deleted', () =>
    given(created, { type: 'MirrorDeletionStarted', data: { mirror: M } }, { type: 'MirrorDeleted', data: { mirror: M } }).when(create(M)).then([created]));

  it('refuses a mirror from a cluster into itself', () =>
    given().when({ type: 'CreateMirror', mirror: M, sourceCluster: 'east', destinationCluster: 'east' }).thenFails('INVALID_ARGUMENT'));
});

describe('StartTopics', () => {
  it('a later start adds its patterns to those the mirror follows, never replacing them', () =>
    given(created, { type: 'MirrorTopicFilterChanged', data: { include: ['orders.*'], exclude: ['orders\\.test'] } })
      .when({ type: 'StartTopics', mirror: M, topics: [], filter: { include: ['payments.*', 'orders.*'], exclude: [] } })
      .then([{ type: 'MirrorTopicFilterChanged', data: { include: ['orders.*', 'payments.*'], exclude: ['orders\\.test'] } }]));

  it('adds topics; their partitions start in LOG_TRUNCATION', () => {
    given(created)
      .when({ type: 'StartTopics', mirror: M, topics: [{ topic: 'orders', partitionCount: 3 }], filter: { include: ['orders.*'], exclude: [] } })
      .then([{ type: 'MirrorTopicFilterChanged', data: { include: ['orders.*'], exclude: [] } }, ordersAdded]);
    const state = fold(initialMirror(M), [created, ordersAdded]);
    expect(state.state).toBe('active');
    expect(state.topics.get('orders')!.partitions.map((p) => p.state)).toEqual(['LOG_TRUNCATION', 'LOG_TRUNCATION', 'LOG_TRUNCATION']);
  });

  it('refuses a topic that is already being mirrored, naming the partition and its state', () =>
    given(...mirroring)
      .when({ type: 'StartTopics', mirror: M, topics: [{ topic: 'orders', partitionCount: 3 }] })
      .thenFails('TOPIC_ALREADY_IN_CLUSTER_MIRROR', /partition orders-0 is MIRRORING/));

  it('starts a stopped topic again through LOG_TRUNCATION', () =>
    given(...mirroring, ...each('PartitionStopRequested', 'orders', 3, { mode: 'failover' }), ...each('PartitionStopped'))
      .when({ type: 'StartTopics', mirror: M, topics: [{ topic: 'orders', partitionCount: 3 }] })
      .then(each('PartitionTruncationStarted')));

  it('refuses an unknown mirror, an invalid pattern and a duplicate topic', () => {
    given().when({ type: 'StartTopics', mirror: M, topics: [{ topic: 'orders', partitionCount: 1 }] }).thenFails('UNKNOWN_CLUSTER_MIRROR');
    given(created).when({ type: 'StartTopics', mirror: M, topics: [], filter: { include: ['('], exclude: [] } }).thenFails('INVALID_TOPIC_PATTERN');
    given(created)
      .when({ type: 'StartTopics', mirror: M, topics: [{ topic: 'a', partitionCount: 1 }, { topic: 'a', partitionCount: 1 }] })
      .thenFails('INVALID_ARGUMENT');
    given(created).when({ type: 'StartTopics', mirror: M, topics: [{ topic: 'a', partitionCount: 0 }] }).thenFails('INVALID_ARGUMENT');
    given(created).when({ type: 'StartTopics', mirror: M, topics: [{ topic: 'bad topic', partitionCount: 1 }] }).thenFails('INVALID_ARGUMENT');
  });
});

describe('pause and resume', () => {
  it('pauses a mirroring topic', () => given(...mirroring).when({ type: 'PauseTopics', mirror: M, partitions: [{ topic: 'orders' }] }).then(each('PartitionPauseRequested')));

  it('refuses to pause twice', () =>
    given(...mirroring, ...each('PartitionPauseRequested'), ...each('PartitionPaused'))
      .when({ type: 'PauseTopics', mirror: M, partitions: [{ topic: 'orders', partitions: [1] }] })
      .thenFails('MIRROR_TOPIC_ALREADY_PAUSED', /cannot pause in mirror dr-east: partition orders-1 is PAUSED/));

  it('refuses to pause a partition that is being stopped', () =>
    given(...mirroring, ...each('PartitionStopRequested', 'orders', 3, { mode: 'promote' }))
      .when({ type: 'PauseTopics', mirror: M, partitions: [{ topic: 'orders' }] })
      .thenFails('MIRROR_TOPIC_BEING_STOPPED', /orders-0 is STOPPING/));

  it('a whole-mirror pause or resume passes over partitions already there or failed over, and refuses the rest as before', () => {
    const mixed = [...mirroring, { type: 'PartitionPauseRequested', data: { topic: 'orders', partition: 0 } }, { type: 'PartitionPaused', data: { topic: 'orders', partition: 0 } }, { type: 'PartitionStopRequested', data: { topic: 'orders', partition: 2, mode: 'failover' } }] as MirrorEvent[];
    given(...mixed).when({ type: 'PauseTopics', mirror: M, partitions: 'all' }).then([{ type: 'PartitionPauseRequested', data: { topic: 'orders', partition: 1 } }]);
    given(...mixed).when({ type: 'ResumeTopics', mirror: M, partitions: 'all' }).then([{ type: 'PartitionResumed', data: { topic: 'orders', partition: 0 } }]);
    given(...mixed, { type: 'PartitionPauseRequested', data: { topic: 'orders', partition: 1 } }).when({ type: 'PauseTopics', mirror: M, partitions: 'all' }).then([]);
    // Named, the same partitions are refused.
    given(...mixed).when({ type: 'PauseTopics', mirror: M, partitions: [{ topic: 'orders' }] }).thenFails('INVALID_CLUSTER_MIRROR_STATES', /orders-0 is PAUSED.*orders-2 is STOPPING/);
  });

  it('refuses to resume a partition that is not paused', () =>
    given(...mirroring).when({ type: 'ResumeTopics', mirror: M, partitions: [{ topic: 'orders' }] }).thenFails('MIRROR_TOPIC_NOT_PAUSED', /orders-0 is MIRRORING/));

  it('resumes a paused partition', () =>
    given(...mirroring, ...each('PartitionPauseRequested'), ...each('PartitionPaused'))
      .when({ type: 'ResumeTopics', mirror: M, partitions: [{ topic: 'orders', partitions: [2, 2] }] })
      .then([{ type: 'PartitionResumed', data: { topic: 'orders', partition: 2 } }]));

  it('names unknown topics and partitions', () => {
    given(...mirroring).when({ type: 'PauseTopics', mirror: M, partitions: [{ topic: 'payments' }] }).thenFails('TOPIC_NOT_IN_CLUSTER_MIRROR', /topic payments/);
    given(...mirroring)
      .when({ type: 'PauseTopics', mirror: M, partitions: [{ topic: 'orders', partitions: [3] }] })
      .thenFails('TOPIC_NOT_IN_CLUSTER_MIRROR', /orders-3 is not in mirror dr-east \(orders has 3 partitions\)/);
  });
});

describe('stop (failover and promote)', () => {
  it('stops every partition, with the mode', () =>
    given(...mirroring).when({ type: 'StopTopics', mirror: M, partitions: 'all', mode: 'failover' }).then(each('PartitionStopRequested', 'orders', 3, { mode: 'failover' })));

  it('refuses a second stop', () =>
    given(...mirroring, ...each('PartitionStopRequested', 'orders', 3, { mode: 'failover' }))
      .when({ type: 'StopTopics', mirror: M, partitions: 'all', mode: 'promote' })
      .thenFails('MIRROR_TOPIC_BEING_STOPPED'));

  it('completes only a stopping partition', () => {
    given(...mirroring).when({ type: 'CompleteStop', mirror: M, partitions: 'all' }).thenFails('INVALID_CLUSTER_MIRROR_STATES', /orders-0 is MIRRORING/);
    given(...mirroring, ...each('PartitionStopRequested', 'orders', 3, { mode: 'failover' }))
      .when({ type: 'CompleteStop', mirror: M, partitions: 'all' })
      .then(each('PartitionStopped'));
  });

  it('summarises many refusals instead of listing them all', () => {
    const wide: MirrorEvent[] = [created, { type: 'MirrorTopicAdded', data: { topic: 'wide', partitionCount: 40 } }];
    given(...wide)
      .when({ type: 'ResumeTopics', mirror: M, partitions: 'all' })
      .thenFails('MIRROR_TOPIC_NOT_PAUSED', /partition wide-4 is LOG_TRUNCATION.*; 35 more partitions refuse too$/);
  });
});

describe('failure and retry', () => {
  const failed = (retryable: boolean) => each('PartitionFailed', 'orders', 1, { error: { code: 'CLUSTER_UNREACHABLE', message: 'source down' }, retryable });

  it('records a failure and retries automatically back to the previous state', () => {
    given(...mirroring)
      .when({ type: 'FailPartitions', mirror: M, partitions: [{ topic: 'orders', partitions: [0] }], error: { code: 'CLUSTER_UNREACHABLE', message: 'source down' }, retryable: true })
      .then(failed(true));
    const state = fold(initialMirror(M), [...mirroring, ...failed(true), ...each('PartitionRetried', 'orders', 1, { trigger: 'automatic' })]);
    expect(state.topics.get('orders')!.partitions[0]).toMatchObject({ state: 'MIRRORING', context: { retryAttempt: 1, error: null } });
  });

  it('refuses an automatic retry of a non-retryable failure, but an operator may always retry or stop it', () => {
    const history = [...mirroring, ...failed(false)];
    given(...history)
      .when({ type: 'RetryPartitions', mirror: M, partitions: [{ topic: 'orders', partitions: [0] }], trigger: 'automatic' })
      .thenFails('INVALID_CLUSTER_MIRROR_STATES', /orders-0 is FAILED \(its error \(CLUSTER_UNREACHABLE\) is not retryable/);
    given(...history)
      .when({ type: 'RetryPartitions', mirror: M, partitions: [{ topic: 'orders', partitions: [0] }], trigger: 'operator' })
      .then(each('PartitionRetried', 'orders', 1, { trigger: 'operator' }));
    given(...history)
      .when({ type: 'StopTopics', mirror: M, partitions: [{ topic: 'orders', partitions: [0] }], mode: 'failover' })
      .then(each('PartitionStopRequested', 'orders', 1, { mode: 'failover' }));
  });

  it('refuses to retry a partition that has not failed', () =>
    given(...mirroring)
      .when({ type: 'RetryPartitions', mirror: M, partitions: [{ topic: 'orders', partitions: [1] }], trigger: 'operator' })
      .thenFails('INVALID_CLUSTER_MIRROR_STATES', /orders-1 is MIRRORING \(only a FAILED partition can be retried\)/));
});

describe('GrowTopic', () => {
  it('adds the new partitions in LOG_TRUNCATION; the existing ones keep their state', () => {
    given(...mirroring)
      .when({ type: 'GrowTopic', mirror: M, topic: 'orders', partitionCount: 5 })
      .then([{ type: 'MirrorTopicGrown', data: { topic: 'orders', partitionCount: 5 } }]);
    const state = fold(initialMirror(M), [...mirroring, { type: 'MirrorTopicGrown', data: { topic: 'orders', partitionCount: 5 } }]);
    expect(state.topics.get('orders')!.partitions.map((p) => p.state)).toEqual(['MIRRORING', 'MIRRORING', 'MIRRORING', 'LOG_TRUNCATION', 'LOG_TRUNCATION']);
  });

  it('refuses to shrink or to stay, and unknown topics', () => {
    given(...mirroring).when({ type: 'GrowTopic', mirror: M, topic: 'orders', partitionCount: 3 }).thenFails('INVALID_ARGUMENT', /can only grow/);
    given(...mirroring).when({ type: 'GrowTopic', mirror: M, topic: 'nope', partitionCount: 9 }).thenFails('TOPIC_NOT_IN_CLUSTER_MIRROR');
  });
});

describe('SyncTopicConfigs', () => {
  it('records what the runner set and removed; no partition changes', () => {
    const change = { topic: 'orders', set: { 'retention.ms': '86400000' }, removed: ['segment.bytes'] };
    given(...mirroring).when({ type: 'SyncTopicConfigs', mirror: M, ...change }).then([{ type: 'MirrorTopicConfigsSynced', data: change }]);
    const before = fold(initialMirror(M), mirroring);
    expect(fold(initialMirror(M), [...mirroring, { type: 'MirrorTopicConfigsSynced', data: change }])).toEqual(before);
  });

  it('refuses an unknown topic and an empty change', () => {
    given(...mirroring).when({ type: 'SyncTopicConfigs', mirror: M, topic: 'nope', set: { a: 'b' }, removed: [] }).thenFails('TOPIC_NOT_IN_CLUSTER_MIRROR');
    given(...mirroring).when({ type: 'SyncTopicConfigs', mirror: M, topic: 'orders', set: {}, removed: [] }).thenFails('INVALID_ARGUMENT', /nothing was set or removed/);
  });
});

describe('ACL filter and ACL sync', () => {
  it('SetAclFilter records the principal patterns; a bad pattern is refused', () => {
    given(...mirroring).when({ type: 'SetAclFilter', mirror: M, include: ['User:app-.*'], exclude: ['User:app-admin'] }).then([{ type: 'MirrorAclFilterChanged', data: { include: ['User:app-.*'], exclude: ['User:app-admin'] } }]);
    const state = fold(initialMirror(M), [...mirroring, { type: 'MirrorAclFilterChanged', data: { include: ['User:a'], exclude: [] } }]);
    expect(state).toMatchObject({ aclInclude: ['User:a'], aclExclude: [] });
    expect(fold(initialMirror(M), mirroring)).toMatchObject({ aclInclude: [], aclExclude: [] });
    given(...mirroring).when({ type: 'SetAclFilter', mirror: M, include: ['User:('], exclude: [] }).thenFails('INVALID_TOPIC_PATTERN', /principal pattern/);
  });

  it('SyncTopicAcls records what was granted, revoked and denied; no partition changes; an empty or malformed change is refused', () => {
    const change = { topic: 'orders', granted: [{ principal: 'User:app', host: '*', operation: 'READ' as const, permission: 'ALLOW' as const }], revoked: [], denied: ['User:writer'] };
    given(...mirroring).when({ type: 'SyncTopicAcls', mirror: M, ...change }).then([{ type: 'MirrorTopicAclsSynced', data: change }]);
    expect(fold(initialMirror(M), [...mirroring, { type: 'MirrorTopicAclsSynced', data: change }])).toEqual(fold(initialMirror(M), mirroring));
    given(...mirroring).when({ type: 'SyncTopicAcls', mirror: M, topic: 'nope', granted: [], revoked: [], denied: ['User:x'] }).thenFails('TOPIC_NOT_IN_CLUSTER_MIRROR');
    given(...mirroring).when({ type: 'SyncTopicAcls', mirror: M, topic: 'orders', granted: [], revoked: [], denied: [] }).thenFails('INVALID_ARGUMENT', /nothing was granted/);
    const bad = { principal: 'User:app', host: '*', operation: 'FLY', permission: 'ALLOW' } as unknown as (typeof change.granted)[number];
    given(...mirroring).when({ type: 'SyncTopicAcls', mirror: M, topic: 'orders', granted: [bad], revoked: [], denied: [] }).thenFails('INVALID_ARGUMENT', /is not a topic ACL/);
  });
});

describe('RecordLastMirrored', () => {
  const big = (1n << 62n) + 7n;
  const record = (offset: bigint): MirrorCommand => ({
    type: 'RecordLastMirrored',
    mirror: M,
    positions: [{ topic: 'orders', partition: 0, offset, leaderEpoch: 5, checksum: 'crc32c:1a2b3c4d' }],
  });

  it('with skipRefused, drops the positions the chart refuses and records the rest', () => {
    const positions = [0, 1, 2].map((partition) => ({ topic: 'orders', partition, offset: 10n, leaderEpoch: 1, checksum: 'c' }));
    const failed: MirrorEvent = { type: 'PartitionFailed', data: { topic: 'orders', partition: 1, error: { code: 'X', message: 'x' }, retryable: true } };
    const history = [...mirroring, failed];
    given(...history).when({ type: 'RecordLastMirrored', mirror: M, positions }).thenFails('INVALID_CLUSTER_MIRROR_STATES', /orders-1 is FAILED/);
    given(...history)
      .when({ type: 'RecordLastMirrored', mirror: M, positions, skipRefused: true })
      .then([0, 2].map((partition) => ({ type: 'PartitionPositionRecorded', data: { topic: 'orders', partition, offset: '10', leaderEpoch: 1, checksum: 'c' } })));
  });

  it('records offsets beyond 2^53 exactly, as decimal strings', () => {
    given(...mirroring)
      .when(record(big))
      .then([{ type: 'PartitionPositionRecorded', data: { topic: 'orders', partition: 0, offset: big.toString(), leaderEpoch: 5, checksum: 'crc32c:1a2b3c4d' } }]);
    const state = fold(initialMirror(M), [...mirroring, ...decide(record(big), fold(initialMirror(M), mirroring))]);
    expect(state.topics.get('orders')!.partitions[0]!.lastMirrored).toEqual({ offset: big, leaderEpoch: 5, checksum: 'crc32c:1a2b3c4d' });
  });

  it('refuses an offset that goes backwards', () => {
    const after = [...mirroring, ...decide(record(100n), fold(initialMirror(M), mirroring))];
    given(...after).when(record(99n)).thenFails('OFFSET_DIVERGENCE', /orders-0 is MIRRORING \(the offset is below the recorded 100\)/);
    given(...after).when(record(-1n)).thenFails('INVALID_ARGUMENT');
  });

  it('refuses a partition that is not copying', () =>
    given(created, ordersAdded).when(record(1n)).thenFails('INVALID_CLUSTER_MIRROR_STATES', /orders-0 is LOG_TRUNCATION/));

  it("a stop's final position is recorded with final: true and is the last one", () => {
    const stopping = [...mirroring, ...each('PartitionStopRequested', 'orders', 3, { mode: 'failover' })];
    const final: MirrorCommand = { type: 'RecordLastMirrored', mirror: M, positions: [{ topic: 'orders', partition: 0, offset: 100n, leaderEpoch: 5, checksum: 'c', final: true }] };
    const events = decide(final, fold(initialMirror(M), stopping));
    expect(events).toEqual([{ type: 'PartitionPositionRecorded', data: { topic: 'orders', partition: 0, offset: '100', leaderEpoch: 5, checksum: 'c', final: true } }]);
    given(...stopping, ...events).when(record(120n)).thenFails('INVALID_CLUSTER_MIRROR_STATES', /orders-0 is STOPPING \(its stop recorded its final position \(100\) already\)/);
    given(...stopping, ...events).when({ ...final, skipRefused: true } as MirrorCommand).then([]);
  });
});

describe('RecordRecordsLost', () => {
  const lost = (partition: number, from: bigint, to: bigint): MirrorCommand => ({ type: 'RecordRecordsLost', mirror: M, losses: [{ topic: 'orders', partition, from, to }] });

  it('records the range retention removed, in any partition state, and changes no state', () => {
    const paused = [...mirroring, ...each('PartitionPauseRequested'), ...each('PartitionPaused')];
    given(...paused)
      .when(lost(2, 1_200n, 1_500n))
      .then([{ type: 'PartitionRecordsLost', data: { topic: 'orders', partition: 2, from: '1200', to: '1500' } }]);
    const before = fold(initialMirror(M), paused);
    expect(fold(before, decide(lost(2, 1_200n, 1_500n), before))).toEqual(before);
  });

  it('refuses an empty or negative range and an unknown partition', () => {
    given(...mirroring).when(lost(0, 5n, 5n)).thenFails('INVALID_ARGUMENT', /\[5, 5\) is not a range/);
    given(...mirroring).when(lost(0, -1n, 5n)).thenFails('INVALID_ARGUMENT');
    given(...mirroring).when(lost(7, 0n, 5n)).thenFails('TOPIC_NOT_IN_CLUSTER_MIRROR', /orders-7 is not in mirror/);
  });
});

describe('records lost: the policy and an acceptance', () => {
  it('a mirror can be created to fail on records lost; an unknown policy is refused', () => {
    given()
      .when({ type: 'CreateMirror', mirror: M, sourceCluster: 'east', destinationCluster: 'west', onRecordsLost: 'fail' })
      .then([{ type: 'MirrorCreated', data: { mirror: M, sourceCluster: 'east', destinationCluster: 'west', onRecordsLost: 'fail' } }]);
    given()
      .when({ type: 'CreateMirror', mirror: M, sourceCluster: 'east', destinationCluster: 'west', onRecordsLost: 'skip' as never })
      .thenFails('INVALID_ARGUMENT', /onRecordsLost must be one of continue, fail/);
  });

  it('an operator accepts the loss for named topics (no state changes); unknown topics and none are refused', () => {
    const accept = (topics: string[]): MirrorCommand => ({ type: 'AcceptRecordsLost', mirror: M, topics });
    given(...mirroring).when(accept(['orders', 'orders'])).then([{ type: 'RecordsLossAccepted', data: { topics: ['orders'] } }]);
    const before = fold(initialMirror(M), mirroring);
    expect(fold(before, decide(accept(['orders']), before))).toEqual(before);
    given(...mirroring).when(accept(['payments'])).thenFails('TOPIC_NOT_IN_CLUSTER_MIRROR');
    given(...mirroring).when(accept([])).thenFails('INVALID_ARGUMENT', /name at least one topic/);
    given().when(accept(['orders'])).thenFails('UNKNOWN_CLUSTER_MIRROR');
  });
});

describe('DeleteMirror', () => {
  const stopped = [...mirroring, ...each('PartitionStopRequested', 'orders', 3, { mode: 'failover' }), ...each('PartitionStopped')];

  it('refuses while any partition is not STOPPED, naming it', () =>
    given(...mirroring, ...each('PartitionStopRequested', 'orders', 2, { mode: 'failover' }), ...each('PartitionStopped', 'orders', 1))
      .when({ type: 'DeleteMirror', mirror: M })
      .thenFails('CLUSTER_MIRROR_NOT_EMPTY', /partition orders-1 is STOPPING; partition orders-2 is MIRRORING/));

  it('deletes when every topic is STOPPED, then forgets the topics', () => {
    given(...stopped).when({ type: 'DeleteMirror', mirror: M }).then([{ type: 'MirrorDeletionStarted', data: { mirror: M } }]);
    const deleting = [...stopped, { type: 'MirrorDeletionStarted', data: { mirror: M } } as MirrorEvent];
    given(...deleting).when({ type: 'StartTopics', mirror: M, topics: [{ topic: 'x', partitionCount: 1 }] }).thenFails('INVALID_CLUSTER_MIRROR_STATES', /is deleting/);
    // Repeated (a retry after the first attempt committed): joins the deletion, records nothing.
    given(...deleting).when({ type: 'DeleteMirror', mirror: M }).then([]);
    given(...deleting).when({ type: 'CompleteMirrorDeletion', mirror: M }).then([{ type: 'MirrorDeleted', data: { mirror: M } }]);
    const deleted = given(...deleting, { type: 'MirrorDeleted', data: { mirror: M } });
    expect(deleted.state).toMatchObject({ state: 'deleted', topics: new Map() });
    deleted.when({ type: 'PauseTopics', mirror: M, partitions: 'all' }).thenFails('UNKNOWN_CLUSTER_MIRROR');
    deleted.when({ type: 'CompleteMirrorDeletion', mirror: M }).then([]);
    given().when({ type: 'CompleteMirrorDeletion', mirror: M }).thenFails('UNKNOWN_CLUSTER_MIRROR');
  });

  it('deletes a mirror that never had topics', () => given(created).when({ type: 'DeleteMirror', mirror: M }).then([{ type: 'MirrorDeletionStarted', data: { mirror: M } }]));
});

describe('evolve', () => {
  it('is pure, and folding a batch equals evolving one event at a time', () => {
    const before = fold(initialMirror(M), mirroring);
    const snapshot = structuredClone(before);
    const events = each('PartitionPauseRequested');
    const stepwise = events.reduce<Mirror>(evolve, before);
    expect(fold(before, events)).toEqual(stepwise);
    expect(before).toEqual(snapshot);
  });

  it('refuses an event the charts do not allow', () => {
    expect(() => fold(initialMirror(M), [created, ordersAdded, ...each('PartitionPaused', 'orders', 1)])).toThrowError(
      expect.objectContaining({ code: 'EVENT_HISTORY_INVALID', message: expect.stringMatching(/orders-0 is LOG_TRUNCATION/) }),
    );
    expect(() => fold(initialMirror(M), [ordersAdded])).toThrowError(expect.objectContaining({ code: 'EVENT_HISTORY_INVALID' }));
  });

  it('names the topics a loader must read', () => {
    expect(topicsNeeded({ type: 'DeleteMirror', mirror: M })).toBe('all');
    expect(topicsNeeded({ type: 'PauseTopics', mirror: M, partitions: [{ topic: 'a' }, { topic: 'a', partitions: [1] }, { topic: 'b' }] })).toEqual(['a', 'b']);
    expect(topicsNeeded({ type: 'StopTopics', mirror: M, partitions: 'all', mode: 'failover' })).toBe('all');
  });
});

describe('decide and evolve agree (property)', () => {
  const command = mirrorCommands(M, ['a', 'b']);

  it('every event decide() emits folds without error; refusals are typed KmirrorErrors', () => {
    fc.assert(
      fc.property(fc.array(command, { maxLength: 80 }), (commands) => {
        let state = initialMirror(M);
        const log: MirrorEvent[] = [];
        for (const c of commands) {
          let events: MirrorEvent[];
          try {
            events = decide(c, state);
          } catch (err) {
            expect(isKmirrorError(err), String(err)).toBe(true);
            continue;
          }
          state = fold(state, events);
          log.push(...events);
        }
        expect(fold(initialMirror(M), log)).toEqual(state);
      }),
      { numRuns: 300 },
    );
  });
});
