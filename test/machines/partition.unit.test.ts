import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { initialTransition, transition } from 'xstate';
import {
  PartitionEventTypes,
  PartitionStates,
  RecoverableStates,
  RetryPolicy,
  initialPartitionContext,
  newPartition,
  partitionMachine,
  partitionStatusOf,
  restorePartition,
  retryDelayMs,
  stepPartition,
  toChartEvent,
  type PartitionContext,
  type LastMirrored,
  type PartitionEvent,
  type PartitionState,
  type PartitionStatus,
  type RecoverableState,
} from '../../machines/partition.ts';

const position = (offset: bigint): LastMirrored => ({ offset, leaderEpoch: 3, checksum: `crc-${offset}` });
const recorded = position(100n);
const status = (state: PartitionState, context: Partial<PartitionContext> = {}, lastMirrored: LastMirrored | null = null): PartitionStatus => ({
  state,
  context: { ...initialPartitionContext, ...context },
  lastMirrored,
});

/** Every event the chart can receive, with the payload variants its guards tell apart. */
const events = {
  TRUNCATED: { type: 'TRUNCATED' },
  PAUSE: { type: 'PAUSE' },
  PAUSED: { type: 'PAUSED' },
  RESUME: { type: 'RESUME' },
  'STOP failover': { type: 'STOP', mode: 'failover' },
  'STOP promote': { type: 'STOP', mode: 'promote' },
  STOPPED: { type: 'STOPPED' },
  START: { type: 'START' },
  'FAIL retryable': { type: 'FAIL', error: { code: 'CLUSTER_UNREACHABLE', message: 'source down' }, retryable: true },
  'FAIL fatal': { type: 'FAIL', error: { code: 'OFFSET_DIVERGENCE', message: 'base offset 7, expected 5' }, retryable: false },
  'RETRY automatic': { type: 'RETRY', trigger: 'automatic' },
  'RETRY operator': { type: 'RETRY', trigger: 'operator' },
  'RECORD_POSITION forward': { type: 'RECORD_POSITION', position: position(150n) },
  'RECORD_POSITION same': { type: 'RECORD_POSITION', position: position(100n) },
  'RECORD_POSITION backward': { type: 'RECORD_POSITION', position: position(99n) },
} satisfies Record<string, PartitionEvent>;
type EventCase = keyof typeof events;

/** The allowed arrows, written out by hand from KIP-1279 + DESIGN §3. Anything absent is refused.
 *  'previous' = back to the state the partition failed in. */
type Target = PartitionState | 'previous' | 'previous if retryable and attempts remain';
const allowed: Record<PartitionState, Partial<Record<EventCase, Target>>> = {
  LOG_TRUNCATION: {
    TRUNCATED: 'MIRRORING',
    'STOP failover': 'STOPPING',
    'STOP promote': 'STOPPING',
    'FAIL retryable': 'FAILED',
    'FAIL fatal': 'FAILED',
  },
  MIRRORING: {
    PAUSE: 'PAUSING',
    'STOP failover': 'STOPPING',
    'STOP promote': 'STOPPING',
    'FAIL retryable': 'FAILED',
    'FAIL fatal': 'FAILED',
    'RECORD_POSITION forward': 'MIRRORING',
    'RECORD_POSITION same': 'MIRRORING',
  },
  PAUSING: {
    PAUSED: 'PAUSED',
    'STOP failover': 'STOPPING',
    'STOP promote': 'STOPPING',
    'FAIL retryable': 'FAILED',
    'FAIL fatal': 'FAILED',
    'RECORD_POSITION forward': 'PAUSING',
    'RECORD_POSITION same': 'PAUSING',
  },
  PAUSED: {
    RESUME: 'MIRRORING',
    'STOP failover': 'STOPPING',
    'STOP promote': 'STOPPING',
    'FAIL retryable': 'FAILED',
    'FAIL fatal': 'FAILED',
    'RECORD_POSITION forward': 'PAUSED',
    'RECORD_POSITION same': 'PAUSED',
  },
  STOPPING: {
    STOPPED: 'STOPPED',
    'FAIL retryable': 'FAILED',
    'FAIL fatal': 'FAILED',
    'RECORD_POSITION forward': 'STOPPING',
    'RECORD_POSITION same': 'STOPPING',
  },
  STOPPED: {
    START: 'LOG_TRUNCATION',
    'FAIL retryable': 'FAILED',
    'FAIL fatal': 'FAILED',
  },
  FAILED: {
    START: 'LOG_TRUNCATION',
    'STOP failover': 'STOPPING',
    'STOP promote': 'STOPPING',
    'FAIL retryable': 'FAILED',
    'FAIL fatal': 'FAILED',
    'RETRY operator': 'previous',
    'RETRY automatic': 'previous if retryable and attempts remain',
  },
};

