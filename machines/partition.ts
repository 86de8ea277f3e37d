// The partition lifecycle of KIP-1279, as the single authority on which transitions exist.
//
// Pure: no actors, no timers, no side effects. Time and outside facts arrive as events; the
// chart is driven with xstate's `initialTransition` / `transition`. A partition is persisted as
// its state value plus context, and the last mirrored position beside them (`PartitionStatus`);
// `restorePartition` turns that back into a snapshot, so projections and decide() fold with the
// same chart. The position is data the chart gates, not chart context: the chart sees only whether
// a recorded position advances. That keeps the context to lifecycle facts, identical across most
// partitions, so stepPartition can remember the chart's answers (see there).
//
// Transitions (KIP-1279, plus the no-dead-end rule of DESIGN.md §3):
//   (new)            → LOG_TRUNCATION          initial state
//   LOG_TRUNCATION   → MIRRORING  TRUNCATED    aligned, ISR converged
//   MIRRORING        → PAUSING    PAUSE
//   PAUSING          → PAUSED     PAUSED       fetching has really stopped
//   PAUSED           → MIRRORING  RESUME
//   LOG_TRUNCATION, MIRRORING, PAUSING, PAUSED, FAILED → STOPPING  STOP (failover or promote)
//   STOPPING         → STOPPED    STOPPED      writable
//   STOPPED, FAILED  → LOG_TRUNCATION  START   restart / re-mirror
//   any              → FAILED     FAIL         FAILED→FAILED replaces the error, keeps previousState
//   FAILED           → previousState  RETRY    automatic: only while retryable and attempts remain;
//                                              operator: always, and resets the attempt count
//   MIRRORING, PAUSING, PAUSED, STOPPING: RECORD_POSITION (stays; only if the offset does not go
//                                              backwards; counts as progress)
//   STOPPING: a final RECORD_POSITION (the position the stop's copies ended at, recorded before the
//             topic is made writable) is the last one until the partition is restarted: the
//             destination may take writes after it that are not mirrored data (a stop run again)
// Context invariant: previousState, error and retryable are non-null exactly in FAILED.
import { and, assign, setup, transition, type SnapshotFrom } from 'xstate';

export const PartitionStates = ['LOG_TRUNCATION', 'MIRRORING', 'PAUSING', 'PAUSED', 'STOPPING', 'STOPPED', 'FAILED'] as const;
export type PartitionState = (typeof PartitionStates)[number];
/** The states a failure can happen in, and so the states a retry can return to. */
export type RecoverableState = Exclude<PartitionState, 'FAILED'>;
export const RecoverableStates: readonly RecoverableState[] = PartitionStates.filter((s): s is RecoverableState => s !== 'FAILED');

export type StopMode = 'failover' | 'promote';
export type RetryTrigger = 'automatic' | 'operator';

export interface PartitionError {
  readonly code: string;
  readonly message: string;
}

/** Where the destination log ended when last recorded: the failback truncation point (DESIGN §6). */
export interface LastMirrored {
  readonly offset: bigint;
  /** Source leader epoch of the last mirrored batch. */
  readonly leaderEpoch: number;
  /** Checksum of the last mirrored record (the boundary record). */
  readonly checksum: string;
}

export interface PartitionContext {
  /** The state a FAILED partition retries to; null outside FAILED. */
  readonly previousState: RecoverableState | null;
  /** Automatic retries taken since the partition last made progress. */
  readonly retryAttempt: number;
  /** Whether the failure may be retried automatically; null outside FAILED. */
  readonly retryable: boolean | null;
  readonly error: PartitionError | null;
  /** How the current or last stop was asked for; a retried STOPPING needs it. */
  readonly stopMode: StopMode | null;
  /** The current stop recorded its final position: no other is recorded until a restart. */
  readonly finalPosition: boolean;
}

/** What callers send. RECORD_POSITION carries the position; the chart itself receives
 *  ChartEvent, where the position is reduced to whether it advances (toChartEvent). */
export type PartitionEvent =
  | { readonly type: 'TRUNCATED' }
  | { readonly type: 'PAUSE' }
  | { readonly type: 'PAUSED' }
  | { readonly type: 'RESUME' }
  | { readonly type: 'STOP'; readonly mode: StopMode }
  | { readonly type: 'STOPPED' }
  | { readonly type: 'START' }
  | { readonly type: 'FAIL'; readonly error: PartitionError; readonly retryable: boolean }
  | { readonly type: 'RETRY'; readonly trigger: RetryTrigger }
  | { readonly type: 'RECORD_POSITION'; readonly position: LastMirrored; readonly final?: boolean };
export type PartitionEventType = PartitionEvent['type'];

