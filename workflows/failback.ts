// `failback`: after a failover of mirror M (A → B), make the old primary A a mirror of the new
// primary B again (DESIGN §6, kafka/failback.ts). Each failed-over topic of M is compared on A with
// the position recorded at the failover; topics A can continue from are mirrored from there, the
// others (a divergent tail A took after the failover point, a boundary mismatch) are recreated on A
// and mirrored in full — their divergent tail first archived to a side topic on A
// (`<topic>.kmirror-divergent-<time>`, named in the result and the event) unless discarding was
// asked for. The reverse mirror is `<M>-reverse` (B → A), created when missing; its runner copies
// the delta. `promote <M>-reverse` then completes the round trip, and `start <M>` mirrors A → B again.
// Input (Temporal UI: type `failback`, task queue `kmirror`, id `failback:<mirror>:<anything>`):
//   {"mirror": "dr-east", "dryRun": true}
//   {"mirror": "dr-east", "divergent": "archive", "actor": "alice", "reason": "east is back"}
import { ApplicationFailure, executeChild, patched, setHandler, workflowInfo } from '@temporalio/workflow';
import type { PreparedFailback } from '../kafka/failback.ts';
import { asFailure, authorizeRequest, checkRequester, invalid, isStringArray, metadataOf, resumable, setSearchAttributes, short } from './common.ts';
import { createMirror } from './create-mirror.ts';
import { progressQuery, type PartitionProgress, type Requester } from './messages.ts';
import { partitionsOf, progressOver } from './progress.ts';
import { startTopics, type StartTopicsResult } from './start-topics.ts';

export interface FailbackInput extends Requester {
  readonly mirror: string;
  /** Only these failed-over topics (default: every topic whose partitions are all STOPPED). */
  readonly topics?: readonly string[];
  readonly dryRun?: boolean;
  /** What to do with records the old primary took after the failover point (default archive). */
  readonly divergent?: 'archive' | 'discard';
}

export interface FailbackResult {
  readonly mirror: string;
  readonly reverseMirror: string;
  readonly dryRun: boolean;
  readonly topics: readonly PreparedFailback[];
  /** The reverse mirror's start (absent in a dry run). */
  readonly started?: StartTopicsResult;
}

const SHAPE = '{"mirror": string, "topics"?: string[], "dryRun"?: boolean, "divergent"?: "archive" | "discard", "actor"?: string, "reason"?: string}';

/** The reverse mirror's name: `<mirror>-reverse`. */
export const reverseMirrorName = (mirror: string): string => `${mirror}-reverse`;

export async function failback(input: FailbackInput): Promise<FailbackResult> {
  if (typeof input?.mirror !== 'string') throw invalid('failback', '"mirror" must be a string', SHAPE);
  if (input.topics !== undefined && !isStringArray(input.topics)) throw invalid('failback', '"topics" must be a list of strings', SHAPE);
  if (input.dryRun !== undefined && typeof input.dryRun !== 'boolean') throw invalid('failback', '"dryRun" must be true or false', SHAPE);
  if (input.divergent !== undefined && input.divergent !== 'archive' && input.divergent !== 'discard') throw invalid('failback', '"divergent" must be "archive" or "discard"', SHAPE);
  checkRequester('failback', input, SHAPE);
  const { mirror } = input;
  const reverseMirror = reverseMirrorName(mirror);
  setSearchAttributes({ mirror, workflow: 'failback', ...(input.topics ? { topics: input.topics } : {}) });
  let step = 'checking the request';
  // The failed-over partitions it fails back (STOPPED in this mirror); the reverse mirror's own
  // start reports their progress there.
  let listed: PartitionProgress[] = [];
  setHandler(progressQuery, (options) => ({ workflow: 'failback', mirror, step, done: step === 'done', ...progressOver(listed, options) }));
  try {
    await authorizeRequest('failback', { mirror, ...(input.topics ? { topics: input.topics } : {}), wholeMirror: true, alsoAlters: [reverseMirror], ...(input.dryRun === true ? { dryRun: true } : {}) }, input);
    const view = await short.requireMirror({ mirror });
    const stoppedTopics = view.topics.filter((t) => t.partitions.every((p) => p.state === 'STOPPED')).map((t) => t.topic);
    let topics = stoppedTopics;
    if (input.topics !== undefined && input.topics.length > 0) {
      const known = new Set(view.topics.map((t) => t.topic));
      const unknown = input.topics.filter((t) => !known.has(t));
      if (unknown.length > 0) throw ApplicationFailure.nonRetryable(`topic ${unknown.join(', ')} is not in mirror ${mirror}`, 'TOPIC_NOT_IN_CLUSTER_MIRROR');
      const notStopped = input.topics.filter((t) => !stoppedTopics.includes(t));
      if (notStopped.length > 0) throw ApplicationFailure.nonRetryable(`topic ${notStopped.join(', ')} of mirror ${mirror} has not been failed over (every partition must be STOPPED)`, 'MIRROR_TOPIC_NOT_STOPPED');
      topics = [...new Set(input.topics)];
    }
    if (topics.length === 0) {
      throw ApplicationFailure.nonRetryable(`mirror ${mirror} has no failed-over topic (no topic whose partitions are all STOPPED): there is nothing to fail back; fail over first`, 'MIRROR_TOPIC_NOT_STOPPED');
    }
    listed = partitionsOf(view.topics.filter((t) => topics.includes(t.topic)));
    const metadata = metadataOf(input);
    // Archiving a long tail outlasts a short call: the activity heartbeats and resumes where an
    // earlier attempt stopped (older histories called it with the short profile).
    const preparing = patched('failback-prepare-heartbeats') ? resumable : short;
    const prepare = (dryRun: boolean) =>
      preparing.prepareFailback({
        mirror,
        reverseMirror,
        topics,
        dryRun,
        divergent: input.divergent ?? 'archive',
        archiveSuffix: new Date(workflowInfo().startTime).toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-'),
        metadata,
      });
    step = 'comparing the old primary with the recorded positions';
    const planned = await prepare(true);
    if (input.dryRun === true) {
      step = 'done';
      return { mirror, reverseMirror, dryRun: true, topics: planned };
    }
    step = `preparing the reverse mirror ${reverseMirror}`;
    const reverse = await short.loadMirrorView({ mirror: reverseMirror, topics: [] });
    if (reverse.state === null) {
      await executeChild(createMirror, {
        workflowId: `create:${reverseMirror}`,
        args: [{ mirror: reverseMirror, sourceCluster: view.destinationCluster!, destinationCluster: view.sourceCluster!, ...(input.actor ? { actor: input.actor } : {}), reason: input.reason ?? `failback of ${mirror}` }],
      });
    }
    step = 'archiving divergent tails and recreating topics on the old primary';
    const prepared = await prepare(false);
    step = `starting the reverse mirror ${reverseMirror}`;
    const started = await executeChild(startTopics, {
      workflowId: `start:${reverseMirror}:failback-${workflowInfo().runId.slice(0, 8)}`,
      args: [{ mirror: reverseMirror, topics, ...(input.actor ? { actor: input.actor } : {}), reason: input.reason ?? `failback of ${mirror}` }],
    });
    step = 'done';
    return { mirror, reverseMirror, dryRun: false, topics: prepared, started };
  } catch (err) {
    throw asFailure(err);
  }
}
