// The Temporal client calls the CLI and the tests make: connect, start an operation with its
// deterministic workflow id (a repeated request joins the running one), follow its progress, and
// turn its failure back into the KmirrorError the operation failed with.
import { createHash } from 'node:crypto';
import { Client, Connection, WorkflowFailedError, type WorkflowHandle, type WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { ApplicationFailure, TypedSearchAttributes, defaultPayloadConverter, type Payload } from '@temporalio/common';
import type { Config } from '../config.ts';
import { ErrorCodes, KmirrorError, type ErrorCode } from '../domain/errors.ts';
import type { CreateMirrorInput, CreateMirrorResult } from '../workflows/create-mirror.ts';
import type { AlterMirrorInput, AlterMirrorResult } from '../workflows/alter-mirror.ts';
import { progressQuery, runnerWorkflowId, statusQuery, type Operation, type OperationProgress, type ProgressOptions, type RunnerStatus } from '../workflows/messages.ts';
import type { TopicsChangeInput, TopicsChangeResult } from '../workflows/change-topics.ts';
import { searchAttributePairs } from '../workflows/search-attributes.ts';
import type { StartTopicsInput, StartTopicsResult } from '../workflows/start-topics.ts';
import type { PromoteInput, StopTopicsInput, StopTopicsResult } from '../workflows/stop-topics.ts';
import type { DeleteMirrorInput, DeleteMirrorResult } from '../workflows/delete-mirror.ts';
import type { RetryPartitionsInput, RetryPartitionsResult } from '../workflows/retry-partitions.ts';
import type { FailbackInput, FailbackResult } from '../workflows/failback.ts';

export interface OperationInputs {
  createMirror: CreateMirrorInput;
  alterMirror: AlterMirrorInput;
  startTopics: StartTopicsInput;
  pauseTopics: TopicsChangeInput;
  resumeTopics: TopicsChangeInput;
  failover: StopTopicsInput;
  promote: PromoteInput;
  retryPartitions: RetryPartitionsInput;
  deleteMirror: DeleteMirrorInput;
  failback: FailbackInput;
}

export interface OperationResults {
  createMirror: CreateMirrorResult;
  alterMirror: AlterMirrorResult;
  startTopics: StartTopicsResult;
  pauseTopics: TopicsChangeResult;
  resumeTopics: TopicsChangeResult;
  failover: StopTopicsResult;
  promote: StopTopicsResult;
  retryPartitions: RetryPartitionsResult;
  deleteMirror: DeleteMirrorResult;
  failback: FailbackResult;
}

const PREFIX: Record<Operation, string> = {
  createMirror: 'create',
  alterMirror: 'alter',
  startTopics: 'start',
  pauseTopics: 'pause',
  resumeTopics: 'resume',
  failover: 'failover',
  promote: 'promote',
  retryPartitions: 'retry',
  deleteMirror: 'delete',
  failback: 'failback',
};

const digest = (value: unknown): string => createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 12);
const sorted = (list: readonly string[] | undefined): string[] => [...new Set(list ?? [])].sort();

/**
 * The workflow id of a request: `<op>:<mirror>` for create, else `<op>:<mirror>:<12 hex of what it
 * names>`. The same request gets the same id, so starting it while it runs joins it; who asks and
 * why do not count.
 */