/** The events the xstate machine receives. */
export type ChartEvent = Exclude<PartitionEvent, { type: 'RECORD_POSITION' }> | { readonly type: 'RECORD_POSITION'; readonly advances: boolean; readonly final: boolean };
export const PartitionEventTypes: readonly PartitionEventType[] = ['TRUNCATED', 'PAUSE', 'PAUSED', 'RESUME', 'STOP', 'STOPPED', 'START', 'FAIL', 'RETRY', 'RECORD_POSITION'];

/** The KIP's retry policy: exponential backoff from 1 s, capped at 300 s, 100 attempts. */
export const RetryPolicy = Object.freeze({ initialDelayMs: 1_000, maxDelayMs: 300_000, maxAttempts: 100 });

/** Delay before automatic retry number `attempt + 1`; the workflow waits it out, not the chart. */
export function retryDelayMs(attempt: number): number {
  return Math.min(RetryPolicy.maxDelayMs, RetryPolicy.initialDelayMs * 2 ** Math.max(0, attempt));
}

export const initialPartitionContext: PartitionContext = Object.freeze({
  previousState: null,
  retryAttempt: 0,
  retryable: null,
  error: null,
  stopMode: null,
  finalPosition: false,
});

const progressed = {
  previousState: null,
  retryAttempt: 0,
  retryable: null,
  error: null,
} as const;

export const partitionMachine = setup({
  types: {
    context: {} as PartitionContext,
    events: {} as ChartEvent,
  },
  guards: {
    retryAllowed: ({ context, event }) =>
      event.type === 'RETRY' &&
      (event.trigger === 'operator' || (context.retryable === true && context.retryAttempt < RetryPolicy.maxAttempts)),
    failedIn: ({ context }, params: { state: RecoverableState }) => context.previousState === params.state,
    positionAdvances: ({ context, event }) => event.type === 'RECORD_POSITION' && event.advances && !context.finalPosition,
  },
  actions: {
    progress: assign(() => progressed),
    // A partition that failed while stopping, or once stopped, keeps what its stop recorded.
    stop: assign(({ context, event }) => ({
      ...progressed,
      stopMode: event.type === 'STOP' ? event.mode : null,
      finalPosition: (context.previousState === 'STOPPING' || context.previousState === 'STOPPED') && context.finalPosition,
    })),
    restart: assign(() => ({ ...progressed, stopMode: null, finalPosition: false })),
    recordInStop: assign(({ event }) => ({ ...progressed, ...(event.type === 'RECORD_POSITION' && event.final ? { finalPosition: true } : {}) })),
    fail: assign(({ event }, params: { from: RecoverableState }) => {
      if (event.type !== 'FAIL') return {};
      return { previousState: params.from, error: event.error, retryable: event.retryable };
    }),
    replaceFailure: assign(({ event }) => {
      if (event.type !== 'FAIL') return {};
      return { error: event.error, retryable: event.retryable };
    }),
    retry: assign(({ context, event }) => ({
      previousState: null,
      retryable: null,
      error: null,
      retryAttempt: event.type === 'RETRY' && event.trigger === 'operator' ? 0 : context.retryAttempt + 1,
    })),
  },
}).createMachine({
  id: 'partition',
  initial: 'LOG_TRUNCATION',
  context: initialPartitionContext,
  states: {
    LOG_TRUNCATION: {
      on: {
        TRUNCATED: { target: 'MIRRORING', actions: 'progress' },
        STOP: { target: 'STOPPING', actions: 'stop' },
        FAIL: { target: 'FAILED', actions: { type: 'fail', params: { from: 'LOG_TRUNCATION' } } },
      },
    },
    MIRRORING: {
      on: {
        PAUSE: { target: 'PAUSING', actions: 'progress' },
        STOP: { target: 'STOPPING', actions: 'stop' },
        RECORD_POSITION: { guard: 'positionAdvances', actions: 'progress' },
        FAIL: { target: 'FAILED', actions: { type: 'fail', params: { from: 'MIRRORING' } } },
      },
    },
    PAUSING: {
      on: {
        PAUSED: { target: 'PAUSED', actions: 'progress' },
        STOP: { target: 'STOPPING', actions: 'stop' },
        RECORD_POSITION: { guard: 'positionAdvances', actions: 'progress' },
        FAIL: { target: 'FAILED', actions: { type: 'fail', params: { from: 'PAUSING' } } },
      },
    },
    PAUSED: {
      on: {
        RESUME: { target: 'MIRRORING', actions: 'progress' },
        STOP: { target: 'STOPPING', actions: 'stop' },
        RECORD_POSITION: { guard: 'positionAdvances', actions: 'progress' },
        FAIL: { target: 'FAILED', actions: { type: 'fail', params: { from: 'PAUSED' } } },
      },
    },
    STOPPING: {
      on: {
        STOPPED: { target: 'STOPPED', actions: 'progress' },
        RECORD_POSITION: { guard: 'positionAdvances', actions: 'recordInStop' },
        FAIL: { target: 'FAILED', actions: { type: 'fail', params: { from: 'STOPPING' } } },
      },
    },
    STOPPED: {
      on: {
        START: { target: 'LOG_TRUNCATION', actions: 'restart' },
        FAIL: { target: 'FAILED', actions: { type: 'fail', params: { from: 'STOPPED' } } },
      },
    },
    FAILED: {
      on: {
        RETRY: RecoverableStates.map((state) => ({
          guard: and(['retryAllowed', { type: 'failedIn', params: { state } }]),
          target: state,
          actions: 'retry' as const,
        })),
        STOP: { target: 'STOPPING', actions: 'stop' },
        START: { target: 'LOG_TRUNCATION', actions: 'restart' },
        FAIL: { actions: 'replaceFailure' },
      },
    },
  },
});

