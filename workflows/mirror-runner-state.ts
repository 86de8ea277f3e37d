// The mirror runner's state and decisions, without I/O (STYLE 4): which partitions are in which
// state, which data-plane tasks run and over which partitions, which tasks must stop, which new ones
// to start, which failures to record and which retries are due. mirror-runner.ts performs what this
// decides. Time is passed in (the workflow's deterministic clock).
import type { PartitionResult } from '../activities/data-plane.ts';
import type { MirrorView, TopicView } from '../activities/event-store.ts';
import type { RunnerConfig } from '../config.ts';
import type { GroupSyncSummary } from '../kafka/group-offsets.ts';
import { RetryPolicy, retryDelayMs } from '../machines/partition.ts';
import type { FailedPartition, OperationProgress, PartitionProgress, ProgressOptions, RunnerChange } from './messages.ts';
import { key, LISTED_PARTITIONS, progressOver } from './progress.ts';

export type TaskKind = 'copy' | 'truncate';

export interface Assignment {
  readonly topic: string;
  readonly partitions: number[];
}

export interface Task {
  readonly id: number;
  readonly kind: TaskKind;
  readonly assignments: readonly Assignment[];
  readonly keys: readonly string[];
}

/** A failure to record with FailPartitions. */
export interface PendingFailure {
  readonly topic: string;
  readonly partition: number;
  readonly code: string;
  readonly message: string;
  readonly retryable: boolean;
}

interface Entry {
  readonly topic: string;
  readonly partition: number;
  state: string;
  retryable: boolean | null;
  retryAttempt: number;
  error: { readonly code: string; readonly message: string } | null;
  /** When the automatic retry of a FAILED partition is due (workflow clock, ms). */
  retryAt?: number;
  /** The running task that holds it. */
  task?: number;
  /** A failure reported by its task and not yet recorded. */
  failing?: boolean;
}

/** The states a partition's task stops in; a copy runs only for MIRRORING partitions. */
const WANTS: Readonly<Record<TaskKind, string>> = { copy: 'MIRRORING', truncate: 'LOG_TRUNCATION' };

export class MirrorRunnerState {
  private readonly entries = new Map<string, Entry>();
  private readonly tasks = new Map<number, Task & { stopping: boolean }>();
  private nextTaskId = 1;
  private failures: PendingFailure[] = [];
  /** Tasks that stopped without being asked to (a worker vanished), for the status query. */
  restarts = 0;
  /** The last consumer-group offset sync's counts, for the status query. */
  lastGroupSync: (GroupSyncSummary & { at: string }) | null = null;
  /** Set whenever something the main loop acts on changed; the loop clears it. */
  changed = true;

  constructor(
    readonly mirror: string,
    readonly settings: RunnerConfig,
  ) {}

  /** Take in partition states read from the event store (after a command, or at start). */
  apply(topics: readonly TopicView[], now: number): void {
    for (const { topic, partitions } of topics) {
      partitions.forEach((p, partition) => {
        const k = key(topic, partition);
        const entry = this.entries.get(k) ?? { topic, partition, state: p.state, retryable: null, retryAttempt: 0, error: null };
        const becameFailed = p.state === 'FAILED' && (entry.state !== 'FAILED' || entry.retryAttempt !== p.retryAttempt || !this.entries.has(k));
        entry.state = p.state;
        entry.retryable = p.retryable;
        entry.retryAttempt = p.retryAttempt;
        entry.error = p.error;
        if (p.state !== 'FAILED') delete entry.retryAt;
        else if (becameFailed && p.retryable === true && p.retryAttempt < RetryPolicy.maxAttempts) entry.retryAt = now + retryDelayMs(p.retryAttempt);
        else if (p.retryable !== true) delete entry.retryAt;
        this.entries.set(k, entry);
      });
    }
    this.changed = true;
  }

  load(view: MirrorView, now: number): void {
    this.entries.clear();
    this.apply(view.topics, now);
  }

  hasTopic(topic: string): boolean {
    return this.entries.has(key(topic, 0));
  }

  topics(): string[] {
    return [...new Set([...this.entries.values()].map((e) => e.topic))].sort();
  }

  /** The partitions a selection names ('all', or topics with optional partition lists). */
  keysOf(selection: 'all' | readonly { readonly topic: string; readonly partitions?: readonly number[] }[]): string[] {
    if (selection === 'all') return [...this.entries.keys()];
    const out: string[] = [];
    for (const { topic, partitions } of selection) {
      for (const e of this.entries.values()) {
        if (e.topic === topic && (partitions === undefined || partitions.includes(e.partition))) out.push(key(e.topic, e.partition));
      }
    }
    return out;
  }

