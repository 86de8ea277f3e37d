// createBatches (kafka/mirror-topics.ts): CreateTopics requests stay under the KRaft controller's
// limit of metadata records per request (a topic, each partition and each config one record).
import { describe, expect, it } from 'vitest';
import { configChange, createBatches } from '../../kafka/mirror-topics.ts';

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

describe('configChange (config sync)', () => {
  it("sets the source's own configs but the excluded ones, and CreateTime; removes what the source no longer sets; never touches the destination's excluded ones", () => {
    const source = { 'retention.ms': '1000', 'cleanup.policy': 'compact', 'min.insync.replicas': '3', 'message.timestamp.type': 'LogAppendTime' };
    const destination = { 'retention.ms': '500', 'segment.bytes': '1048576', 'min.insync.replicas': '2', 'leader.replication.throttled.replicas': '*', 'message.timestamp.type': 'CreateTime' };
    expect(configChange('orders', source, destination)).toEqual({ topic: 'orders', set: { 'retention.ms': '1000', 'cleanup.policy': 'compact' }, removed: ['segment.bytes'] });
  });

  it('is undefined when the destination is in step, and sets CreateTime where it is missing', () => {
    expect(configChange('t', { 'retention.ms': '1' }, { 'retention.ms': '1', 'message.timestamp.type': 'CreateTime', 'min.insync.replicas': '2' })).toBeUndefined();
    expect(configChange('t', {}, {})).toEqual({ topic: 't', set: { 'message.timestamp.type': 'CreateTime' }, removed: [] });
  });
});
