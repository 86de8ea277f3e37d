// Drill (a 3-broker destination): the destination leader of a partition being copied goes away
// (controlled shutdown) and comes back while the source is written. Leadership moves to another
// replica; the copier re-reads the leaders, resyncs from the destination end and goes on: offsets
// equal, no duplicate, no loss, no partition failed.
import { afterAll, describe, expect, it } from 'vitest';
import { startCluster, stopNode } from '../../scripts/stack/kafka.ts';
import { allPartitions, messages, sendAll, useMirrorFixture } from '../support/mirror-fixture.ts';

const fixture = useMirrorFixture();
afterAll(async () => {
  await startCluster('dest', 3, () => undefined);
});

describe('a destination leader change mid-copy', () => {
  it('the copier follows the new leader: the destination verifies equal, nothing failed', async () => {
    const f = fixture();
    const partitions = 2;
    const topic = await f.topicPair({ partitions, destReplicationFactor: 3 });
    const producer = await f.producer();
    let sent = 0;
    let writing = true;
    const writer = (async () => {
      while (writing) {
        await sendAll(producer, topic, messages(200, partitions, { from: sent }));
        sent += 200;
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const stop = new AbortController();
    const copying = f.copy({ topic, partitions: allPartitions(partitions), signal: stop.signal, options: { unreachableAfterMs: 120_000 } });
    await new Promise((r) => setTimeout(r, 2_000));
    const leader = await f.dest.leaderOf(topic, 0, true);
    expect(await stopNode('dest', leader)).toBe(true);
    await expect.poll(async () => f.dest.leaderOf(topic, 0, true), { timeout: 60_000, interval: 500 }).not.toBe(leader);
    await new Promise((r) => setTimeout(r, 3_000));
    await startCluster('dest', 3, () => undefined);
    await new Promise((r) => setTimeout(r, 2_000));
    writing = false;
    await writer;
    const sourceEnds = await f.source.listOffsets(topic, allPartitions(partitions), 'latest');
    await expect.poll(async () => f.dest.listOffsets(topic, allPartitions(partitions), 'latest'), { timeout: 60_000, interval: 500 }).toEqual(sourceEnds);
    stop.abort();
    const result = await copying;
    expect(result.partitions.map((p) => p.status)).toEqual(['stopped', 'stopped']);
    expect(result.stats.resyncs).toBeGreaterThan(1);
    const verified = await f.verifyAll(topic, allPartitions(partitions));
    for (const v of verified) expect(v).toMatchObject({ equal: true });
    expect(verified.reduce((n, v) => n + v.recordsCompared, 0)).toBe(sent);
  });
});