  /** Running copies that hold a partition that is no longer MIRRORING: cancel them. (A truncation
   *  is never cancelled: it ends by itself, and its last step moves its partitions on.) */
  tasksToStop(): number[] {
    const out: number[] = [];
    for (const task of this.tasks.values()) {
      if (task.stopping || task.kind !== 'copy') continue;
      if (task.keys.some((k) => this.entries.get(k)?.state !== WANTS[task.kind])) {
        task.stopping = true;
        out.push(task.id);
      }
    }
    return out;
  }

  /** New tasks for the partitions that want one and have none: copies for MIRRORING, truncations
   *  for LOG_TRUNCATION, each of at most settings.partitionsPerCopier partitions. Copies are spread
   *  so that at least settings.minCopies run in all (`spreadOverRunning`; false: every new group of
   *  partitions is spread over minCopies by itself, as runners before that patch did, so a mirror
   *  whose partitions became MIRRORING in several waves ran minCopies more copies per wave). */
  tasksToStart(spreadOverRunning = true): Task[] {
    const out: Task[] = [];
    for (const kind of ['truncate', 'copy'] as const) {
      const free = [...this.entries.values()]
        .filter((e) => e.state === WANTS[kind] && e.task === undefined && e.failing !== true)
        .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
      // Copies are spread over at least minCopies activities (one copier alternates fetching and
      // producing; two overlap them); alignments run once each, so they only respect the maximum.
      const running = spreadOverRunning ? [...this.tasks.values()].filter((t) => t.kind === 'copy' && !t.stopping).length : 0;
      const spread = kind === 'copy' ? Math.max(1, this.settings.minCopies - running) : 1;
      const size = Math.max(1, Math.min(this.settings.partitionsPerCopier, Math.ceil(free.length / spread)));
      for (let i = 0; i < free.length; i += size) {
        const members = free.slice(i, i + size);
        const assignments: Assignment[] = [];
        for (const e of members) {
          const last = assignments[assignments.length - 1];
          if (last?.topic === e.topic) last.partitions.push(e.partition);
          else assignments.push({ topic: e.topic, partitions: [e.partition] });
        }
        const task = { id: this.nextTaskId++, kind, assignments, keys: members.map((e) => key(e.topic, e.partition)) };
        for (const e of members) e.task = task.id;
        this.tasks.set(task.id, { ...task, stopping: false });
        out.push(task);
      }
    }
    return out;
  }

  /** A task ended with per-partition results (a copy or an alignment). Failed partitions are
   *  queued for FailPartitions — only those still in the state the task served (a stop may have
   *  begun meanwhile: a STOPPING partition is the stop's, not a failure), unless `anyState` (the
   *  behaviour older histories recorded); the others become free for a new task. */
  taskEnded(id: number, results: readonly PartitionResult[], anyState = false): void {
    const task = this.tasks.get(id);
    for (const r of results) {
      const wanted = anyState || (task !== undefined && this.entries.get(key(r.topic, r.partition))?.state === WANTS[task.kind]);
      if (r.status === 'failed' && r.error !== undefined && wanted) {
        this.fail({ topic: r.topic, partition: r.partition, code: r.error.code, message: r.error.message, retryable: r.error.retryable });
      }
    }
    this.release(id);
  }

  /** A task failed as a whole (the activity threw): every partition it held fails with that error. */
  taskFailed(id: number, error: { readonly code: string; readonly message: string; readonly retryable: boolean }): void {
    const task = this.tasks.get(id);
    for (const k of task?.keys ?? []) {
      const e = this.entries.get(k);
      if (e !== undefined && e.state === WANTS[task!.kind]) this.fail({ topic: e.topic, partition: e.partition, ...error });
    }
    this.release(id);
  }

  /** A task stopped without a verdict (cancelled, or its worker vanished): its partitions are free. */
  taskStopped(id: number): void {
    if (this.tasks.get(id)?.stopping === false) this.restarts++;
    this.release(id);
  }

  private release(id: number): void {
    const task = this.tasks.get(id);
    if (task === undefined) return;
    for (const k of task.keys) {
      const e = this.entries.get(k);
      if (e !== undefined && e.task === id) delete e.task;
    }
    this.tasks.delete(id);
    this.changed = true;
  }

