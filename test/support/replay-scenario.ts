// What the determinism checks share (STYLE 16): the scenario whose histories they replay, the
// collection of those histories from a control plane's task queue, their JSON form, and the replay.
//
// The scenario: a mirror created (its runner started), a two-partition topic with a few records
// started, paused and resumed, a start of an unknown topic refused, a retry, a failover dry run, a
// promote; then the round trip back: records written on the new primary, a failback (the reverse
// mirror created and started by its children), the reverse mirror promoted, both mirrors deleted.
// It covers every operation and the runner (mirrorRunner), including a failed operation, the
// runner's updates and a copy the pause asks to cancel.
import type { WorkflowExecutionInfo } from '@temporalio/client';
import type { HistoryAndWorkflowId } from '@temporalio/common';
import proto from '@temporalio/proto';
import { Worker, type ReplayResult, type ReplayWorkerOptions } from '@temporalio/worker';
import { createRequire } from 'node:module';
import { WORKFLOW_INTERCEPTORS_PATH, WORKFLOWS_PATH } from '../../workflow-bundle.ts';
import { awaitOperation, startOperation, type OperationInputs, type OperationResults } from '../../client/index.ts';
import type { Operation } from '../../workflows/messages.ts';
import type { ControlPlane } from './control-plane.ts';
import { randomName } from './stack.ts';

/** The workflow types the scenario runs; the replays must cover each. */
export const SCENARIO_WORKFLOW_TYPES = ['createMirror', 'alterMirror', 'startTopics', 'pauseTopics', 'resumeTopics', 'retryPartitions', 'promote', 'failover', 'failback', 'deleteMirror', 'mirrorRunner'] as const;

export interface ScenarioRun {
  readonly mirror: string;
  readonly topic: string;
  /** The ids of every workflow the scenario started, the runner's included. */
  readonly workflowIds: readonly string[];
}

export type History = proto.temporal.api.history.v1.IHistory;

export interface RecordedExecution {
  readonly workflowId: string;
  readonly runId: string;
  readonly workflowType: string;
  readonly status: string;
  readonly startTime: Date;
  readonly history: History;
}

const PARTITIONS = 2;

