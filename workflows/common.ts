// What every kmirror workflow shares: input checks that answer with a code (a workflow started from
// the Temporal UI gets arbitrary JSON), the event metadata of the request, search attributes, the
// activity proxies by timeout profile, and the one way a failure leaves a workflow or an update
// (an ApplicationFailure keeping the activity's code and message; STYLE 6).
import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  ChildWorkflowFailure,
  patched,
  proxyActivities,
  TimeoutFailure,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { createDataPlaneActivities } from '../activities/data-plane.ts';
import type { createEventStoreActivities } from '../activities/event-store.ts';
import type { createKafkaAdminActivities } from '../activities/kafka-admin.ts';
import type { createRunnerActivities } from '../activities/runner.ts';
import type { EventMetadata } from '../db/event-store/types.ts';
import type { Operation, Requester, WorkflowKind } from './messages.ts';
import { searchAttributePairs } from './search-attributes.ts';

type EventStore = ReturnType<typeof createEventStoreActivities>;
type KafkaAdmin = ReturnType<typeof createKafkaAdminActivities>;
type DataPlane = ReturnType<typeof createDataPlaneActivities>;
type Runner = ReturnType<typeof createRunnerActivities>;

/** Short calls: event store, admin requests, runner updates. Final codes are non-retryable
 *  failures (activities/edge.ts), so retries only repeat what may succeed. */
export const short = proxyActivities<EventStore & KafkaAdmin & Runner & Pick<DataPlane, 'recordFinalPositions'>>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 5 },
});

/** The runner's periodic work (discovery, group sync): one attempt; the next round is the retry. */
export const periodic = proxyActivities<KafkaAdmin>({
  startToCloseTimeout: '5 minutes',
  retry: { maximumAttempts: 1 },
});

/** The destination half of the runner's ACL round, which a stop cancels and waits for: it
 *  heartbeats (a cancellation reaches it within seconds, and a vanished worker's attempt ends at
 *  the heartbeat timeout) and stops between topics once cancelled. */
export const aclRound = proxyActivities<KafkaAdmin>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { maximumAttempts: 1 },
  cancellationType: 'WAIT_CANCELLATION_COMPLETED',
});

/** Updates to the runner: they last as long as the runner's work (a start's alignment and ISR
 *  wait); the activity heartbeats while it waits, so a vanished worker's call is retried. */
export const updates = proxyActivities<Runner>({
  startToCloseTimeout: '7 days',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds' },
});