  private fail(failure: PendingFailure): void {
    const e = this.entries.get(key(failure.topic, failure.partition));
    if (e === undefined || e.failing === true) return;
    e.failing = true;
    this.failures.push(failure);
    this.changed = true;
  }

  /** The failures to record now, grouped so that each group is one FailPartitions command. */
  takeFailures(): PendingFailure[][] {
    const groups = new Map<string, PendingFailure[]>();
    for (const f of this.failures) {
      const g = `${f.code}\u0000${f.message}\u0000${f.retryable}`;
      groups.set(g, [...(groups.get(g) ?? []), f]);
    }
    this.failures = [];
    return [...groups.values()];
  }

  /** After the failures are recorded (or refused: the partition moved on meanwhile). */
  failuresRecorded(failures: readonly PendingFailure[]): void {
    for (const f of failures) {
      const e = this.entries.get(key(f.topic, f.partition));
      if (e !== undefined) delete e.failing;
    }
    this.changed = true;
  }

  /** FAILED partitions whose automatic retry is due. */
  dueRetries(now: number): { topic: string; partition: number }[] {
    return [...this.entries.values()].filter((e) => e.state === 'FAILED' && e.retryAt !== undefined && e.retryAt <= now).map((e) => ({ topic: e.topic, partition: e.partition }));
  }

  /** PAUSING partitions that no task copies any more: their pause can complete. */
  idlePausing(): { topic: string; partition: number }[] {
    return [...this.entries.values()].filter((e) => e.state === 'PAUSING' && e.task === undefined).map((e) => ({ topic: e.topic, partition: e.partition }));
  }

  /** The next time something is due (a retry), for the main loop's wait. */
  nextDeadline(): number | undefined {
    let next: number | undefined;
    for (const e of this.entries.values()) if (e.retryAt !== undefined && (next === undefined || e.retryAt < next)) next = e.retryAt;
    return next;
  }

  /** True when no running task holds any of `keys`. */
  idle(keys: readonly string[]): boolean {
    return keys.every((k) => this.entries.get(k)?.task === undefined);
  }

  /** The partitions of `keys` that are in `wanted`. */
  inState(keys: readonly string[], wanted: string): { topic: string; partition: number }[] {
    const out: { topic: string; partition: number }[] = [];
    for (const k of keys) {
      const e = this.entries.get(k);
      if (e?.state === wanted) out.push({ topic: e.topic, partition: e.partition });
    }
    return out;
  }

  /** The partitions of `keys` that are in none of `states`. */
  notIn(keys: readonly string[], states: readonly string[]): { topic: string; partition: number }[] {
    const out: { topic: string; partition: number }[] = [];
    for (const k of keys) {
      const e = this.entries.get(k);
      if (e !== undefined && !states.includes(e.state)) out.push({ topic: e.topic, partition: e.partition });
    }
    return out;
  }

  /** True when none of `keys` is in one of `states`. */
  noneIn(keys: readonly string[], states: readonly string[]): boolean {
    return keys.every((k) => !states.includes(this.entries.get(k)?.state ?? ''));
  }

  /** The change report of a runner update about `keys`. */
  change(keys: readonly string[]): RunnerChange {
    const list = this.listed(keys);
    const failed: FailedPartition[] = list.filter((p) => p.state === 'FAILED').slice(0, 100).map((p) => ({ topic: p.topic, partition: p.partition, code: p.error?.code ?? '', message: p.error?.message ?? '' }));
    const { states } = progressOver(list, { summary: true });
    return { partitions: keys.length, states, failed, list: list.slice(0, LISTED_PARTITIONS) };
  }

  /** Partitions per state, and the per-partition list, for the progress query. */
  progress(options: ProgressOptions = {}): Pick<OperationProgress, 'total' | 'states' | 'partitions' | 'unfinished'> {
    return progressOver(this.listed([...this.entries.keys()]), options);
  }

  private listed(keys: readonly string[]): PartitionProgress[] {
    return keys.flatMap((k) => {
      const e = this.entries.get(k);
      return e === undefined ? [] : [{ topic: e.topic, partition: e.partition, state: e.state, ...(e.error ? { error: e.error } : {}) }];
    });
  }

  runningTasks(kind?: TaskKind): number {
    return [...this.tasks.values()].filter((t) => kind === undefined || t.kind === kind).length;
  }

  copying(): number {
    return [...this.tasks.values()].filter((t) => t.kind === 'copy').reduce((n, t) => n + t.keys.length, 0);
  }

  retriesScheduled(): number {
    return [...this.entries.values()].filter((e) => e.retryAt !== undefined).length;
  }
}
