// Seeking by time on a destination whose gaps were filled in a catch-up (issue #10, item 10): the
// destination broker's own offsetsForTimes answer can be earlier than the source's (each filled
// gap's ABORT marker carries the destination coordinator's clock at fill time), while
// offsetsForTime answers, from the destination alone, the first committed record at or after the
// time — what the source's committed records say, computed here independently.
import { afterAll, describe, expect, it } from 'vitest';
import { IsolationLevel } from '../../kafka/protocol.ts';
import { offsetsForTime } from '../../kafka/time-lookup.ts';
import { readCommitted } from '../../kafka/verify.ts';
import { interleaving, LibrdkafkaProducers } from '../support/second-client.ts';
import { allPartitions, useMirrorFixture } from '../support/mirror-fixture.ts';
import { randomName } from '../support/stack.ts';

const fixture = useMirrorFixture();
const running: LibrdkafkaProducers[] = [];
afterAll(async () => {
  await Promise.all(running.map((p) => p.close()));
});

describe('offsetsForTime on a destination with filled gaps', () => {
  it('answers the first committed record at or after each time, where the destination broker answers an earlier ABORT marker', async () => {
    const f = fixture();
    const seed = process.env.KMIRROR_TEST_SEED ? Number(process.env.KMIRROR_TEST_SEED) : Date.now() % 1_000_000;
    console.log(`offsetsForTime: seed ${seed}`);
    const partitions = allPartitions(2);
    const topic = await f.topicPair({ partitions: 2 });
    const producers = await LibrdkafkaProducers.start({ topic, transactional: [true, true, false], id: randomName('time') });
    running.push(producers);
    for (const command of interleaving(seed, 40, 2)) producers.send(command);
    await producers.sync();
    await producers.markersWritten(f.source, topic, partitions);
    // A catch-up: the copy (and every marker it has the destination write) comes later than every
    // source record.
    await new Promise((r) => setTimeout(r, 1_500));
    const copied = await f.copy({ topic, partitions, untilCaughtUp: true });
    expect(copied.stats.gapsFilled, `seed ${seed}`).toBeGreaterThan(0);

    // The source's committed records, in log order: the expected answers.
    const committed = new Map<number, { offset: bigint; timestamp: bigint }[]>();
    for (const p of partitions) {
      const end = (await f.source.listOffsets(topic, [p], 'latest', IsolationLevel.READ_COMMITTED)).get(p)!;
      const records: { offset: bigint; timestamp: bigint }[] = [];
      for await (const r of readCommitted(f.source, topic, p, 0n, end)) records.push({ offset: r.offset, timestamp: r.timestamp });
      committed.set(p, records);
    }
    const times = [...new Set([...committed.values()].flat().map((r) => r.timestamp))].sort((a, b) => (a < b ? -1 : 1));
    const probes = [0n, ...times, times.at(-1)! + 1n];
    const destEnds = await f.dest.listOffsets(topic, partitions, 'latest', IsolationLevel.READ_COMMITTED);
    let earlierBrokerAnswers = 0;
    for (const at of probes) {
      const answers = await offsetsForTime(f.dest, new Map([[topic, partitions]]), at);
      for (const a of answers) {
        const expected = committed.get(a.partition)!.find((r) => r.timestamp >= at)?.offset ?? null;
        expect(a.offset, `partition ${a.partition} at ${at} (seed ${seed})`).toBe(expected);
        expect(a.end).toBe(destEnds.get(a.partition));
        // The broker's answer is never later than the first committed record at or after the time.
        if (expected !== null) {
          expect(a.broker, `partition ${a.partition} at ${at}`).not.toBeNull();
          expect(a.broker! <= expected).toBe(true);
          if (a.broker! < expected) earlierBrokerAnswers++;
        }
      }
    }
    // What this lookup exists for: the destination broker alone answered earlier offsets.
    expect(earlierBrokerAnswers, `seed ${seed}`).toBeGreaterThan(0);
  });
});
