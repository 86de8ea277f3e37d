// The product's control plane for the benchmarks that go through it (runner, start-scale): a
// database of their own (migrated; the stack's two clusters registered as `src` and `dst` with the
// stack's connections), one worker process started the way `npm start` starts it (node + tsx
// worker.ts) polling a task queue of their own, and a Temporal client for the operations. Also:
// the worker's resident memory sampled from /proc, and workflow histories turned into where the
// time went (per activity type, from the events' timestamps).
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowHandle } from '@temporalio/client';
import kafkajs, { type Admin } from 'kafkajs';
import { connectClient, type TemporalClient } from '../../client/index.ts';
import { loadConfig, type Config } from '../../config.ts';
import { registerCluster } from '../../db/cluster-store.ts';
import { createDatabase } from '../../db/connect.ts';
import type { Db } from '../../db/database.ts';
import { migrateToLatest } from '../../db/migrate.ts';
import type { ClusterConnection } from '../../domain/connection.ts';
import { start, type Child } from '../../test/support/child.ts';
import { createTestDatabase, randomName, stackConfigEnv } from '../../test/support/stack.ts';
import { note, round1 } from './mirroring.ts';

// kafkajs is CommonJS; Node's named-export detection misses its ACL enums.
const { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes } = kafkajs;

export interface BenchControlPlane {
  readonly config: Config;
  readonly db: Db;
  readonly temporal: TemporalClient;
  readonly taskQueue: string;
  /** The worker process (`node --import tsx worker.ts`); its pid is the worker's own. */
  readonly worker: Child;
  /** Start one more worker process on the same database and task queue (stopped by close). */
  startWorker(): Promise<Child>;
  /** Terminate the workflows still running on the task queue, stop the workers (SIGTERM, then
   *  SIGKILL after 45 s) and drop the database. */
  close(): Promise<void>;
}

/**
 * A fresh database and task queue, `src`/`dst` registered, and a worker process on them. `env`
 * adds worker settings (KMIRROR_BUDGET_BYTES, KMIRROR_PARTITIONS_PER_COPIER, …); the rest comes
 * from the stack's env file, as for `npm start`.
 */
export async function startControlPlane(opts: { readonly prefix: string; readonly source: ClusterConnection; readonly destination: ClusterConnection; readonly env?: Record<string, string> }): Promise<BenchControlPlane> {
  const database = await createTestDatabase(opts.prefix);
  const taskQueue = randomName(opts.prefix);
  const config = loadConfig(stackConfigEnv({ DATABASE_URL: database.url, TEMPORAL_TASK_QUEUE: taskQueue }));
  const db = createDatabase(database.url, { maxConnections: 2 });
  let temporal: TemporalClient | undefined;
  const workers: Child[] = [];
  const workerEnv = { ...process.env, ...stackConfigEnv({ DATABASE_URL: database.url, TEMPORAL_TASK_QUEUE: taskQueue, KMIRROR_LOG_LEVEL: 'info', ...opts.env }) };
  // KMIRROR_BENCH_WORKER_FLAGS: Node flags for the worker, e.g. '--cpu-prof --cpu-prof-dir=/tmp/prof'
  // (docs/benchmarks.md, "Profiling the worker").
  const flags = (process.env.KMIRROR_BENCH_WORKER_FLAGS ?? '').split(' ').filter(Boolean);
  const startWorker = async (): Promise<Child> => {
    const worker = start(process.execPath, [...flags, '--import', 'tsx', 'worker.ts'], { env: workerEnv });
    workers.push(worker);
    await worker.waitForLog((e) => e.msg === 'worker running', 120_000);
    return worker;
  };
  const close = async (): Promise<void> => {
    if (temporal !== undefined) {
      for await (const execution of temporal.client.workflow.list({ query: `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running'` })) {
        await temporal.client.workflow
          .getHandle(execution.workflowId, execution.runId)
          .terminate('benchmark finished')
          .catch(() => undefined);
      }
    }
    for (const worker of workers) {
      if (worker.process.exitCode !== null || worker.process.signalCode !== null) continue;
      worker.process.kill('SIGTERM');
      const killer = setTimeout(() => worker.process.kill('SIGKILL'), 45_000);
      await worker.exited;
      clearTimeout(killer);
    }
    await temporal?.close();
    await db.destroy();
    await database.drop();
  };
  try {
    await migrateToLatest(db);
    const who = { actor: 'bench' };
    await registerCluster(db, config.secretKey, { cluster: 'src', connection: opts.source }, who);
    await registerCluster(db, config.secretKey, { cluster: 'dst', connection: opts.destination }, who);
    temporal = await connectClient(config);
    const worker = await startWorker();
    return { config, db, temporal, taskQueue, worker, startWorker, close };
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }
}

