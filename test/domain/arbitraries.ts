// fast-check arbitraries for mirror commands, shared by the domain property test and the
// projection rebuild test. Selections sometimes name a topic the mirror lacks ('unknown') and
// partitions past the end, so refusals are generated too.
import fc from 'fast-check';
import type { MirrorCommand } from '../../domain/commands.ts';

export function mirrorCommands(mirror: string, topics: readonly string[], clusters: readonly [string, string] = ['east', 'west']): fc.Arbitrary<MirrorCommand> {
  const selection = fc.oneof(
    fc.constant('all' as const),
    fc.array(fc.record({ topic: fc.constantFrom(...topics, 'unknown'), partitions: fc.option(fc.array(fc.nat(3), { maxLength: 3 }), { nil: undefined }) }), {
      minLength: 1,
      maxLength: 2,
    }),
  );
  return fc.oneof(
    fc.constant<MirrorCommand>({ type: 'CreateMirror', mirror, sourceCluster: clusters[0], destinationCluster: clusters[1] }),
    fc.subarray([...topics], { minLength: 1 }).map((names): MirrorCommand => ({ type: 'StartTopics', mirror, topics: names.map((topic) => ({ topic, partitionCount: 3 })) })),
    fc.tuple(fc.constantFrom(...topics, 'unknown'), fc.integer({ min: 2, max: 6 })).map(([topic, partitionCount]): MirrorCommand => ({ type: 'GrowTopic', mirror, topic, partitionCount })),
    fc.subarray([...topics, 'unknown'], { minLength: 1 }).map((names): MirrorCommand => ({ type: 'OverrideIsrWait', mirror, topics: names })),
    fc.constantFrom(...topics, 'unknown').map((topic): MirrorCommand => ({ type: 'SyncTopicConfigs', mirror, topic, set: { 'retention.ms': '86400000' }, removed: ['cleanup.policy'] })),
    fc.constantFrom<MirrorCommand>({ type: 'SetGroupFilter', mirror, include: ['app-.*'], exclude: [] }, { type: 'SetGroupFilter', mirror, include: ['.*'], exclude: ['tmp-.*'] }),
    fc.constantFrom<MirrorCommand>({ type: 'SetAclFilter', mirror, include: ['User:app-.*'], exclude: [] }, { type: 'SetAclFilter', mirror, include: [], exclude: [] }),
    fc
      .tuple(fc.constantFrom(...topics, 'unknown'), fc.constantFrom('User:app', 'User:ops'), fc.boolean())
      .map(([topic, principal, grant]): MirrorCommand => {
        const acl = { principal, host: '*', operation: 'READ' as const, permission: 'ALLOW' as const };
        return { type: 'SyncTopicAcls', mirror, topic, granted: grant ? [acl] : [], revoked: grant ? [] : [acl], denied: grant ? ['User:app'] : [] };
      }),
    selection.map((partitions): MirrorCommand => ({ type: 'CompleteTruncation', mirror, partitions })),
    selection.map((partitions): MirrorCommand => ({ type: 'PauseTopics', mirror, partitions })),
    selection.map((partitions): MirrorCommand => ({ type: 'CompletePause', mirror, partitions })),
    selection.map((partitions): MirrorCommand => ({ type: 'ResumeTopics', mirror, partitions })),
    fc.tuple(selection, fc.constantFrom('failover' as const, 'promote' as const)).map(([partitions, mode]): MirrorCommand => ({ type: 'StopTopics', mirror, partitions, mode })),
    selection.map((partitions): MirrorCommand => ({ type: 'CompleteStop', mirror, partitions })),
    fc
      .tuple(selection, fc.boolean(), fc.constantFrom('CLUSTER_UNREACHABLE', 'OFFSET_DIVERGENCE'))
      .map(([partitions, retryable, code]): MirrorCommand => ({ type: 'FailPartitions', mirror, partitions, error: { code, message: `${code} at random` }, retryable })),
    fc.tuple(selection, fc.constantFrom('automatic' as const, 'operator' as const)).map(([partitions, trigger]): MirrorCommand => ({ type: 'RetryPartitions', mirror, partitions, trigger })),
    fc.tuple(fc.constantFrom(...topics), fc.nat(2), fc.bigInt({ min: 0n, max: 1n << 62n })).map(([topic, partition, offset]): MirrorCommand => ({
      type: 'RecordLastMirrored',
      mirror,
      positions: [{ topic, partition, offset, leaderEpoch: 1, checksum: `crc:${offset % 997n}` }],
    })),
    fc.constant<MirrorCommand>({ type: 'DeleteMirror', mirror }),
    fc.constant<MirrorCommand>({ type: 'CompleteMirrorDeletion', mirror }),
  );
}
