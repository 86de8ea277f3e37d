// The cluster-mirror lifecycle: created → active → deleting → deleted.
//
// Pure, like the partition chart. The chart decides what a mirror in a given state accepts; the
// facts its guards need about the mirror's partitions travel in the event (decide and evolve
// compute them from the aggregate), so the chart never reaches outside itself.
//   (new)     → created   initial state (MirrorCreated)
//   created, active → active     TOPICS_STARTED
//   active    → active            PARTITIONS_CHANGED   only an active mirror's partitions change
//   created, active → deleting   DELETE_REQUESTED     only when no partition is outside STOPPED
//   deleting  → deleted           DELETE_COMPLETED     final
import { setup, transition, type SnapshotFrom } from 'xstate';

export const MirrorStates = ['created', 'active', 'deleting', 'deleted'] as const;
export type MirrorState = (typeof MirrorStates)[number];

export type MirrorEvent =
  | { readonly type: 'TOPICS_STARTED' }
  | { readonly type: 'PARTITIONS_CHANGED' }
  | { readonly type: 'DELETE_REQUESTED'; readonly partitionsNotStopped: number }
  | { readonly type: 'DELETE_COMPLETED' };
export type MirrorEventType = MirrorEvent['type'];
export const MirrorEventTypes: readonly MirrorEventType[] = ['TOPICS_STARTED', 'PARTITIONS_CHANGED', 'DELETE_REQUESTED', 'DELETE_COMPLETED'];

export const mirrorMachine = setup({
  types: { events: {} as MirrorEvent },
  guards: {
    everyPartitionStopped: ({ event }) => event.type === 'DELETE_REQUESTED' && event.partitionsNotStopped === 0,
  },
}).createMachine({
  id: 'mirror',
  initial: 'created',
  states: {
    created: {
      on: {
        TOPICS_STARTED: 'active',
        DELETE_REQUESTED: { guard: 'everyPartitionStopped', target: 'deleting' },
      },
    },
    active: {
      on: {
        // Self-targets, not empty transitions: xstate's can() treats a transition with neither target
        // nor actions as not enabled.
        TOPICS_STARTED: 'active',
        PARTITIONS_CHANGED: 'active',
        DELETE_REQUESTED: { guard: 'everyPartitionStopped', target: 'deleting' },
      },
    },
    deleting: {
      on: { DELETE_COMPLETED: 'deleted' },
    },
    deleted: { type: 'final' },
  },
});

export type MirrorSnapshot = SnapshotFrom<typeof mirrorMachine>;

export function restoreMirror(state: MirrorState): MirrorSnapshot {
  return mirrorMachine.resolveState({ value: state, context: undefined });
}

/** The chart's verdict: the next state, or undefined when the chart has no transition for `event`. */
export function stepMirror(state: MirrorState, event: MirrorEvent): MirrorState | undefined {
  const snapshot = restoreMirror(state);
  if (!snapshot.can(event)) return undefined;
  const [next] = transition(mirrorMachine, snapshot, event);
  return next.value as MirrorState;
}
