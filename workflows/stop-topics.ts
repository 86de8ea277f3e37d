// What failover and promote share (DESIGN §4): choose the partitions, then STOPPING → stop their
// copies and wait until they have stopped → record each partition's last mirrored offset, source
// leader epoch and boundary checksum → lift the DENY WRITE ACL → ISR wait → STOPPED (writable).
// Every step can be run again: a failover started again after a failure skips what is done
// (STOPPING partitions are not stopped twice; each keeps the final position its stop recorded first).
// Promote first waits, with the source reachable, until the destination has everything the source
// has and no transaction is open there; after the stop it copies what arrived meanwhile, so a planned switchover loses nothing.
import { ApplicationFailure, log, patched, setHandler, sleep } from '@temporalio/workflow';
import type { GroupSyncSummary } from '../kafka/group-offsets.ts';
import type { PartitionOffsets } from '../activities/kafka-admin.ts';
import type { MirrorView } from '../activities/event-store.ts';
import { asFailure, authorizeRequest, checkRequester, invalid, isStringArray, metadataOf, selectionOf, setSearchAttributes, short, updates, waits, dataPlane } from './common.ts';
import { progressQuery, type FailedPartition, type PartitionProgress, type Requester } from './messages.ts';
import { partitionsOf, progressOver, withStatesOf } from './progress.ts';

export interface StopTopicsInput extends Requester {
  readonly mirror: string;
  readonly topics?: readonly string[];
  /** Whole-name regular expressions over the mirror's topics. */
  readonly include?: readonly string[];
  readonly allTopics?: boolean;
  /** Report what would happen (and the records a stop now would leave behind); change nothing. */
  readonly dryRun?: boolean;
}

export interface PromoteInput extends StopTopicsInput {
  /** How long to wait for the lag to reach 0 before refusing (default 300). */
  readonly timeoutSeconds?: number;
}

export interface StoppedPartition {
  readonly topic: string;
  readonly partition: number;
  /** State before the operation (dry run: now). */
  readonly state: string;
  readonly destinationEnd: string | null;
  readonly sourceEnd: string | null;
  /** Records on the source the destination does not have (the RPO of a stop now, or of this stop);
   *  null when the source does not answer. */
  readonly recordsBehind: string | null;
  /** A transaction is open on the source (its LSO below its high watermark): its records are not
   *  mirrored until it ends. null when the source does not answer. */
  readonly transactionOpenOnSource: boolean | null;
}

export interface StopTopicsResult {
  readonly mirror: string;
  readonly mode: 'failover' | 'promote';
  readonly dryRun: boolean;
  readonly durationMs: number;
  readonly source: PartitionOffsets['source'];
  readonly partitions: readonly StoppedPartition[];
  /** Principals whose DENY WRITE was lifted (or why none was). */
  readonly writable?: { readonly lifted: readonly string[]; readonly reason?: string };
  /** The final consumer-group offset sync (null when the source did not answer or it failed). */
  readonly groupSync?: GroupSyncSummary | null;
  readonly states: Readonly<Record<string, number>>;
  readonly failed: readonly FailedPartition[];
}

const SHAPE = '{"mirror": string, "topics": string[] | "include": string[] | "allTopics": true, "dryRun"?: boolean, "actor"?: string, "reason"?: string}';

/** The mirror's partitions the request names. */
function choose(workflow: string, view: MirrorView, input: StopTopicsInput): PartitionProgress[] {
  const known = new Map(view.topics.map((t) => [t.topic, t]));
  let topics: string[];
  if (input.allTopics === true) topics = [...known.keys()];
  else if (input.topics !== undefined && input.topics.length > 0) {
    const unknown = input.topics.filter((t) => !known.has(t));
    if (unknown.length > 0) throw ApplicationFailure.nonRetryable(`topic ${unknown.join(', ')} is not in mirror ${view.mirror}`, 'TOPIC_NOT_IN_CLUSTER_MIRROR');
    topics = [...new Set(input.topics)];
  } else {
    const patterns = (input.include ?? []).map((p) => {
      try {
        return new RegExp(`^(?:${p})$`);
      } catch {
        throw ApplicationFailure.nonRetryable(`topic pattern ${JSON.stringify(p)} is not a valid regular expression`, 'INVALID_TOPIC_PATTERN');
      }
    });
    topics = [...known.keys()].filter((t) => patterns.some((r) => r.test(t)));
    if (topics.length === 0) throw ApplicationFailure.nonRetryable(`no topic of mirror ${view.mirror} matches ${input.include!.join(' ')}`, 'TOPIC_NOT_IN_CLUSTER_MIRROR');
  }
  if (topics.length === 0) throw invalid(workflow, `mirror ${view.mirror} has no topics`, SHAPE);
  return partitionsOf(topics.sort().map((topic) => known.get(topic)!));
}