export async function runReplayScenario(t: ControlPlane): Promise<ScenarioRun> {
  const workflowIds: string[] = [];
  const run = async <O extends Operation>(operation: O, input: OperationInputs[O]): Promise<OperationResults[O]> => {
    const handle = await startOperation(t.temporal, operation, input);
    workflowIds.push(handle.workflowId);
    return awaitOperation<O>(handle);
  };
  const ends = async (cluster: 'source' | 'dest', topic: string) =>
    [...(await (cluster === 'source' ? t.source : t.dest).listOffsets(topic, [0, 1], 'latest')).values()].join(',');
  const caughtUp = async (topic: string) => {
    for (let deadline = Date.now() + 30_000; (await ends('dest', topic)) !== (await ends('source', topic)); ) {
      // (Either way round: after the failback the source is the mirror of the destination.)
      if (Date.now() > deadline) throw new Error(`${topic}: the destination did not catch up with the source within 30 s`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };

  const mirror = randomName('replay');
  const topic = await t.sourceTopic({ partitions: PARTITIONS });
  t.track(topic);
  const producer = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const send = (from: number, count: number) =>
    producer.send({ topic, messages: Array.from({ length: count }, (_, i) => ({ partition: (from + i) % PARTITIONS, key: `key-${from + i}`, value: `value-${from + i}` })) });
  try {
    await send(0, 20);
    const created = await run('createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst', actor: 'replay', reason: 'determinism check' });
    workflowIds.push(created.runnerWorkflowId);
    await run('startTopics', { mirror, topics: [topic], actor: 'replay' });
    await run('alterMirror', { mirror, acls: { include: ['User:replay-.*'] }, groups: { exclude: ['tmp-.*'] }, actor: 'replay' });
    await caughtUp(topic);
    await run('pauseTopics', { mirror, topics: [topic], actor: 'replay' });
    await send(20, 10);
    await run('resumeTopics', { mirror, topics: [topic], actor: 'replay' });
    await caughtUp(topic);
    const refused = await run('startTopics', { mirror, topics: ['no-such-topic'], actor: 'replay' }).then(
      () => undefined,
      (err: unknown) => err as { code?: string },
    );
    if (refused?.code !== 'UNKNOWN_TOPIC') throw new Error(`starting an unknown topic should fail with UNKNOWN_TOPIC, got ${refused === undefined ? 'success' : String(refused.code)}`);
    await run('retryPartitions', { mirror, actor: 'replay' });
    await run('failover', { mirror, allTopics: true, dryRun: true, actor: 'replay' });
    await run('promote', { mirror, allTopics: true, actor: 'replay', reason: 'planned switchover' });
    // The new primary takes writes; the old one mirrors them back, then becomes the primary again.
    const app = t.destKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await app.connect();
    await app.send({ topic, messages: [0, 1].map((partition) => ({ partition, key: `back-${partition}`, value: 'written on the new primary' })) });
    await app.disconnect();
    const reverse = `${mirror}-reverse`;
    workflowIds.push(`mirror:${reverse}`);
    await run('failback', { mirror, actor: 'replay', reason: 'old primary back' });
    await caughtUp(topic);
    await run('promote', { mirror: reverse, allTopics: true, actor: 'replay', reason: 'round trip done' });
    await run('deleteMirror', { mirror: reverse, actor: 'replay' });
    await run('deleteMirror', { mirror, actor: 'replay' });
  } finally {
    await producer.disconnect();
  }
  return { mirror, topic, workflowIds };
}

/**
 * Every execution of the control plane's task queue with its history (a running one's so far),
 * in start order. Visibility lags behind the executions: this lists until every id in `expected`
 * is there.
 */
export async function recordExecutions(t: ControlPlane, expected: readonly string[], timeoutMs = 30_000): Promise<RecordedExecution[]> {
  const { workflow } = t.temporal.client;
  for (const deadline = Date.now() + timeoutMs; ; ) {
    const listed: WorkflowExecutionInfo[] = [];
    for await (const execution of workflow.list({ query: `TaskQueue = '${t.taskQueue}'` })) listed.push(execution);
    const missing = expected.filter((id) => !listed.some((e) => e.workflowId === id));
    if (missing.length === 0) {
      listed.sort((a, b) => a.startTime.getTime() - b.startTime.getTime() || a.workflowId.localeCompare(b.workflowId));
      return Promise.all(
        listed.map(async (e) => ({
          workflowId: e.workflowId,
          runId: e.runId,
          workflowType: e.type,
          status: e.status.name,
          startTime: e.startTime,
          history: await workflow.getHandle(e.workflowId, e.runId).fetchHistory(),
        })),
      );
    }
    if (Date.now() > deadline) throw new Error(`task queue ${t.taskQueue}: visibility does not list ${missing.join(', ')} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

// History JSON in the format of the Temporal CLI and UI (proto3 JSON). @temporalio/common's
// historyToJSON and historyFromJSON (which Worker.runReplayHistories calls on a JSON history) throw
// "type must be a Type" in this dependency tree: npm nests a copy of protobufjs 8 under each
// @temporalio package (protobufjs 7 sits at the top for @grpc/proto-loader), and protojson checks
// `instanceof Type` against its own copy. This is the same conversion with the protojson of
// @temporalio/proto's copy, whose types these are; with one protobufjs 8 in the tree the SDK's
// functions would do.
const protojson = createRequire(createRequire(import.meta.url).resolve('@temporalio/proto'))('protobufjs/ext/protojson') as {
  toJson(type: unknown, message: unknown): unknown;
  fromJson(type: unknown, json: unknown, options: { ignoreUnknownFields: boolean }): unknown;
};
const HistoryType = proto.temporal.api.history.v1.History;

/** A history as JSON text (what historyToJSON writes). */
export function historyToJSON(history: History): string {
  return JSON.stringify(protojson.toJson(HistoryType, HistoryType.fromObject(history)), null, 2);
}

/** A history read from its JSON (parsed), as a History the replay worker takes unconverted. */
export function historyFromJSON(json: unknown): History {
  return protojson.fromJson(HistoryType, json, { ignoreUnknownFields: true }) as History;
}

/** Replay as the product's worker runs workflows (worker.ts: the same workflowsPath and
 *  interceptors). */
export const replayWorkerOptions: ReplayWorkerOptions = {
  workflowsPath: WORKFLOWS_PATH,
  interceptors: { workflowModules: [WORKFLOW_INTERCEPTORS_PATH] },
  replayName: 'kmirror-replay',
};

/** Replay each history with one replay worker; a result per history, in order. */
export async function replayHistories(histories: Iterable<HistoryAndWorkflowId>): Promise<ReplayResult[]> {
  const results: ReplayResult[] = [];
  for await (const result of Worker.runReplayHistories(replayWorkerOptions, histories)) results.push(result);
  return results;
}

/** The failed replays as one line each (`<workflow id>: <error>`), for an assertion that names them. */
export function replayFailures(results: readonly ReplayResult[]): string[] {
  return results.filter((r) => r.error !== undefined).map((r) => `${r.workflowId}: ${r.error!.name}: ${r.error!.message}`);
}