interface Configuration {
  readonly label: string;
  readonly status: PartitionStatus;
}

/** Every state, and for FAILED every (previous state × retryable × attempts left) combination. */
function configurations(): Configuration[] {
  const out: Configuration[] = [];
  for (const state of RecoverableStates) {
    out.push({ label: state, status: status(state, { retryAttempt: 2 }, recorded) });
  }
  for (const previousState of RecoverableStates) {
    for (const retryable of [true, false]) {
      for (const retryAttempt of [0, RetryPolicy.maxAttempts - 1, RetryPolicy.maxAttempts]) {
        out.push({
          label: `FAILED(previous=${previousState}, retryable=${retryable}, attempt=${retryAttempt})`,
          status: status('FAILED', { previousState, retryable, retryAttempt, error: { code: 'CLUSTER_UNREACHABLE', message: 'boom' } }, recorded),
        });
      }
    }
  }
  return out;
}

function expectedTarget(config: Configuration, eventCase: EventCase): PartitionState | undefined {
  const target = allowed[config.status.state][eventCase];
  const ctx = config.status.context;
  if (target === 'previous') return ctx.previousState!;
  if (target === 'previous if retryable and attempts remain') {
    return ctx.retryable === true && ctx.retryAttempt < RetryPolicy.maxAttempts ? ctx.previousState! : undefined;
  }
  return target;
}

describe('partition chart: every (state, event) pair against the allowed-transition table', () => {
  const cases = configurations().flatMap((config) =>
    (Object.keys(events) as EventCase[]).map((eventCase) => ({ config, eventCase, expected: expectedTarget(config, eventCase) })),
  );

  it('covers every declared state and every event type', () => {
    expect(new Set(cases.map((c) => c.config.status.state))).toEqual(new Set(PartitionStates));
    expect(new Set(Object.values(events).map((e) => e.type))).toEqual(new Set(PartitionEventTypes));
    expect(cases.length).toBe(configurations().length * Object.keys(events).length);
  });

  it.each(cases.map((c) => [c.config.label, c.eventCase, c.expected ?? 'refused', c] as const))('%s + %s → %s', (_l, _e, _x, c) => {
    const event = events[c.eventCase];
    const next = stepPartition(c.config.status, event);
    expect(next?.state).toBe(c.expected);
    expect(stepPartition(c.config.status, event)).toEqual(next); // remembered answers are the same answers
    // The pure `transition` on a live snapshot agrees with the verdict: a refused event changes nothing.
    const [live] = transition(partitionMachine, restorePartition(c.config.status), toChartEvent(c.config.status, event));
    const lastMirrored = next !== undefined && event.type === 'RECORD_POSITION' ? event.position : c.config.status.lastMirrored;
    expect(partitionStatusOf(live, lastMirrored)).toEqual(next ?? c.config.status);
  });
});

