// Consumer-group offset sync (DESIGN §4, KIP review VK12): the committed offsets of source groups on
// mirrored partitions are copied to the destination — offsets are preserved, so no translation —
// only for groups with no active member there, each clamped to
// max(destination log start, min(source committed, destination end)) so a consumer never skips a
// record the mirror has not copied yet, and never moved backwards (a destination commit ahead of
// the target, e.g. from a lagging read of the source, is kept).
import type { Admin } from 'kafkajs';
import { partitionKey } from './copier.ts';
import { kafkaFailure } from './errors.ts';
import { endOffsets } from './offsets.ts';
import type { RawCluster } from './protocol.ts';
import { filterMatcher, type PatternFilter } from '../domain/names.ts';

/** Groups read or committed at once (each is a coordinator lookup and one request). */
const GROUP_CONCURRENCY = 32;

/** The consumer groups a mirror syncs (its group filter). */
export type GroupFilter = PatternFilter;

export type PartitionAction = 'set' | 'unchanged' | 'kept-ahead';

export interface GroupPartitionPlan {
  readonly topic: string;
  readonly partition: number;
  readonly sourceCommitted: bigint;
  /** null: the group has no commit for this partition on the destination. */
  readonly destinationCommitted: bigint | null;
  readonly destinationEnd: bigint;
  /** max(destination log start, min(source committed, destination end)). */
  readonly target: bigint;
  /** The target is below the source's commit (the mirror has not copied that far yet). */
  readonly clamped: boolean;
  readonly action: PartitionAction;
}

export type GroupStatus = 'synced' | 'skipped-active' | 'unchanged';

export interface GroupPlan {
  readonly group: string;
  /** 'synced': commits to make (or made); 'skipped-active': members are connected on the destination. */
  readonly status: GroupStatus;
  readonly partitions: readonly GroupPartitionPlan[];
}

/** Groups of the source that match the filter (whole-name patterns). */
async function sourceGroups(sourceAdmin: Admin, filter: GroupFilter): Promise<string[]> {
  const matches = filterMatcher(filter, 'group');
  try {
    const { groups } = await sourceAdmin.listGroups();
    return groups
      .map((g) => g.groupId)
      .filter(matches)
      .sort();
  } catch (err) {
    throw kafkaFailure(err, 'list the source consumer groups');
  }
}

/**
 * The group's committed offsets on `topics`. Asks for all of the group's offsets and filters here:
 * kafkajs' fetchOffsets with a topic list adds those topics to the client's metadata topics for
 * good, and once one of them is deleted every later metadata refresh of that shared admin fails
 * (UNKNOWN_TOPIC_OR_PARTITION) — a source topic deleted by its owner would break every start.
 */
async function committed(admin: Admin, group: string, topics: readonly string[]): Promise<Map<string, bigint>> {
  const wanted = new Set(topics);
  const out = new Map<string, bigint>();
  for (const t of await admin.fetchOffsets({ groupId: group })) {
    if (!wanted.has(t.topic)) continue;
    for (const p of t.partitions) if (p.offset !== '-1' && p.offset !== '') out.set(partitionKey(t.topic, p.partition), BigInt(p.offset));
  }
  return out;
}

async function eachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/**
 * What a sync would do now, per group with commits on the mirrored partitions. Reads both
 * clusters; changes nothing.
 */
