// Drill (a 3-broker source, RF 3): the source leader of a partition being copied goes away
// (controlled shutdown) and comes back while producers keep writing it. Leadership moves to another
// replica; the copier's fetches fail over to the new leader (a resync re-reads the leaders and
// checks the destination's boundary record against the source's) and it goes on: offsets equal,
// no duplicate, no loss, no partition failed.
import { afterAll, describe, expect, it } from 'vitest';
import { startCluster, stopNode } from '../../scripts/stack/kafka.ts';
import { allPartitions, useMirrorFixture } from '../support/mirror-fixture.ts';
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
    // The source is written by librdkafka (an idempotent producer, acks=all): data kmirror did not write.
    const producer = await LibrdkafkaProducers.start({ topic, transactional: [false], id: randomName('drill') });
    let sent = 0;
    let writing = true;
    const writer = (async () => {
      while (writing) {
        for (let i = 0; i < 200; i++) producer.send({ op: 'send', p: 0, partition: i % partitions, key: `k${sent + i}`, value: `v${sent + i}` });
        producer.send({ op: 'flush', p: 0 });
        await producer.sync();
        sent += 200;
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const stop = new AbortController();
    const copying = f.copy({ topic, partitions: allPartitions(partitions), signal: stop.signal, options: { unreachableAfterMs: 120_000 } });
    await new Promise((r) => setTimeout(r, 2_000));
    const leader = await f.source.leaderOf(topic, 0, true);
    expect(await stopNode('source', leader)).toBe(true);
    await expect.poll(async () => f.source.leaderOf(topic, 0, true), { timeout: 60_000, interval: 500 }).not.toBe(leader);
    await new Promise((r) => setTimeout(r, 3_000));
    await startCluster('source', 3, () => undefined);
    await new Promise((r) => setTimeout(r, 2_000));
    writing = false;
    await writer;
    await producer.close();
    const sourceEnds = await f.source.listOffsets(topic, allPartitions(partitions), 'latest');
    await expect.poll(async () => f.dest.listOffsets(topic, allPartitions(partitions), 'latest'), { timeout: 60_000, interval: 500 }).toEqual(sourceEnds);
    stop.abort();
    const result = await copying;
    expect(result.partitions.map((p) => p.status)).toEqual(['stopped', 'stopped']);
    expect(result.stats.resyncs).toBeGreaterThan(1);
    const verified = await f.verifyAll(topic, allPartitions(partitions));
    for (const v of verified) expect(v).toMatchObject({ equal: true });
    // Every record sent is there once: the idempotent producer lost none and wrote no duplicate on
    // the source, and the copier none on the destination.
    expect(verified.reduce((n, v) => n + v.recordsCompared, 0)).toBe(sent);
  });
});