describe('partition chart: context', () => {
  const fail = events['FAIL retryable'];

  it('starts in LOG_TRUNCATION with an empty context, equal to newPartition()', () => {
    const [snapshot, actions] = initialTransition(partitionMachine);
    expect(partitionStatusOf(snapshot, null)).toEqual(newPartition());
    expect(actions).toEqual([]);
  });

  it('FAILED keeps previousState, error, retryable and the attempt count', () => {
    const mirroring = status('MIRRORING', { retryAttempt: 4 }, recorded);
    const failed = stepPartition(mirroring, fail)!;
    expect(failed).toEqual(status('FAILED', { previousState: 'MIRRORING', retryable: true, error: fail.error, retryAttempt: 4 }, recorded));
  });

  it('a second failure replaces the error but never records FAILED as the previous state', () => {
    const failed = stepPartition(status('PAUSING'), fail)!;
    const again = stepPartition(failed, events['FAIL fatal'])!;
    expect(again.context.previousState).toBe('PAUSING');
    expect(again.context.error).toEqual(events['FAIL fatal'].error);
    expect(again.context.retryable).toBe(false);
  });

  it('automatic retry returns to the previous state and counts the attempt; progress resets it', () => {
    let current = stepPartition(status('LOG_TRUNCATION'), fail)!;
    current = stepPartition(current, events['RETRY automatic'])!;
    expect(current).toEqual(status('LOG_TRUNCATION', { retryAttempt: 1 }));
    current = stepPartition(stepPartition(current, fail)!, events['RETRY automatic'])!;
    expect(current.context.retryAttempt).toBe(2);
    current = stepPartition(current, events.TRUNCATED)!;
    expect(current).toEqual(status('MIRRORING'));
  });

  it('no dead end: a partition whose automatic retries are exhausted can be retried or stopped by an operator', () => {
    let current = status('STOPPING', { stopMode: 'promote' });
    for (let i = 0; i < RetryPolicy.maxAttempts; i++) {
      current = stepPartition(stepPartition(current, fail)!, events['RETRY automatic'])!;
    }
    const exhausted = stepPartition(current, fail)!;
    expect(exhausted.context.retryAttempt).toBe(RetryPolicy.maxAttempts);
    expect(stepPartition(exhausted, events['RETRY automatic'])).toBeUndefined();
    expect(stepPartition(exhausted, events['RETRY operator'])).toEqual(status('STOPPING', { stopMode: 'promote' }));
    expect(stepPartition(exhausted, events['STOP failover'])?.context.stopMode).toBe('failover');
    expect(stepPartition(exhausted, events.START)?.state).toBe('LOG_TRUNCATION');
  });

  it('a restart keeps the last mirrored position (failback truncates to it)', () => {
    expect(stepPartition(status('STOPPED', { stopMode: 'failover' }, recorded), events.START)).toEqual(status('LOG_TRUNCATION', {}, recorded));
  });

  it("a stop's final position is the last one until a restart: a stop run again after the topic was made writable records nothing more", () => {
    const stopping = stepPartition(status('MIRRORING', {}, recorded), events['STOP failover'])!;
    const final = stepPartition(stopping, { type: 'RECORD_POSITION', position: position(120n), final: true })!;
    expect(final).toEqual(status('STOPPING', { stopMode: 'failover', finalPosition: true }, position(120n)));
    // Writes the destination took after it, recorded by a run of the same stop, or a late copy's position.
    expect(stepPartition(final, { type: 'RECORD_POSITION', position: position(130n), final: true })).toBeUndefined();
    expect(stepPartition(final, events['RECORD_POSITION forward'])).toBeUndefined();
    // Kept through a failure while stopping and its retry, and through a stop asked for again from FAILED.
    const failed = stepPartition(final, fail)!;
    expect(stepPartition(failed, events['RETRY operator'])?.context.finalPosition).toBe(true);
    expect(stepPartition(failed, events['STOP promote'])?.context.finalPosition).toBe(true);
    const stoppedThenFailed = stepPartition(stepPartition(final, events.STOPPED)!, fail)!;
    expect(stepPartition(stoppedThenFailed, events['STOP failover'])?.context.finalPosition).toBe(true);
    // Gone with a restart, and never set outside a stop.
    const restarted = stepPartition(stepPartition(final, events.STOPPED)!, events.START)!;
    expect(restarted.context.finalPosition).toBe(false);
    expect(stepPartition(status('MIRRORING'), { type: 'RECORD_POSITION', position: position(5n), final: true })?.context.finalPosition).toBe(false);
    // A partition that failed while mirroring starts a stop without a final position.
    const failedMirroring = stepPartition(stepPartition(status('MIRRORING'), { type: 'RECORD_POSITION', position: position(5n), final: true })!, fail)!;
    expect(stepPartition(failedMirroring, events['STOP failover'])?.context.finalPosition).toBe(false);
  });

  it('records positions monotonically and never a negative offset', () => {
    const mirroring = status('MIRRORING');
    expect(stepPartition(mirroring, { type: 'RECORD_POSITION', position: position(-1n) })).toBeUndefined();
    expect(stepPartition(mirroring, { type: 'RECORD_POSITION', position: position(0n) })?.lastMirrored).toEqual(position(0n));
  });

  it('backs off exponentially from 1 s to the 300 s cap', () => {
    expect([0, 1, 2, 8, 9, 50].map(retryDelayMs)).toEqual([1_000, 2_000, 4_000, 256_000, 300_000, 300_000]);
  });
});