/** Waits that last as long as they must (the ISR wait): heartbeating, cancellable. */
export const waits = proxyActivities<KafkaAdmin>({
  startToCloseTimeout: '7 days',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

/** Long one-off work that heartbeats and resumes where an earlier attempt stopped (a failback's
 *  archiving): as long as it takes, but a cluster that keeps failing it fails the operation after
 *  about three minutes instead of retrying for ever. */
export const resumable = proxyActivities<KafkaAdmin>({
  startToCloseTimeout: '1 day',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 10 },
});

/** Data-plane tasks of the runner: one attempt each (the runner decides what a failure means),
 *  and a cancellation waits until the copier has really stopped producing. */
export function dataPlane(heartbeatTimeoutMs: number) {
  return proxyActivities<DataPlane>({
    startToCloseTimeout: '1 day',
    heartbeatTimeout: heartbeatTimeoutMs,
    retry: { maximumAttempts: 1 },
    cancellationType: 'WAIT_CANCELLATION_COMPLETED',
  });
}

/** INVALID_ARGUMENT for a malformed workflow input, naming the field and the expected shape. */
export function invalid(workflow: string, what: string, shape: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(`${workflow}: ${what}; expected ${shape}`, 'INVALID_ARGUMENT');
}

export function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

/** A mirror's group or principal filter as a workflow input takes it. */
export interface FilterInput {
  readonly include?: readonly string[];
  readonly exclude?: readonly string[];
}

/** Check the `groups` and `acls` filters of a createMirror or alterMirror input: the shape, then
 *  every pattern compiles (INVALID_TOPIC_PATTERN) — before anything is recorded, so a bad pattern
 *  cannot leave a mirror half-set. */
export function checkFilters(workflow: string, input: { readonly groups?: FilterInput; readonly acls?: FilterInput }, shape: string): void {
  for (const field of ['groups', 'acls'] as const) {
    const filter = input[field];
    if (filter === undefined) continue;
    if (typeof filter !== 'object' || filter === null || (filter.include !== undefined && !isStringArray(filter.include)) || (filter.exclude !== undefined && !isStringArray(filter.exclude))) {
      throw invalid(workflow, `"${field}" must be {"include"?: string[], "exclude"?: string[]}`, shape);
    }
    for (const pattern of [...(filter.include ?? []), ...(filter.exclude ?? [])]) {
      try {
        new RegExp(pattern);
      } catch {
        throw ApplicationFailure.nonRetryable(`${workflow}: ${field === 'groups' ? 'group' : 'principal'} pattern ${JSON.stringify(pattern)} is not a valid regular expression`, 'INVALID_TOPIC_PATTERN');
      }
    }
  }
}

/** Check the requester fields every operation input may carry. */
export function checkRequester(workflow: string, input: Requester, shape: string): void {
  if (input.actor !== undefined && (typeof input.actor !== 'string' || input.actor.trim() === '')) throw invalid(workflow, '"actor" must be a non-empty string', shape);
  if (input.reason !== undefined && typeof input.reason !== 'string') throw invalid(workflow, '"reason" must be a string', shape);
}

/** The event metadata of this workflow's request. A workflow started from the Temporal UI without
 *  an actor is recorded as "temporal-ui". */
export function metadataOf(requester: Requester): EventMetadata & { workflowId: string; runId: string } {
  const { workflowId, runId } = workflowInfo();
  return { actor: requester.actor ?? 'temporal-ui', ...(requester.reason === undefined ? {} : { reason: requester.reason }), workflowId, runId };
}

/**
 * The first step of every operation workflow (DESIGN §8): the activity checks the requester's
 * ClusterMirror grants when authorization is on, and a refusal (recorded as an event) fails the
 * workflow with CLUSTER_MIRROR_AUTHORIZATION_FAILED before anything else happens. Patched in, so
 * histories of workflows started before the check existed replay unchanged.
 */
export async function authorizeRequest(
  workflow: Operation,
  request: { readonly mirror: string; readonly topics?: readonly string[]; readonly include?: readonly string[]; readonly wholeMirror?: boolean; readonly alsoAlters?: readonly string[]; readonly dryRun?: boolean },
  requester: Requester,
): Promise<void> {
  if (!patched('authorize-request')) return;
  await short.authorizeOperation({ workflow, ...request, metadata: metadataOf(requester) });
}

export function setSearchAttributes(of: { mirror: string; workflow: WorkflowKind; topics?: readonly string[] }): void {
  upsertSearchAttributes(searchAttributePairs(of));
}

/** The failure's code (ApplicationFailure type) and message, however deeply Temporal wrapped it. */
export function failureOf(err: unknown): { code: string; message: string; retryable: boolean } | undefined {
  let current: unknown = err;
  while (current instanceof ActivityFailure || current instanceof ChildWorkflowFailure) current = current.cause;
  if (current instanceof ApplicationFailure) return { code: current.type ?? 'INTERNAL', message: current.message, retryable: !current.nonRetryable };
  return undefined;
}

/** True for a cancellation or a timeout (a worker that vanished): no verdict on the partitions. */
export function isStop(err: unknown): boolean {
  let current: unknown = err;
  while (current instanceof ActivityFailure || current instanceof ChildWorkflowFailure) current = current.cause;
  return current instanceof CancelledFailure || current instanceof TimeoutFailure;
}

/** `err` as what leaves a workflow or an update handler: an ApplicationFailure with the code. */
export function asFailure(err: unknown): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  const known = failureOf(err);
  if (known !== undefined) return ApplicationFailure.create({ type: known.code, message: known.message, nonRetryable: !known.retryable });
  return ApplicationFailure.nonRetryable(err instanceof Error ? err.message : String(err), 'INTERNAL');
}

/** A FIFO lock for workflow code: commands and the state updates that follow them run one at a
 *  time, so the runner's picture is applied in the order the event store decided. */
export class Mutex {
  private tail: Promise<unknown> = Promise.resolve();
  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn);
    this.tail = result.catch(() => undefined);
    return result;
  }
}

/** Partitions as a PartitionSelection (grouped by topic, in order). */
export function selectionOf(partitions: readonly { readonly topic: string; readonly partition: number }[]): { topic: string; partitions: number[] }[] {
  const byTopic = new Map<string, number[]>();
  for (const { topic, partition } of partitions) {
    const list = byTopic.get(topic);
    if (list === undefined) byTopic.set(topic, [partition]);
    else list.push(partition);
  }
  return [...byTopic].map(([topic, list]) => ({ topic, partitions: list }));
}
