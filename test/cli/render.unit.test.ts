import { describe, expect, it } from 'vitest';
import { progressLine } from '../../cli/render.ts';

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
});
