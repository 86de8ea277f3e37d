// `startTopics`: add source topics to a mirror (DESIGN §4 start). Names and patterns are resolved
// on the source; destination topics that exist must be exact prefixes of their source; nothing is
// recorded or created until the request passed every check. Then: the destination topics are
// created (the source's partition count and configs, its replication factor capped by the
// destination's brokers) and made read-only for everyone but kmirror; the partitions enter
// LOG_TRUNCATION; the runner aligns them, waits for their ISR and moves them to MIRRORING, and the
// workflow returns once none is still in LOG_TRUNCATION. Patterns are kept for auto-discovery.
// Input (Temporal UI: type `startTopics`, task queue `kmirror`, id `start:<mirror>:<anything>`):
//   {"mirror": "dr-east", "topics": ["orders"], "include": ["payments\\..*"], "exclude": [], "actor": "alice"}
import { CancellationScope, setHandler, sleep } from '@temporalio/workflow';
import type { ResolvedTopic } from '../activities/kafka-admin.ts';
import type { ReadOnlyResult } from '../kafka/topic-acls.ts';
import type { CreatedTopic } from '../kafka/mirror-topics.ts';
import { PartitionStates } from '../machines/partition.ts';
import { asFailure, authorizeRequest, checkRequester, invalid, isStringArray, metadataOf, setSearchAttributes, short, updates } from './common.ts';
import { progressQuery, type FailedPartition, type PartitionProgress, type Requester } from './messages.ts';
import { progressOver } from './progress.ts';

export interface StartTopicsInput extends Requester {
  readonly mirror: string;
  readonly topics?: readonly string[];
  readonly include?: readonly string[];
  readonly exclude?: readonly string[];
}

export interface StartTopicsResult {
  readonly mirror: string;
  readonly topics: readonly CreatedTopic[];
  readonly readOnly: ReadOnlyResult;
  readonly partitions: number;
  readonly states: Readonly<Record<string, number>>;
  readonly failed: readonly FailedPartition[];
}

const SHAPE = '{"mirror": string, "topics"?: string[], "include"?: string[], "exclude"?: string[], "actor"?: string, "reason"?: string}';

export async function startTopics(input: StartTopicsInput): Promise<StartTopicsResult> {
  if (typeof input?.mirror !== 'string') throw invalid('startTopics', '"mirror" must be a string', SHAPE);
  for (const field of ['topics', 'include', 'exclude'] as const) {
    if (input[field] !== undefined && !isStringArray(input[field])) throw invalid('startTopics', `"${field}" must be a list of strings`, SHAPE);
  }
  if ((input.topics ?? []).length === 0 && (input.include ?? []).length === 0) throw invalid('startTopics', 'name topics or include patterns', SHAPE);
  if ((input.exclude ?? []).length > 0 && (input.include ?? []).length === 0) throw invalid('startTopics', '"exclude" narrows "include" patterns; give include patterns too', SHAPE);
  checkRequester('startTopics', input, SHAPE);
  const { mirror } = input;
  setSearchAttributes({ mirror, workflow: 'startTopics', ...(input.topics ? { topics: input.topics } : {}) });

  let step = 'resolving topics on the source';
  let done = false;
  let resolved: readonly ResolvedTopic[] = [];
  // (lastMirrored is absent from an activity worker older than it: a rolling upgrade.)
  let states: { topic: string; states: string; lastMirrored?: readonly (string | null)[] }[] = [];
  setHandler(progressQuery, (options) => {
    // One letter per partition state (partitionStates' compact answer), decoded here.
    const list: PartitionProgress[] = states.flatMap((t) =>
      [...t.states].map((c, partition) => ({ topic: t.topic, partition, state: PartitionStates[c.charCodeAt(0) - 65] ?? 'UNKNOWN', lastMirroredOffset: t.lastMirrored?.[partition] ?? null })),
    );
    // The partitions the start is about, also before the runner has reported any of them.
    const total = resolved.reduce((n, t) => n + t.partitionCount, 0);
    return { workflow: 'startTopics', mirror, step, done, ...progressOver(list, options), total };
  });

  try {
    await authorizeRequest('startTopics', { mirror, ...(input.topics ? { topics: input.topics } : {}), ...(input.include ? { include: input.include } : {}) }, input);
    const view = await short.requireMirror({ mirror });
    const known = view.topics.map((t) => t.topic);
    resolved = await short.resolveTopics({ mirror, known, ...(input.topics ? { topics: input.topics } : {}), ...(input.include ? { include: input.include } : {}), ...(input.exclude ? { exclude: input.exclude } : {}) });
    step = 'checking the destination';
    const { missing } = await short.inspectDestination({ mirror, topics: resolved });
    const metadata = metadataOf(input);
    const command = {
      type: 'StartTopics',
      mirror,
      topics: resolved.map((t) => ({ topic: t.topic, partitionCount: t.partitionCount })),
      ...(input.include ? { filter: { include: [...input.include], exclude: [...(input.exclude ?? [])] } } : {}),
    } as const;
    await short.applyMirrorCommand({ command, metadata, dryRun: true });
    step = missing.length > 0 ? `creating ${missing.length} destination topics` : 'checking destination topics';
    const names = resolved.map((t) => t.topic);
    const prepared = await short.prepareMirrorTopics({ mirror, topics: names });
    step = 'recording the start';
    await short.applyMirrorCommand({ command, metadata });
    step = 'aligning the destination and waiting for the ISR';
    const truncating = updates.updateRunner({
      mirror,
      update: 'truncate',
      request: { partitions: names.map((topic) => ({ topic })), actor: metadata.actor, ...(input.reason ? { reason: input.reason } : {}), workflowId: metadata.workflowId, runId: metadata.runId },
    });
    // Watch the partitions while the runner works (what the progress query answers).
    const watcher = new CancellationScope();
    const watching = watcher.run(async () => {
      for (;;) {
        states = await short.partitionStates({ mirror, topics: names });
        await sleep('2 seconds');
      }
    });
    const change = await truncating.finally(() => watcher.cancel());
    await watching.catch(() => undefined);
    states = names.length > 0 ? await short.partitionStates({ mirror, topics: names }) : [];
    step = 'done';
    done = true;
    return { mirror, topics: prepared.topics, readOnly: prepared.readOnly, partitions: change.partitions, states: change.states, failed: change.failed };
  } catch (err) {
    throw asFailure(err);
  }
}