export type PartitionSnapshot = SnapshotFrom<typeof partitionMachine>;

/** A partition as stored: the chart's state value and context, and the last mirrored position. */
export interface PartitionStatus {
  readonly state: PartitionState;
  readonly context: PartitionContext;
  readonly lastMirrored: LastMirrored | null;
}

const NEW_PARTITION: PartitionStatus = Object.freeze({ state: 'LOG_TRUNCATION', context: initialPartitionContext, lastMirrored: null });

/** A new mirror partition (enters LOG_TRUNCATION). Equal to `initialTransition(partitionMachine)`,
 *  which the unit tests check; building it directly keeps bulk topic creation cheap. */
export function newPartition(): PartitionStatus {
  return NEW_PARTITION;
}

export function restorePartition(status: Pick<PartitionStatus, 'state' | 'context'>): PartitionSnapshot {
  return partitionMachine.resolveState({ value: status.state, context: status.context });
}

export function partitionStatusOf(snapshot: PartitionSnapshot, lastMirrored: LastMirrored | null): PartitionStatus {
  return { state: snapshot.value as PartitionState, context: snapshot.context, lastMirrored };
}

/** The event the chart receives for `event` in `status`. */
export function toChartEvent(status: PartitionStatus, event: PartitionEvent): ChartEvent {
  if (event.type !== 'RECORD_POSITION') return event;
  const { offset } = event.position;
  return { type: 'RECORD_POSITION', advances: offset >= 0n && (status.lastMirrored === null || offset >= status.lastMirrored.offset), final: event.final === true };
}

// The chart is a pure function of (state value, context, chart event), and one xstate transition
// costs tens of microseconds, so a 50,000-partition operation would spend seconds re-asking the
// same question. stepPartition remembers the answers, keyed on exactly those three inputs.
const MEMO_LIMIT = 4_096;
const memo = new Map<string, { readonly state: PartitionState; readonly context: PartitionContext } | null>();

function memoKey(status: PartitionStatus, event: ChartEvent): string {
  const c = status.context;
  const e =
    event.type === 'FAIL'
      ? `FAIL\u0001${event.retryable}\u0001${event.error.code}\u0001${event.error.message}`
      : event.type === 'STOP'
        ? `STOP\u0001${event.mode}`
        : event.type === 'RETRY'
          ? `RETRY\u0001${event.trigger}`
          : event.type === 'RECORD_POSITION'
            ? `RECORD_POSITION\u0001${event.advances}\u0001${event.final}`
            : event.type;
  return `${status.state}\u0002${c.previousState}\u0002${c.retryAttempt}\u0002${c.retryable}\u0002${c.stopMode}\u0002${c.finalPosition}\u0002${c.error?.code}\u0002${c.error?.message}\u0003${e}`;
}

/** The chart's verdict: the next status, or undefined when the chart has no transition for `event`. */
export function stepPartition(status: PartitionStatus, event: PartitionEvent): PartitionStatus | undefined {
  const chartEvent = toChartEvent(status, event);
  const key = memoKey(status, chartEvent);
  let next = memo.get(key);
  if (next === undefined) {
    const snapshot = restorePartition(status);
    next = snapshot.can(chartEvent) ? partitionStatusOf(transition(partitionMachine, snapshot, chartEvent)[0], null) : null;
    if (memo.size >= MEMO_LIMIT) memo.clear();
    memo.set(key, next);
  }
  if (next === null) return undefined;
  const lastMirrored = event.type === 'RECORD_POSITION' ? event.position : status.lastMirrored;
  return { state: next.state, context: next.context, lastMirrored };
}