const behind = (sourceEnd: string | null, destinationEnd: string | null): string | null => {
  if (sourceEnd === null || destinationEnd === null) return null;
  const d = BigInt(sourceEnd) - BigInt(destinationEnd);
  return (d > 0n ? d : 0n).toString();
};

export async function stopTopics(mode: 'failover' | 'promote', input: PromoteInput): Promise<StopTopicsResult> {
  const workflow = mode;
  if (typeof input?.mirror !== 'string') throw invalid(workflow, '"mirror" must be a string', SHAPE);
  for (const field of ['topics', 'include'] as const) {
    if (input[field] !== undefined && !isStringArray(input[field])) throw invalid(workflow, `"${field}" must be a list of strings`, SHAPE);
  }
  const ways = [input.allTopics === true, (input.topics ?? []).length > 0, (input.include ?? []).length > 0].filter(Boolean).length;
  if (ways !== 1) throw invalid(workflow, 'name topics, include patterns, or allTopics (one of them)', SHAPE);
  if (input.dryRun !== undefined && typeof input.dryRun !== 'boolean') throw invalid(workflow, '"dryRun" must be true or false', SHAPE);
  if (input.timeoutSeconds !== undefined && !(typeof input.timeoutSeconds === 'number' && input.timeoutSeconds > 0)) throw invalid(workflow, '"timeoutSeconds" must be a positive number', SHAPE);
  checkRequester(workflow, input, SHAPE);
  const { mirror } = input;
  const started = Date.now();
  setSearchAttributes({ mirror, workflow, ...(input.topics ? { topics: input.topics } : {}) });
  let step = 'checking the request';
  let chosen: PartitionProgress[] = [];
  // The offsets last read (a promote re-reads them every second while it waits for the lag).
  let latest: PartitionOffsets | undefined;
  setHandler(progressQuery, (options) => {
    const withOffsets = chosen.map((p, i) => ({ ...p, destinationEnd: latest?.partitions[i]?.destinationEnd ?? null, sourceEnd: latest?.partitions[i]?.sourceEnd ?? null }));
    return { workflow, mirror, step, done: step === 'done', ...progressOver(withOffsets, options) };
  });

  try {
    await authorizeRequest(
      workflow,
      { mirror, ...(input.topics ? { topics: input.topics } : {}), ...(input.include ? { include: input.include } : {}), wholeMirror: input.allTopics === true, ...(input.dryRun === true ? { dryRun: true } : {}) },
      input,
    );
    const view = await short.requireMirror({ mirror });
    chosen = choose(workflow, view, input);
    // The result reports each partition's state before the operation; the progress query, as it goes.
    const before = chosen;
    const refs = chosen.map(({ topic, partition }) => ({ topic, partition }));
    step = 'reading offsets on both clusters';
    // Every read is kept for the progress query.
    const readOffsets = async (): Promise<PartitionOffsets> => (latest = await short.partitionOffsets({ mirror, partitions: refs }));
    let offsets = await readOffsets();
    const report = (o: PartitionOffsets): StoppedPartition[] =>
      before.map(({ error: _, ...p }, i) => {
        const { sourceEnd, destinationEnd } = o.partitions[i]!;
        // Absent from an activity worker older than this field (a rolling upgrade): not known.
        const sourceHighWatermark = o.partitions[i]!.sourceHighWatermark ?? null;
        const transactionOpenOnSource = sourceEnd === null || sourceHighWatermark === null ? null : BigInt(sourceHighWatermark) > BigInt(sourceEnd);
        return { ...p, destinationEnd, sourceEnd, recordsBehind: behind(sourceEnd, destinationEnd), transactionOpenOnSource };
      });
    // What a promote refuses, its dry run refuses too (a dry run never says yes to what would fail).
    if (mode === 'promote') checkPromotable(offsets, chosen);
    if (input.dryRun === true) {
      step = 'done';
      return { mirror, mode, dryRun: true, durationMs: Date.now() - started, source: offsets.source, partitions: report(offsets), states: progressOver(chosen, { summary: true }).states, failed: [] };
    }
    const metadata = metadataOf(input);
    let groupSync: GroupSyncSummary | null = null;
    const request = { partitions: selectionOf(refs), actor: metadata.actor, ...(input.reason ? { reason: input.reason } : {}), workflowId: metadata.workflowId, runId: metadata.runId };

    if (mode === 'promote') {
      step = 'waiting until the destination has everything the source has';
      const deadline = started + (input.timeoutSeconds ?? 300) * 1_000;
      // A transaction open on the source holds records the mirror cannot have yet, and that its
      // producer may still commit: zero loss means waiting until it has ended (older histories
      // waited for the lag alone).
      const waitsForTransactions = patched('promote-waits-for-source-transactions');
      for (;;) {
        const pending = report(offsets).filter((p) => p.state === 'MIRRORING' && (p.recordsBehind !== '0' || (waitsForTransactions && p.transactionOpenOnSource === true)));
        if (pending.length === 0) break;
        if (Date.now() >= deadline) {
          const lagging = pending.filter((p) => p.recordsBehind !== '0');
          const open = pending.filter((p) => p.transactionOpenOnSource === true);
          const total = lagging.reduce((n, p) => n + BigInt(p.recordsBehind ?? '0'), 0n);
          const why = [
            ...(lagging.length > 0 ? [`the lag (${total} records in ${lagging.length} partitions) did not reach 0`] : []),
            ...(open.length > 0 ? [`${open.length} partitions still have a transaction open on the source (${open[0]!.topic}-${open[0]!.partition} first)`] : []),
          ].join(' and ');
          throw ApplicationFailure.nonRetryable(
            `${why} within ${input.timeoutSeconds ?? 300} s; stop the producers on the source (their transactions end, or abort when they time out) and promote again, or use \`kmirror failover\``,
            'PROMOTE_TIMEOUT',
          );
        }
        await sleep('1 second');
        offsets = await readOffsets();
      }
    }

    step = 'stopping the copies';
    chosen = withStatesOf(chosen, await updates.updateRunner({ mirror, update: 'stop', request: { ...request, mode } }));
    if (mode === 'promote') {
      // Records that arrived between the last lag check and the stop: copy them too.
      step = 'copying what arrived while stopping';
      const drained = await dataPlane(30_000).drainPartitions({ mirror, assignments: selectionOf(refs) });
      // Zero loss or no promote: a partition whose last copy failed is not made writable.
      const failed = drained.partitions.filter((p) => p.status === 'failed');
      if (patched('promote-checks-its-drain') && (failed.length > 0 || drained.leaseLost)) {
        const first = failed[0];
        throw ApplicationFailure.nonRetryable(
          `${first === undefined ? 'another worker took the partitions\' lease during' : `${first.topic}-${first.partition} failed in`} promote's last copy${first?.error ? ` (${first.error.code}: ${first.error.message})` : ''}${failed.length > 1 ? ` (and ${failed.length - 1} more)` : ''}: nothing was made writable; the partitions stay STOPPING — promote again (it copies what is left), or use \`kmirror failover\``,
          first?.error?.code ?? 'LEASE_LOST',
        );
      }
    }
    if (offsets.source.reachable) {
      // The final consumer-group sync, so consumers moved to the destination start where they left off.
      step = 'syncing consumer-group offsets one last time';
      try {
        groupSync = await short.syncGroupOffsets({ mirror, topics: [...new Set(refs.map((r) => r.topic))], states: ['STOPPING'] });
      } catch (err) {
        log.warn('the final consumer-group sync failed; the stop goes on', { mirror, error: String(err) });
      }
    }
    step = 'recording the last mirrored positions';
    await short.recordFinalPositions({ mirror, partitions: refs, metadata });
    const final = await readOffsets();
    step = 'lifting the read-only ACLs';
    const topics = [...new Set(refs.map((r) => r.topic))];
    const writable = await short.liftReadOnly({ mirror, topics });
    step = 'waiting for the ISR';
    await waits.waitForIsr({ mirror, topics });
    step = 'completing the stop';
    const now = await short.loadMirrorView({ mirror, topics });
    const stopping = now.topics.flatMap((t) => t.partitions.map((p, partition) => ({ topic: t.topic, partition, state: p.state }))).filter((p) => p.state === 'STOPPING');
    if (stopping.length > 0) await short.applyMirrorCommand({ command: { type: 'CompleteStop', mirror, partitions: selectionOf(stopping) }, metadata });
    const change = await updates.updateRunner({ mirror, update: 'refresh', request });
    chosen = withStatesOf(chosen, change);
    step = 'done';
    return { mirror, mode, dryRun: false, durationMs: Date.now() - started, source: final.source, partitions: report(final), writable, groupSync, states: change.states, failed: change.failed };
  } catch (err) {
    throw asFailure(err);
  }
}

/** A promote needs the source to answer (it waits for the lag to reach 0) and every partition
 *  MIRRORING (or already stopping). */
function checkPromotable(offsets: PartitionOffsets, chosen: readonly PartitionProgress[]): void {
  if (!offsets.source.reachable) {
    throw ApplicationFailure.nonRetryable(
      `promote needs the source cluster to answer (${offsets.source.error?.code}: ${offsets.source.error?.message}); in a disaster use \`kmirror failover\`, which does not`,
      'CLUSTER_UNREACHABLE',
    );
  }
  const notMirroring = chosen.filter((p) => !['MIRRORING', 'STOPPING', 'STOPPED'].includes(p.state));
  if (notMirroring.length > 0) {
    const first = notMirroring[0]!;
    throw ApplicationFailure.nonRetryable(
      `promote waits for the lag to reach 0, so every partition must be MIRRORING: ${first.topic}-${first.partition} is ${first.state}${notMirroring.length > 1 ? ` (and ${notMirroring.length - 1} more)` : ''}; resume or retry them, or use failover`,
      'INVALID_CLUSTER_MIRROR_STATES',
    );
  }
}