describe('partition chart: random event sequences (property)', () => {
  const arbitraryEvent: fc.Arbitrary<PartitionEvent> = fc.oneof(
    fc.constantFrom<PartitionEvent>(
      { type: 'TRUNCATED' },
      { type: 'PAUSE' },
      { type: 'PAUSED' },
      { type: 'RESUME' },
      { type: 'STOPPED' },
      { type: 'START' },
      { type: 'RETRY', trigger: 'automatic' },
      { type: 'RETRY', trigger: 'operator' },
    ),
    fc.constantFrom<'failover' | 'promote'>('failover', 'promote').map((mode): PartitionEvent => ({ type: 'STOP', mode })),
    fc.record({ code: fc.constantFrom('CLUSTER_UNREACHABLE', 'OFFSET_DIVERGENCE'), message: fc.string() }).chain((error) =>
      fc.boolean().map((retryable): PartitionEvent => ({ type: 'FAIL', error, retryable })),
    ),
    fc.tuple(fc.bigInt({ min: -5n, max: 1n << 62n }), fc.boolean()).map(([offset, final]): PartitionEvent => ({ type: 'RECORD_POSITION', position: position(offset), final })),
  );

  function fold(sequence: readonly PartitionEvent[]): PartitionStatus[] {
    const trail: PartitionStatus[] = [newPartition()];
    for (const event of sequence) trail.push(stepPartition(trail.at(-1)!, event) ?? trail.at(-1)!);
    return trail;
  }

  it('folds deterministically, agrees with a live snapshot, and never leaves the declared states or breaks the FAILED invariant', () => {
    fc.assert(
      fc.property(fc.array(arbitraryEvent, { maxLength: 200 }), (sequence) => {
        const trail = fold(sequence);
        expect(fold(sequence)).toEqual(trail);

        // Driving one live snapshot with `transition` gives the same trail as restoring from the
        // stored status at every step: the stored form loses nothing.
        let [live] = initialTransition(partitionMachine);
        for (let i = 0; i < sequence.length; i++) {
          [live] = transition(partitionMachine, live, toChartEvent(trail[i]!, sequence[i]!));
          expect(partitionStatusOf(live, trail[i + 1]!.lastMirrored)).toEqual(trail[i + 1]);
        }

        for (const current of trail) {
          expect(PartitionStates).toContain(current.state);
          const { previousState, error, retryable, retryAttempt } = current.context;
          const { lastMirrored } = current;
          const failed = current.state === 'FAILED';
          expect(previousState !== null).toBe(failed);
          expect(error !== null).toBe(failed);
          expect(retryable !== null).toBe(failed);
          if (failed) expect(RecoverableStates).toContain(previousState as RecoverableState);
          expect(retryAttempt).toBeGreaterThanOrEqual(0);
          expect(retryAttempt).toBeLessThanOrEqual(RetryPolicy.maxAttempts);
          if (lastMirrored !== null) expect(lastMirrored.offset >= 0n).toBe(true);
        }
        for (let i = 1; i < trail.length; i++) {
          const before = trail[i - 1]!.lastMirrored?.offset ?? -1n;
          const after = trail[i]!.lastMirrored?.offset ?? -1n;
          expect(after >= before).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });
});