export async function planGroupOffsets(
  source: { readonly admin: Admin },
  destination: { readonly admin: Admin; readonly raw: RawCluster },
  partitions: readonly { readonly topic: string; readonly partition: number }[],
  filter: GroupFilter,
): Promise<GroupPlan[]> {
  if (partitions.length === 0) return [];
  const mirrored = new Set(partitions.map((p) => partitionKey(p.topic, p.partition)));
  const topics = [...new Set(partitions.map((p) => p.topic))];
  const groups = await sourceGroups(source.admin, filter);
  const bySource = new Map<string, Map<string, bigint>>();
  await eachLimit(groups, GROUP_CONCURRENCY, async (group) => {
    try {
      const offsets = await committed(source.admin, group, topics);
      for (const k of offsets.keys()) if (!mirrored.has(k)) offsets.delete(k);
      if (offsets.size > 0) bySource.set(group, offsets);
    } catch (err) {
      throw kafkaFailure(err, `read the committed offsets of group ${group} on the source`);
    }
  });
  const withCommits = [...bySource.keys()].sort();
  if (withCommits.length === 0) return [];
  const byTopic = new Map<string, number[]>();
  for (const p of partitions) byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p.partition]);
  const topicList = [...byTopic].map(([topic, ps]) => ({ topic, partitions: ps }));
  const [ends, starts] = await Promise.all([endOffsets(destination.raw, topicList, 'destination'), endOffsets(destination.raw, topicList, 'destination', 'earliest')]);
  const active = new Set<string>();
  try {
    for (let i = 0; i < withCommits.length; i += 100) {
      const { groups } = await destination.admin.describeGroups(withCommits.slice(i, i + 100));
      for (const g of groups) if (g.members.length > 0) active.add(g.groupId);
    }
  } catch (err) {
    throw kafkaFailure(err, 'describe the consumer groups on the destination');
  }
  const plans: GroupPlan[] = [];
  await eachLimit(withCommits, GROUP_CONCURRENCY, async (group) => {
    const sourceOffsets = bySource.get(group)!;
    const destOffsets = await committed(destination.admin, group, [...new Set([...sourceOffsets.keys()].map((k) => k.split('\u0000')[0]!))]).catch((err: unknown) => {
      throw kafkaFailure(err, `read the committed offsets of group ${group} on the destination`);
    });
    const planned: GroupPartitionPlan[] = [];
    for (const [k, sourceCommitted] of sourceOffsets) {
      const [topic, p] = k.split('\u0000') as [string, string];
      const end = ends.get(k);
      const start = starts.get(k);
      if (end === undefined || start === undefined) continue;
      const clampedDown = sourceCommitted < end ? sourceCommitted : end;
      const target = clampedDown > start ? clampedDown : start;
      const current = destOffsets.get(k) ?? null;
      // A commit ahead of the target is kept (the destination's own consumers got there, or a later
      // read of the source's is coming) — unless it lies beyond the destination's end, which no
      // mirrored record backs (VK12): then it is set back to the target.
      const action: PartitionAction = current === target ? 'unchanged' : current !== null && current > target && current <= end ? 'kept-ahead' : 'set';
      planned.push({ topic, partition: Number(p), sourceCommitted, destinationCommitted: current, destinationEnd: end, target, clamped: target < sourceCommitted, action });
    }
    planned.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
    const status: GroupStatus = active.has(group) ? 'skipped-active' : planned.some((p) => p.action === 'set') ? 'synced' : 'unchanged';
    plans.push({ group, status, partitions: planned });
  });
  return plans.sort((a, b) => (a.group < b.group ? -1 : 1));
}

export interface GroupSyncSummary {
  readonly groups: number;
  readonly synced: number;
  readonly skippedActive: number;
  readonly unchanged: number;
  /** Partitions whose target was clamped below the source's commit. */
  readonly clampedPartitions: number;
  readonly durationMs: number;
}

/**
 * Runs the commits of a sync, telling them which planned partitions may still be committed: a
 * mirror's partition may have left the state the sync was planned for (a stop began) while the
 * sync read the clusters. Default: all of them.
 */
export type CommitGuard = (commit: (selected: (topic: string, partition: number) => boolean) => Promise<void>) => Promise<void>;

/** Plan and commit: the 'set' partitions of every group that is not active on the destination. */
export async function syncGroupOffsets(
  source: { readonly admin: Admin },
  destination: { readonly admin: Admin; readonly raw: RawCluster },
  partitions: readonly { readonly topic: string; readonly partition: number }[],
  filter: GroupFilter,
  guard: CommitGuard = (commit) => commit(() => true),
): Promise<{ readonly summary: GroupSyncSummary; readonly plans: readonly GroupPlan[] }> {
  const started = Date.now();
  const plans = await planGroupOffsets(source, destination, partitions, filter);
  let skippedActive = 0;
  // Planned groups whose every partition left the planned state before the commit.
  let withdrawn = 0;
  await guard((selected) => eachLimit(
    plans.filter((p) => p.status === 'synced'),
    GROUP_CONCURRENCY,
    async (plan) => {
      const sets = plan.partitions.filter((p) => p.action === 'set' && selected(p.topic, p.partition)).map((p) => ({ topic: p.topic, partition: p.partition, offset: p.target }));
      if (sets.length === 0) {
        withdrawn++;
        return;
      }
      try {
        await destination.raw.commitGroupOffsets(plan.group, sets);
      } catch (err) {
        // A consumer joined between the plan and the commit: the coordinator refuses; next round.
        const failure = kafkaFailure(err, `commit offsets of group ${plan.group} on the destination`);
        if (!['UNKNOWN_MEMBER_ID', 'ILLEGAL_GENERATION', 'REBALANCE_IN_PROGRESS'].includes(String(failure.details.kafkaError))) throw failure;
        skippedActive++;
      }
    },
  ));
  return {
    plans,
    summary: {
      groups: plans.length,
      synced: plans.filter((p) => p.status === 'synced').length - skippedActive - withdrawn,
      skippedActive: plans.filter((p) => p.status === 'skipped-active').length + skippedActive,
      unchanged: plans.filter((p) => p.status === 'unchanged').length + withdrawn,
      clampedPartitions: plans.reduce((n, p) => n + p.partitions.filter((x) => x.clamped).length, 0),
      durationMs: Date.now() - started,
    },
  };
}