export function operationWorkflowId<O extends Operation>(operation: O, input: OperationInputs[O]): string {
  const base = `${PREFIX[operation]}:${input.mirror}`;
  switch (operation) {
    case 'createMirror':
    case 'deleteMirror':
      return base;
    case 'alterMirror': {
      const i = input as AlterMirrorInput;
      const filter = (f: AlterMirrorInput['groups']) => (f === undefined ? null : [f.include === undefined ? null : [...f.include], f.exclude === undefined ? null : [...f.exclude]]);
      return `${base}:${digest([filter(i.groups), filter(i.acls)])}`;
    }
    case 'failback': {
      const i = input as FailbackInput;
      return `${base}:${digest([sorted(i.topics), i.dryRun === true, i.divergent ?? 'archive'])}`;
    }
    case 'retryPartitions': {
      const i = input as RetryPartitionsInput;
      // Accepting a loss is part of what is asked: a retry that accepts must not join one that does not.
      return `${base}:${digest([sorted(i.topics), i.overrideIsrWait === true, i.acceptRecordsLost === true])}`;
    }
    case 'startTopics': {
      const i = input as StartTopicsInput;
      return `${base}:${digest([sorted(i.topics), sorted(i.include), sorted(i.exclude)])}`;
    }
    case 'failover':
    case 'promote': {
      // A dry run is its own request: it must not join (or be joined by) the real one.
      const i = input as StopTopicsInput;
      return `${base}:${digest([i.allTopics === true ? 'all' : sorted(i.topics), sorted(i.include), i.dryRun === true])}`;
    }
    default: {
      const i = input as TopicsChangeInput;
      return `${base}:${digest(i.allTopics === true ? 'all' : sorted(i.topics))}`;
    }
  }
}

export interface TemporalClient {
  readonly client: Client;
  readonly taskQueue: string;
  close(): Promise<void>;
}

/** Connect to Temporal; TEMPORAL_UNREACHABLE when it does not answer. */
export async function connectClient(config: Pick<Config, 'temporal'>): Promise<TemporalClient> {
  const { address, namespace, taskQueue } = config.temporal;
  let connection: Connection;
  try {
    connection = await Connection.connect({ address, connectTimeout: '5 seconds' });
  } catch (err) {
    throw new KmirrorError('TEMPORAL_UNREACHABLE', `cannot connect to Temporal at ${address} (${(err as Error).message}); is it running? \`npm run stack -- up\` starts the local one`, { address }, { cause: err });
  }
  return { client: new Client({ connection, namespace }), taskQueue, close: () => connection.close() };
}

/** Start an operation (or join the same request while it runs). */
export async function startOperation<O extends Operation>(temporal: TemporalClient, operation: O, input: OperationInputs[O]): Promise<WorkflowHandleWithFirstExecutionRunId> {
  const topics = (input as { topics?: readonly string[] }).topics;
  return temporal.client.workflow.start(operation, {
    taskQueue: temporal.taskQueue,
    workflowId: operationWorkflowId(operation, input),
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    typedSearchAttributes: new TypedSearchAttributes(searchAttributePairs({ mirror: input.mirror, workflow: operation, ...(topics ? { topics } : {}) })),
  });
}

/**
 * The settings a running operation was started with that differ from `input` (top-level fields,
 * `actor` and `reason` aside: who asks does not change what is done). A repeated request joins the
 * running workflow (same id); when its settings differ — another `--timeout`, say — the running
 * one's apply, and the caller should say so. Empty when they are the same (or cannot be read).
 */
export async function differingSettings<O extends Operation>(temporal: TemporalClient, handle: WorkflowHandleWithFirstExecutionRunId, input: OperationInputs[O]): Promise<string[]> {
  try {
    const { history } = await temporal.client.workflowService.getWorkflowExecutionHistory({
      namespace: temporal.client.options.namespace,
      execution: { workflowId: handle.workflowId, runId: handle.firstExecutionRunId },
      maximumPageSize: 1,
    });
    const payload = history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    if (!payload) return [];
    const running = defaultPayloadConverter.fromPayload(payload as Payload) as Record<string, unknown>;
    const asked = input as unknown as Record<string, unknown>;
    const keys = new Set([...Object.keys(running), ...Object.keys(asked)].filter((k) => k !== 'actor' && k !== 'reason'));
    return [...keys].filter((k) => JSON.stringify(running[k]) !== JSON.stringify(asked[k])).sort();
  } catch {
    return [];
  }
}

/** An activity an operation is waiting on, with its last heartbeat (what a long wait waits for:
 *  the ISR wait heartbeats the partitions and brokers it lacks). */
export interface PendingActivity {
  readonly activity: string;
  readonly attempt: number;
  readonly details: unknown;
}