/** Poll until the cluster lists `topic` (a start creates its destination topic itself). */
export async function waitForTopic(admin: Admin, topic: string, timeoutMs = 10 * 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await admin.listTopics()).includes(topic)) {
    if (Date.now() > deadline) throw new Error(`${topic} did not appear within ${timeoutMs} ms`);
    await sleep(50);
  }
}

/** Remove the DENY WRITE ACLs a start put on mirror topics (deleting a topic leaves its ACLs). */
export async function deleteDenyAcls(admin: Admin, topics: readonly string[]): Promise<number> {
  let deleted = 0;
  for (let i = 0; i < topics.length; i += 100) {
    const response = await admin.deleteAcls({
      filters: topics.slice(i, i + 100).map((topic) => ({
        resourceType: AclResourceTypes.TOPIC,
        resourceName: topic,
        resourcePatternType: ResourcePatternTypes.LITERAL,
        operation: AclOperationTypes.WRITE,
        permissionType: AclPermissionTypes.DENY,
      })),
    });
    deleted += response.filterResponses.reduce((n, r) => n + r.matchingAcls.length, 0);
  }
  return deleted;
}

/** VmRSS of a process, sampled every `everyMs` from /proc/<pid>/status. */
export class RssSampler {
  private readonly samples: { at: number; bytes: number }[] = [];
  private readonly timer: NodeJS.Timeout;

  constructor(
    readonly pid: number,
    everyMs = 100,
  ) {
    this.sample();
    this.timer = setInterval(() => this.sample(), everyMs);
  }

