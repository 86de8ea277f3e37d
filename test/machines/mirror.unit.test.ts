import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { initialTransition, transition } from 'xstate';
import { MirrorEventTypes, MirrorStates, mirrorMachine, restoreMirror, stepMirror, type MirrorEvent, type MirrorState } from '../../machines/mirror.ts';

const events = {
  TOPICS_STARTED: { type: 'TOPICS_STARTED' },
  PARTITIONS_CHANGED: { type: 'PARTITIONS_CHANGED' },
  'DELETE_REQUESTED all stopped': { type: 'DELETE_REQUESTED', partitionsNotStopped: 0 },
  'DELETE_REQUESTED 3 not stopped': { type: 'DELETE_REQUESTED', partitionsNotStopped: 3 },
  DELETE_COMPLETED: { type: 'DELETE_COMPLETED' },
} satisfies Record<string, MirrorEvent>;
type EventCase = keyof typeof events;

/** Written out by hand; anything absent is refused. */
const allowed: Record<MirrorState, Partial<Record<EventCase, MirrorState>>> = {
  created: { TOPICS_STARTED: 'active', 'DELETE_REQUESTED all stopped': 'deleting' },
  active: { TOPICS_STARTED: 'active', PARTITIONS_CHANGED: 'active', 'DELETE_REQUESTED all stopped': 'deleting' },
  deleting: { DELETE_COMPLETED: 'deleted' },
  deleted: {},
};

describe('mirror chart: every (state, event) pair against the allowed-transition table', () => {
  const cases = MirrorStates.flatMap((state) =>
    (Object.keys(events) as EventCase[]).map((eventCase) => [state, eventCase, allowed[state][eventCase] ?? 'refused'] as const),
  );

  it('covers every declared state and event type', () => {
    expect(new Set(Object.values(events).map((e) => e.type))).toEqual(new Set(MirrorEventTypes));
    expect(cases).toHaveLength(MirrorStates.length * Object.keys(events).length);
  });

  it.each(cases)('%s + %s → %s', (state, eventCase, expected) => {
    expect(stepMirror(state, events[eventCase]) ?? 'refused').toBe(expected);
    const [live] = transition(mirrorMachine, restoreMirror(state), events[eventCase]);
    expect(live.value).toBe(expected === 'refused' ? state : expected);
  });

  it('starts in created; deleted is final', () => {
    const [snapshot] = initialTransition(mirrorMachine);
    expect(snapshot.value).toBe('created');
    expect(restoreMirror('deleted').status).toBe('done');
  });
});

describe('mirror chart: random event sequences (property)', () => {
  it('folds deterministically, never leaves the declared states, and reaches deleting only when every partition is stopped', () => {
    const arbitraryEvent: fc.Arbitrary<MirrorEvent> = fc.oneof(
      fc.constantFrom<MirrorEvent>({ type: 'TOPICS_STARTED' }, { type: 'PARTITIONS_CHANGED' }, { type: 'DELETE_COMPLETED' }),
      fc.nat(3).map((n): MirrorEvent => ({ type: 'DELETE_REQUESTED', partitionsNotStopped: n })),
    );
    fc.assert(
      fc.property(fc.array(arbitraryEvent, { maxLength: 60 }), (sequence) => {
        const fold = (): MirrorState[] => {
          const trail: MirrorState[] = ['created'];
          for (const event of sequence) trail.push(stepMirror(trail.at(-1)!, event) ?? trail.at(-1)!);
          return trail;
        };
        const trail = fold();
        expect(fold()).toEqual(trail);
        for (let i = 1; i < trail.length; i++) {
          expect(MirrorStates).toContain(trail[i]);
          if (trail[i] === 'deleting' && trail[i - 1] !== 'deleting') {
            expect(sequence[i - 1]).toEqual({ type: 'DELETE_REQUESTED', partitionsNotStopped: 0 });
          }
        }
      }),
    );
  });
});