/** The pending activities of a workflow execution, heartbeat details decoded. */
export async function pendingActivities(handle: WorkflowHandle): Promise<PendingActivity[]> {
  const { raw } = await handle.describe();
  return (raw.pendingActivities ?? []).map((a) => {
    const payload = a.heartbeatDetails?.payloads?.[0];
    return { activity: a.activityType?.name ?? 'unknown', attempt: a.attempt ?? 0, details: payload ? defaultPayloadConverter.fromPayload(payload as Payload) : undefined };
  });
}

/** An operation's progress, and what it is waiting on. */
export type OperationProgressView = OperationProgress & { readonly pending: readonly PendingActivity[] };

/** Wait for the result, calling onProgress with the workflow's progress every `everyMs` (a
 *  summary, plus the first unfinished partitions when `unfinished` asks for them). */
export async function awaitOperation<O extends Operation>(
  handle: WorkflowHandle,
  options: {
    readonly onProgress?: (progress: OperationProgressView) => void;
    readonly everyMs?: number;
    readonly unfinished?: ProgressOptions['unfinished'];
    /** Another workflow that works for this one (a start's runner aligns and waits for the ISR):
     *  its pending ISR wait is shown as this operation's. */
    readonly worksFor?: WorkflowHandle;
  } = {},
): Promise<OperationResults[O]> {
  let finished = false;
  const asked: ProgressOptions = { summary: true, ...(options.unfinished === undefined ? {} : { unfinished: options.unfinished }) };
  const pendingOf = async (): Promise<PendingActivity[]> => {
    const [own, helper] = await Promise.all([pendingActivities(handle).catch(() => []), options.worksFor === undefined ? [] : pendingActivities(options.worksFor).catch(() => [])]);
    return [...own, ...helper.filter((a) => a.activity === 'waitForIsr')];
  };
  const polling = (async () => {
    while (!finished && options.onProgress !== undefined) {
      try {
        const [progress, pending] = await Promise.all([handle.query(progressQuery, asked), pendingOf()]);
        options.onProgress({ ...progress, pending });
      } catch {
        // not started yet, or finished meanwhile: the next round (or the result) tells
      }
      await new Promise((r) => setTimeout(r, options.everyMs ?? 500));
    }
  })();
  try {
    return (await handle.result()) as OperationResults[O];
  } catch (err) {
    throw operationError(err);
  } finally {
    finished = true;
    await polling;
  }
}

/** An operation's failure as the KmirrorError it carries (its code and message). */
export function operationError(err: unknown): KmirrorError {
  let cause: unknown = err instanceof WorkflowFailedError ? err.cause : err;
  while (cause instanceof Error && !(cause instanceof ApplicationFailure) && (cause as { cause?: unknown }).cause !== undefined) cause = (cause as { cause?: unknown }).cause;
  if (cause instanceof ApplicationFailure) {
    const code: ErrorCode = (ErrorCodes as readonly string[]).includes(cause.type ?? '') ? (cause.type as ErrorCode) : 'INTERNAL';
    return new KmirrorError(code, cause.message, {}, { cause: err });
  }
  if (err instanceof KmirrorError) return err;
  return new KmirrorError('INTERNAL', err instanceof Error ? err.message : String(err), {}, { cause: err });
}

/** The runner's progress and status (its running copies), or undefined when it is not running. */
export async function runnerProgress(temporal: TemporalClient, mirror: string): Promise<{ progress: OperationProgress; status: RunnerStatus } | undefined> {
  const handle = temporal.client.workflow.getHandle(runnerWorkflowId(mirror));
  try {
    const [progress, status] = await Promise.all([handle.query(progressQuery, { summary: true }), handle.query(statusQuery)]);
    return { progress, status };
  } catch {
    return undefined;
  }
}

/** The Temporal UI link of a workflow. */
export function workflowUrl(uiUrl: string, namespace: string, workflowId: string, runId?: string): string {
  return `${uiUrl.replace(/\/$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}${runId ? `/${runId}` : ''}`;
}
