// The partition lists of the progress query and of runner changes (workflows/progress.ts).
import { describe, expect, it } from 'vitest';
import { LISTED_PARTITIONS, partitionsOf, progressOver, withStatesOf } from '../../workflows/progress.ts';

const failed = { code: 'KAFKA_ERROR', message: 'boom' };

describe('progress lists', () => {
  it('partitionsOf lists a view topic by topic in partition order, with errors', () => {
    const partition = (state: string, error: typeof failed | null = null) => ({ state, retryable: null, retryAttempt: 0, error });
    expect(partitionsOf([{ topic: 'b', partitions: [partition('MIRRORING'), partition('FAILED', failed)] }, { topic: 'a', partitions: [partition('PAUSED')] }])).toEqual([
      { topic: 'b', partition: 0, state: 'MIRRORING' },
      { topic: 'b', partition: 1, state: 'FAILED', error: failed },
      { topic: 'a', partition: 0, state: 'PAUSED' },
    ]);
  });

  it('progressOver counts per state and lists at most LISTED_PARTITIONS, none in a summary', () => {
    const many = Array.from({ length: LISTED_PARTITIONS + 5 }, (_, i) => ({ topic: 't', partition: i, state: i < 5 ? 'PAUSED' : 'MIRRORING' }));
    const full = progressOver(many);
    expect(full).toMatchObject({ total: LISTED_PARTITIONS + 5, states: { PAUSED: 5, MIRRORING: LISTED_PARTITIONS } });
    expect(full.partitions).toHaveLength(LISTED_PARTITIONS);
    expect(progressOver(many, { summary: true })).toEqual({ total: LISTED_PARTITIONS + 5, states: { PAUSED: 5, MIRRORING: LISTED_PARTITIONS } });
    expect(progressOver([])).toEqual({ total: 0, states: {}, partitions: [] });
  });

  it('progressOver lists the first partitions not yet in a done state when asked (what a terminal shows), at most max and never more than 100', () => {
    const list = Array.from({ length: 2_000 }, (_, i) => ({ topic: 't', partition: i, state: i % 500 === 7 ? 'LOG_TRUNCATION' : i === 3 ? 'FAILED' : 'MIRRORING' }));
    const sample = progressOver(list, { summary: true, unfinished: { done: ['MIRRORING', 'FAILED'], max: 3 } });
    expect(sample).toEqual({ total: 2_000, states: { MIRRORING: 1_995, LOG_TRUNCATION: 4, FAILED: 1 }, unfinished: [7, 507, 1_007].map((partition) => ({ topic: 't', partition, state: 'LOG_TRUNCATION' })) });
    expect(progressOver(list, { summary: true, unfinished: { done: [], max: 1_000 } }).unfinished).toHaveLength(100);
    expect(progressOver(list, { summary: true, unfinished: { done: ['MIRRORING', 'FAILED', 'LOG_TRUNCATION'], max: 5 } }).unfinished).toEqual([]);
  });

  it('withStatesOf takes the states and errors a change reports, keeps other fields and partitions it does not name', () => {
    const before = [
      { topic: 't', partition: 0, state: 'MIRRORING', sourceEnd: '10' },
      { topic: 't', partition: 1, state: 'FAILED', error: failed },
      { topic: 'u', partition: 0, state: 'MIRRORING' },
    ];
    const after = withStatesOf(before, { list: [{ topic: 't', partition: 0, state: 'FAILED', error: failed }, { topic: 't', partition: 1, state: 'MIRRORING' }] });
    expect(after).toEqual([
      { topic: 't', partition: 0, state: 'FAILED', error: failed, sourceEnd: '10' },
      { topic: 't', partition: 1, state: 'MIRRORING' },
      { topic: 'u', partition: 0, state: 'MIRRORING' },
    ]);
    // A runner older than the list: the states stay as they were.
    expect(withStatesOf(before, {})).toEqual(before);
  });
});
