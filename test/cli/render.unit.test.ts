import { describe, expect, it } from 'vitest';
import { fitTo, progressLine } from '../../cli/render.ts';

const progress = { workflow: 'failover', mirror: 'dr', step: 'waiting for the ISR', done: false, total: 2_000, states: { STOPPING: 2_000 } } as const;

describe('progressLine', () => {
  it('states the step and the partitions per state', () => {
    expect(progressLine('failover dr', progress)).toBe('failover dr: waiting for the ISR — 2,000 partitions: 2,000 STOPPING');
  });

  it('names the brokers an ISR wait lacks, and how to go on without them', () => {
    const pending = [{ activity: 'waitForIsr', attempt: 1, details: { waiting: 12, partitions: [], missingBrokers: [2], minInsyncReplicas: {} } }];
    expect(progressLine('failover dr', { ...progress, pending })).toBe(
      'failover dr: waiting for the ISR — 2,000 partitions: 2,000 STOPPING; 12 partition(s) lack an in-sync replica (broker 2 missing) — to go on without it: kmirror retry dr --override-isr-wait --reason "…"',
    );
  });

  it('says nothing more while the ISR wait has nothing to wait for, or another activity is pending', () => {
    expect(progressLine('failover dr', { ...progress, pending: [{ activity: 'waitForIsr', attempt: 1, details: { waiting: 0, missingBrokers: [] } }] })).toBe(progressLine('failover dr', progress));
    expect(progressLine('failover dr', { ...progress, pending: [{ activity: 'liftReadOnly', attempt: 3, details: undefined }] })).toBe(progressLine('failover dr', progress));
  });

  it('names the first partitions not done yet, with what is known of their offsets, and how many more', () => {
    const start = { workflow: 'startTopics', mirror: 'dr', step: 'aligning the destination and waiting for the ISR', done: false, total: 2_000, states: { MIRRORING: 1_990, LOG_TRUNCATION: 9, FAILED: 1 } } as const;
    const unfinished = [
      { topic: 'orders', partition: 7, state: 'LOG_TRUNCATION', lastMirroredOffset: null },
      { topic: 'orders', partition: 9, state: 'LOG_TRUNCATION', lastMirroredOffset: '5000' },
    ];
    expect(progressLine('start dr', { ...start, unfinished }, ['MIRRORING', 'FAILED'])).toBe(
      'start dr: aligning the destination and waiting for the ISR — 2,000 partitions: 1,990 MIRRORING, 9 LOG_TRUNCATION, 1 FAILED; not yet: orders-7 LOG_TRUNCATION, orders-9 LOG_TRUNCATION at 5000 (+7 more)',
    );
    const stopping = [{ topic: 'orders', partition: 3, state: 'STOPPING', sourceEnd: '1120', destinationEnd: '1000' }];
    expect(progressLine('promote dr', { ...progress, total: 1, states: { STOPPING: 1 }, unfinished: stopping }, ['STOPPED'])).toBe('promote dr: waiting for the ISR — 1 partitions: 1 STOPPING; not yet: orders-3 STOPPING 120 behind');
    // Nothing unfinished (or not asked): the counts only.
    expect(progressLine('failover dr', { ...progress, unfinished: [] }, ['STOPPED'])).toBe(progressLine('failover dr', progress));
  });

  it('fitTo cuts a line to the terminal width (a wrapped line cannot be rewritten in place)', () => {
    expect(fitTo('x'.repeat(100), 80)).toBe(`${'x'.repeat(78)}…`);
    expect(fitTo('short', 80)).toBe('short');
    expect(fitTo('x'.repeat(100), undefined)).toHaveLength(100);
  });
});
