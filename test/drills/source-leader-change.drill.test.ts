// Drill (a 3-broker source, RF 3): the source leader of a partition being copied goes away
// (controlled shutdown) and comes back while a producer keeps writing it. Leadership moves to
// another replica; the copier's fetches fail over to the new leader (a resync re-reads the leaders
// and checks the destination's boundary record against the source's) and it goes on: offsets
// equal, no duplicate, no loss, no partition failed.
//
// The writer is librdkafka (an idempotent producer, acks=all): data kmirror did not write. (With
// kafkajs' idempotent producer the source itself lost 100 acknowledged records in 2 of 2 runs of
// this drill — the mirror still matched the source — so kafkajs is not the writer here.)
import { afterAll, describe, expect, it } from 'vitest';
import { startCluster } from '../../scripts/stack/kafka.ts';
import { copyThroughLeaderChange, keepWriting } from '../support/leader-change.ts';
import { useMirrorFixture } from '../support/mirror-fixture.ts';
import { LibrdkafkaProducers } from '../support/second-client.ts';
import { randomName } from '../support/stack.ts';

const fixture = useMirrorFixture();
afterAll(async () => {
  await startCluster('source', 3, () => undefined);
});

describe('a source leader change mid-copy', () => {
  it('the copier follows the new source leader: the destination verifies equal, nothing failed', async () => {
    const f = fixture();
    expect((await f.sourceAdmin.describeCluster()).brokers.length, 'the drill tier runs on a 3-broker source (npm run test:drill)').toBe(3);
    const partitions = 2;
    const topic = await f.topicPair({ partitions, sourceReplicationFactor: 3, configs: { 'min.insync.replicas': '2' } });
    expect((await f.sourceAdmin.fetchTopicMetadata({ topics: [topic] })).topics[0]!.partitions.map((p) => p.replicas.length)).toEqual([3, 3]);
    const producer = await LibrdkafkaProducers.start({ topic, transactional: [false], id: randomName('drill') });
    try {
      const writer = keepWriting(async (sent) => {
        for (let i = 0; i < 200; i++) producer.send({ op: 'send', p: 0, partition: i % partitions, key: `k${sent + i}`, value: `v${sent + i}` });
        producer.send({ op: 'flush', p: 0 });
        await producer.sync();
        return 200;
      });
      await copyThroughLeaderChange(f, 'source', topic, partitions, writer);
    } finally {
      await producer.close();
    }
  });
});