  private sample(): void {
    try {
      const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${this.pid}/status`, 'utf8'))?.[1];
      if (kb !== undefined) this.samples.push({ at: performance.now(), bytes: Number(kb) * 1024 });
    } catch {
      // the process has exited
    }
  }

  /** Highest sample in [from, to] (performance.now() times). */
  peak(from = 0, to = Infinity): number {
    return this.samples.filter((s) => s.at >= from && s.at <= to).reduce((m, s) => Math.max(m, s.bytes), 0);
  }

  /** Median sample in [from, to]. */
  median(from = 0, to = Infinity): number {
    const xs = this.samples
      .filter((s) => s.at >= from && s.at <= to)
      .map((s) => s.bytes)
      .sort((a, b) => a - b);
    return xs[Math.floor(xs.length / 2)] ?? 0;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

export const mib = (bytes: number): number => round1(bytes / 2 ** 20);

type History = Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;
type Long = { toNumber(): number };
const num = (v: number | Long | null | undefined): number => (v === null || v === undefined ? 0 : typeof v === 'number' ? v : v.toNumber());
const ms = (t: { seconds?: number | Long | null; nanos?: number | null } | null | undefined): number => num(t?.seconds) * 1000 + (t?.nanos ?? 0) / 1e6;

/** One activity, update or child workflow of a history: when it was scheduled, started, ended. */
export interface Span {
  readonly kind: 'activity' | 'update' | 'child';
  readonly name: string;
  readonly scheduledMs: number;
  startedMs?: number;
  endedMs?: number;
  outcome: string;
  /** Size of its result payloads (activities). */
  resultBytes: number;
}

export interface HistoryProfile {
  readonly startMs: number;
  readonly endMs: number;
  readonly events: number;
  readonly spans: readonly Span[];
  /** Workflow tasks: how many, and the worker's time on them (started → completed). */
  readonly workflowTasks: { readonly count: number; readonly totalMs: number; readonly maxMs: number };
}

/** Spans of a workflow history, from its events' timestamps. */
export function profileHistory(history: History): HistoryProfile {
  const events = history.events ?? [];
  const byScheduled = new Map<number, Span>();
  const spans: Span[] = [];
  const wftStarted = new Map<number, number>();
  let wftCount = 0;
  let wftTotal = 0;
  let wftMax = 0;
  for (const e of events) {
    const id = num(e.eventId);
    const at = ms(e.eventTime);
    const open = (kind: Span['kind'], name: string): void => {
      const span: Span = { kind, name, scheduledMs: at, outcome: 'open', resultBytes: 0 };
      byScheduled.set(id, span);
      spans.push(span);
    };
    const close = (scheduledId: number | Long | null | undefined, outcome: string, payloads?: readonly { data?: Uint8Array | null }[] | null): void => {
      const span = byScheduled.get(num(scheduledId));
      if (span === undefined) return;
      span.endedMs = at;
      span.outcome = outcome;
      span.resultBytes = (payloads ?? []).reduce((n, p) => n + (p.data?.length ?? 0), 0);
    };
    if (e.activityTaskScheduledEventAttributes) open('activity', e.activityTaskScheduledEventAttributes.activityType?.name ?? '?');
    else if (e.activityTaskStartedEventAttributes) {
      const span = byScheduled.get(num(e.activityTaskStartedEventAttributes.scheduledEventId));
      if (span !== undefined) span.startedMs = at;
    } else if (e.activityTaskCompletedEventAttributes) close(e.activityTaskCompletedEventAttributes.scheduledEventId, 'completed', e.activityTaskCompletedEventAttributes.result?.payloads);
    else if (e.activityTaskFailedEventAttributes) close(e.activityTaskFailedEventAttributes.scheduledEventId, 'failed');
    else if (e.activityTaskTimedOutEventAttributes) close(e.activityTaskTimedOutEventAttributes.scheduledEventId, 'timed out');
    else if (e.activityTaskCanceledEventAttributes) close(e.activityTaskCanceledEventAttributes.scheduledEventId, 'cancelled');
    else if (e.workflowExecutionUpdateAcceptedEventAttributes) {
      open('update', e.workflowExecutionUpdateAcceptedEventAttributes.acceptedRequest?.input?.name ?? '?');
      byScheduled.get(id)!.startedMs = at;
    } else if (e.workflowExecutionUpdateCompletedEventAttributes) close(e.workflowExecutionUpdateCompletedEventAttributes.acceptedEventId, 'completed');
    else if (e.startChildWorkflowExecutionInitiatedEventAttributes) open('child', e.startChildWorkflowExecutionInitiatedEventAttributes.workflowType?.name ?? '?');
    else if (e.childWorkflowExecutionCompletedEventAttributes) close(e.childWorkflowExecutionCompletedEventAttributes.initiatedEventId, 'completed');
    else if (e.childWorkflowExecutionFailedEventAttributes) close(e.childWorkflowExecutionFailedEventAttributes.initiatedEventId, 'failed');
    else if (e.workflowTaskStartedEventAttributes) wftStarted.set(id, at);
    else if (e.workflowTaskCompletedEventAttributes) {
      const began = wftStarted.get(num(e.workflowTaskCompletedEventAttributes.startedEventId));
      if (began !== undefined) {
        wftCount++;
        wftTotal += at - began;
        wftMax = Math.max(wftMax, at - began);
      }
    }
  }
  const first = events[0];
  const last = events[events.length - 1];
  return { startMs: ms(first?.eventTime), endMs: ms(last?.eventTime), events: events.length, spans, workflowTasks: { count: wftCount, totalMs: wftTotal, maxMs: wftMax } };
}

const secs = (x: number): string => `${(x / 1000).toFixed(2)} s`;

/**
 * Print where a workflow's time went: per activity type (or update, child), how many, the window
 * from the first scheduled to the last ended (relative to the workflow's start), the summed and
 * longest running time, the summed queue wait (scheduled → started) and the largest result.
 */
export function noteProfile(label: string, profile: HistoryProfile): void {
  note(`${label}: ${profile.events} events over ${secs(profile.endMs - profile.startMs)}; workflow tasks ${profile.workflowTasks.count}, worker time on them ${secs(profile.workflowTasks.totalMs)} (longest ${secs(profile.workflowTasks.maxMs)})`);
  const groups = new Map<string, Span[]>();
  for (const s of profile.spans) {
    const k = `${s.kind} ${s.name}`;
    groups.set(k, [...(groups.get(k) ?? []), s]);
  }
  const rows = [...groups].map(([name, spans]) => {
    const from = Math.min(...spans.map((s) => s.scheduledMs)) - profile.startMs;
    const to = Math.max(...spans.map((s) => s.endedMs ?? profile.endMs)) - profile.startMs;
    const run = spans.map((s) => (s.endedMs ?? profile.endMs) - (s.startedMs ?? s.scheduledMs));
    const wait = spans.reduce((n, s) => n + ((s.startedMs ?? s.scheduledMs) - s.scheduledMs), 0);
    const outcomes = [...new Set(spans.map((s) => s.outcome))].join('/');
    const bytes = Math.max(...spans.map((s) => s.resultBytes));
    return { name, count: spans.length, from, to, runSum: run.reduce((a, b) => a + b, 0), runMax: Math.max(...run), wait, outcomes, bytes };
  });
  for (const r of rows.sort((a, b) => a.from - b.from)) {
    note(
      `  ${r.name} ×${r.count}: ${secs(r.from)} → ${secs(r.to)}; running ${secs(r.runSum)} in all, longest ${secs(r.runMax)}; queued ${secs(r.wait)}; ${r.outcomes}${r.bytes > 0 ? `; largest result ${round1(r.bytes / 1024)} KiB` : ''}`,
    );
  }
}
