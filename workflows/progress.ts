// The partitions an operation is about, as its `progress` query and results list them. Pure (types
// only), so the runner's state and every operation workflow share it, and unit tests run it bare.
import type { TopicView } from '../activities/event-store.ts';
import type { OperationProgress, PartitionProgress, ProgressOptions } from './messages.ts';

/** A partition's key in maps: topic names cannot hold NUL. */
export const key = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

/** The progress query and a result list at most this many partitions. */
export const LISTED_PARTITIONS = 10_000;

/** The `progress` query's partition fields over `list`: the count per state, the list itself (at
 *  most LISTED_PARTITIONS) unless a summary is asked, and the first unfinished partitions when asked. */
export function progressOver(list: readonly PartitionProgress[], options: ProgressOptions = {}): Pick<OperationProgress, 'total' | 'states' | 'partitions' | 'unfinished'> {
  const states: Record<string, number> = {};
  for (const p of list) states[p.state] = (states[p.state] ?? 0) + 1;
  const asked = options.unfinished;
  const unfinished: PartitionProgress[] = [];
  if (asked !== undefined) {
    for (const p of list) {
      if (unfinished.length >= Math.min(asked.max, 100)) break;
      if (!asked.done.includes(p.state)) unfinished.push(p);
    }
  }
  return { total: list.length, states, ...(options.summary === true ? {} : { partitions: list.slice(0, LISTED_PARTITIONS) }), ...(asked === undefined ? {} : { unfinished }) };
}

/** The partitions of `topics` as the event store has them, topic by topic in partition order. */
export function partitionsOf(topics: readonly TopicView[]): PartitionProgress[] {
  return topics.flatMap((t) => t.partitions.map((p, partition) => ({ topic: t.topic, partition, state: p.state, ...(p.error ? { error: { code: p.error.code, message: p.error.message } } : {}) })));
}

/** `list` with the states (and errors) a runner change reports for its partitions. */
export function withStatesOf(list: readonly PartitionProgress[], change: { readonly list?: readonly PartitionProgress[] }): PartitionProgress[] {
  if (change.list === undefined) return [...list];
  const after = new Map(change.list.map((p) => [key(p.topic, p.partition), p]));
  return list.map((p) => {
    const now = after.get(key(p.topic, p.partition));
    if (now === undefined) return p;
    const { error: _, ...rest } = p;
    return { ...rest, state: now.state, ...(now.error ? { error: now.error } : {}) };
  });
}
