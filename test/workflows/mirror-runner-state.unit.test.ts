// The runner's decisions without Temporal (workflows/mirror-runner-state.ts): which tasks to start
// and stop, how failures are grouped for FailPartitions, when automatic retries are due.
import { describe, expect, it } from 'vitest';
import type { TopicView } from '../../activities/event-store.ts';
import { RetryPolicy, retryDelayMs } from '../../machines/partition.ts';
import { MirrorRunnerState } from '../../workflows/mirror-runner-state.ts';
import { key } from '../../workflows/progress.ts';

const settings = { partitionsPerCopier: 4, minCopies: 2, copyHeartbeatTimeoutMs: 10_000, discoveryIntervalMs: 60_000, groupSyncIntervalMs: 10_000, historyLimit: 20_000 };
/** One copy task per mirror, for the tests about what happens to a task. */
const oneCopy = { ...settings, minCopies: 1 };
const view = (topic: string, states: string[], extra: Partial<TopicView['partitions'][number]> = {}): TopicView => ({
  topic,
  partitions: states.map((state) => ({ state, retryable: null, retryAttempt: 0, error: null, ...extra })),
});

describe('MirrorRunnerState', () => {
  it('starts truncations for LOG_TRUNCATION and copies for MIRRORING partitions (spread over minCopies, at most partitionsPerCopier each), topics kept together', () => {
    const s = new MirrorRunnerState('m', settings);
    s.apply([view('b', ['MIRRORING', 'MIRRORING', 'MIRRORING']), view('a', ['MIRRORING', 'MIRRORING', 'PAUSED']), view('c', ['LOG_TRUNCATION', 'LOG_TRUNCATION'])], 0);
    const tasks = s.tasksToStart();
    expect(tasks.map((t) => [t.kind, t.assignments])).toEqual([
      ['truncate', [{ topic: 'c', partitions: [0, 1] }]],
      ['copy', [{ topic: 'a', partitions: [0, 1] }, { topic: 'b', partitions: [0] }]],
      ['copy', [{ topic: 'b', partitions: [1, 2] }]],
    ]);
    // A large mirror: tasks of at most partitionsPerCopier.
    const big = new MirrorRunnerState('m', settings);
    big.apply([view('x', Array.from({ length: 10 }, () => 'MIRRORING'))], 0);
    expect(big.tasksToStart().map((t) => t.keys.length)).toEqual([4, 4, 2]);
    // Nothing twice: the partitions are held by their tasks now.
    expect(s.tasksToStart()).toEqual([]);
    expect(s.copying()).toBe(5);
  });

  it('spreads copies so that minCopies run in all: a second wave of MIRRORING partitions joins one new copy, not minCopies more', () => {
    const s = new MirrorRunnerState('m', { ...settings, partitionsPerCopier: 6 });
    s.apply([view('a', Array.from({ length: 6 }, () => 'MIRRORING')), view('b', Array.from({ length: 6 }, () => 'LOG_TRUNCATION'))], 0);
    const first = s.tasksToStart();
    expect(first.map((t) => [t.kind, t.keys.length])).toEqual([
      ['truncate', 6],
      ['copy', 3],
      ['copy', 3],
    ]);
    s.taskEnded(first[0]!.id, []);
    s.apply([view('b', Array.from({ length: 6 }, () => 'MIRRORING'))], 0);
    expect(s.tasksToStart().map((t) => [t.kind, t.keys.length])).toEqual([['copy', 6]]);
    // A runner replaying a history from before the patch spreads every wave over minCopies.
    const old = new MirrorRunnerState('m', { ...settings, partitionsPerCopier: 6 });
    old.apply([view('a', Array.from({ length: 6 }, () => 'MIRRORING'))], 0);
    old.tasksToStart(false);
    old.apply([view('b', Array.from({ length: 6 }, () => 'MIRRORING'))], 0);
    expect(old.tasksToStart(false).map((t) => t.keys.length)).toEqual([3, 3]);
  });

  it('stops a copy holding a partition that left MIRRORING, never a truncation; freed partitions get a new task', () => {
    const s = new MirrorRunnerState('m', oneCopy);
    s.apply([view('a', ['MIRRORING', 'MIRRORING']), view('c', ['LOG_TRUNCATION'])], 0);
    const [truncate, copy] = s.tasksToStart();
    s.apply([view('a', ['PAUSING', 'MIRRORING']), view('c', ['STOPPING'])], 0);
    expect(s.tasksToStop()).toEqual([copy!.id]);
    expect(s.tasksToStop()).toEqual([]); // asked once
    expect(s.idle([key('a', 0)])).toBe(false);
    s.taskStopped(copy!.id);
    expect(s.idle([key('a', 0)])).toBe(true);
    expect(s.restarts).toBe(0); // it was asked to stop
    expect(s.tasksToStart().map((t) => t.assignments)).toEqual([[{ topic: 'a', partitions: [1] }]]);
    expect(truncate!.kind).toBe('truncate');
  });

  it('groups failures by code, message and retryability; a failing partition gets no new task until recorded', () => {
    const s = new MirrorRunnerState('m', oneCopy);
    s.apply([view('a', ['MIRRORING', 'MIRRORING', 'MIRRORING'])], 0);
    const [copy] = s.tasksToStart();
    s.taskEnded(copy!.id, [
      { topic: 'a', partition: 0, status: 'failed', nextOffset: '5', error: { code: 'OFFSET_DIVERGENCE', message: 'x', retryable: false } },
      { topic: 'a', partition: 1, status: 'failed', nextOffset: '5', error: { code: 'OFFSET_DIVERGENCE', message: 'x', retryable: false } },
      { topic: 'a', partition: 2, status: 'stopped', nextOffset: '7' },
    ]);
    expect(s.tasksToStart().map((t) => t.assignments)).toEqual([[{ topic: 'a', partitions: [2] }]]);
    const groups = s.takeFailures();
    expect(groups.map((g) => g.map((f) => [f.partition, f.code, f.retryable]))).toEqual([
      [
        [0, 'OFFSET_DIVERGENCE', false],
        [1, 'OFFSET_DIVERGENCE', false],
      ],
    ]);
    expect(s.takeFailures()).toEqual([]);
  });

  it('a copy failure of a partition a stop took meanwhile is not queued (the stop owns it); older histories queued it', () => {
    const failed = { topic: 'a', partition: 0, status: 'failed' as const, nextOffset: '5', error: { code: 'CLUSTER_UNREACHABLE', message: 'x', retryable: true } };
    for (const anyState of [false, true]) {
      const s = new MirrorRunnerState('m', oneCopy);
      s.apply([view('a', ['MIRRORING'])], 0);
      const [copy] = s.tasksToStart();
      s.apply([view('a', ['STOPPING'])], 0);
      s.taskEnded(copy!.id, [failed], anyState);
      expect(s.takeFailures().length).toBe(anyState ? 1 : 0);
    }
  });

  it('a task that failed as a whole fails every partition it held; one that vanished counts as a restart', () => {
    const s = new MirrorRunnerState('m', oneCopy);
    s.apply([view('a', ['MIRRORING', 'MIRRORING'])], 0);
    const [first] = s.tasksToStart();
    s.taskFailed(first!.id, { code: 'CLUSTER_UNREACHABLE', message: 'gone', retryable: true });
    expect(s.takeFailures()[0]!.map((f) => f.partition)).toEqual([0, 1]);
    s.failuresRecorded([{ topic: 'a', partition: 0, code: '', message: '', retryable: true }, { topic: 'a', partition: 1, code: '', message: '', retryable: true }]);
    const [second] = s.tasksToStart();
    s.taskStopped(second!.id);
    expect(s.restarts).toBe(1);
  });

  it('schedules automatic retries of retryable FAILED partitions with the KIP backoff, and none for final ones', () => {
    const s = new MirrorRunnerState('m', settings);
    s.apply([view('a', ['FAILED'], { retryable: true, retryAttempt: 3, error: { code: 'CLUSTER_UNREACHABLE', message: 'x' } }), view('b', ['FAILED'], { retryable: false, error: { code: 'OFFSET_DIVERGENCE', message: 'y' } })], 1_000);
    expect(s.nextDeadline()).toBe(1_000 + retryDelayMs(3));
    expect(s.dueRetries(1_000 + retryDelayMs(3) - 1)).toEqual([]);
    expect(s.dueRetries(1_000 + retryDelayMs(3))).toEqual([{ topic: 'a', partition: 0 }]);
    expect(s.retriesScheduled()).toBe(1);
    // Attempts exhausted: no automatic retry (an operator's retry is still possible).
    s.apply([view('c', ['FAILED'], { retryable: true, retryAttempt: RetryPolicy.maxAttempts })], 0);
    expect(s.retriesScheduled()).toBe(1);
    // Back to MIRRORING: nothing scheduled.
    s.apply([view('a', ['MIRRORING'])], 2_000);
    expect(s.nextDeadline()).toBeUndefined();
  });

  it('reports changes and progress by state, with FAILED partitions listed', () => {
    const s = new MirrorRunnerState('m', settings);
    s.apply([view('a', ['MIRRORING', 'PAUSED']), view('b', ['FAILED'], { retryable: false, error: { code: 'KAFKA_ERROR', message: 'boom' } })], 0);
    const list = [
      { topic: 'a', partition: 0, state: 'MIRRORING' },
      { topic: 'a', partition: 1, state: 'PAUSED' },
      { topic: 'b', partition: 0, state: 'FAILED', error: { code: 'KAFKA_ERROR', message: 'boom' } },
    ];
    expect(s.change(s.keysOf('all'))).toEqual({ partitions: 3, states: { MIRRORING: 1, PAUSED: 1, FAILED: 1 }, failed: [{ topic: 'b', partition: 0, code: 'KAFKA_ERROR', message: 'boom' }], list });
    expect(s.change(s.keysOf([{ topic: 'a' }]))).toEqual({ partitions: 2, states: { MIRRORING: 1, PAUSED: 1 }, failed: [], list: list.slice(0, 2) });
    expect(s.progress()).toEqual({ total: 3, states: { MIRRORING: 1, PAUSED: 1, FAILED: 1 }, partitions: list });
    expect(s.keysOf([{ topic: 'a', partitions: [1] }])).toEqual([key('a', 1)]);
    expect(s.progress({ summary: true })).toEqual({ total: 3, states: { MIRRORING: 1, PAUSED: 1, FAILED: 1 } });
    expect(s.inState(s.keysOf('all'), 'PAUSED')).toEqual([{ topic: 'a', partition: 1 }]);
    expect(s.notIn(s.keysOf('all'), ['MIRRORING', 'PAUSED'])).toEqual([{ topic: 'b', partition: 0 }]);
  });
});
