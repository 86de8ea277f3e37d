// createBatches (kafka/mirror-topics.ts): CreateTopics requests stay under the KRaft controller's
// limit of metadata records per request (a topic, each partition and each config one record).
import { describe, expect, it } from 'vitest';
import { createBatches } from '../../kafka/mirror-topics.ts';

const topic = (i: number, partitions: number, configs = 1) => ({ topic: `t${i}`, partitions, configs: Object.fromEntries(Array.from({ length: configs }, (_, c) => [`c${c}`, 'v'])) });
const records = (batch: readonly { partitions: number; configs?: Record<string, string> }[]) => batch.reduce((n, s) => n + 1 + s.partitions + Object.keys(s.configs ?? {}).length, 0);

describe('createBatches', () => {
  it('fills requests up to 5,000 records, in order, losing no topic', () => {
    const specs = Array.from({ length: 1_000 }, (_, i) => topic(i, 10));
    const batches = createBatches(specs);
    expect(batches.map((b) => b.length)).toEqual([416, 416, 168]); // 12 records per topic
    for (const b of batches) expect(records(b)).toBeLessThanOrEqual(5_000);
    expect(batches.flat()).toEqual(specs);
  });

  it('a topic larger than a request goes alone; none is empty', () => {
    const batches = createBatches([topic(0, 10), topic(1, 7_000), topic(2, 10)]);
    expect(batches.map((b) => b.map((s) => s.topic))).toEqual([['t0'], ['t1'], ['t2']]);
    expect(createBatches([])).toEqual([]);
  });
});
