// Drill (a 3-broker destination): a follower of a partition being copied stops answering without
// leaving the ISR (SIGSTOP: a long GC pause, a stalled disk) for longer than the copier's produce
// timeout. The leader has appended the copier's batch but cannot acknowledge it (acks=all), and its
// high watermark — all a client can read of the destination's end — stays below the batch. The
// copier's resync must not send those records again at the end it reads: the batch would be
// appended a second time once the follower is back, at the wrong offsets. Offsets equal, every
// record once, no partition failed. And the same stall across a change of owner: a new copier (a
// fresh producer id, as after a worker's death and a lease takeover) must not copy at the end it
// reads while its predecessor's batch waits there for the follower.
import { afterAll, describe, expect, it } from 'vitest';
import { pauseNode, startCluster } from '../../scripts/stack/kafka.ts';
import { finishAndVerify, keepWriting } from '../support/leader-change.ts';
import { allPartitions, messages, sendAll, useMirrorFixture } from '../support/mirror-fixture.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fixture = useMirrorFixture();
let frozen: number | undefined;
afterAll(async () => {
  if (frozen !== undefined) pauseNode('dest', frozen, false);
  await startCluster('dest', 3, () => undefined);
});

describe('a destination follower that stalls mid-copy', () => {
  it('no record is written twice: the destination verifies equal, nothing failed', async () => {
    const f = fixture();
    const partitions = 2;
    const all = allPartitions(partitions);
    const topic = await f.topicPair({ partitions, destReplicationFactor: 3 });
    const producer = await f.producer();
    const writer = keepWriting(async (sent) => {
      await sendAll(producer, topic, messages(200, partitions, { from: sent }));
      return 200;
    });
    const stop = new AbortController();
    const copying = f.copy({ topic, partitions: all, signal: stop.signal, options: { unreachableAfterMs: 120_000 } });
    await sleep(2_000);
    // A follower of partition 0 that leads none of the topic's partitions (every request to a
    // frozen leader would hang instead): the leader goes on answering, the follower does not.
    const meta = await f.dest.partitions(topic);
    const leaders = new Set(meta.map((p) => p.leader));
    frozen = meta[0]!.replicas.find((r) => !leaders.has(r));
    expect(frozen, `a replica leading nothing (leaders ${[...leaders]})`).toBeDefined();
    expect(pauseNode('dest', frozen!, true)).toBe(true);
    await sleep(8_000); // several produce timeouts (2 s in the tests), well inside replica.lag.time.max.ms (30 s)
    pauseNode('dest', frozen!, false);
    frozen = undefined;
    await sleep(2_000);
    const result = await finishAndVerify(f, topic, partitions, writer, { stop, copying });
    console.log(`slow follower: ${result.stats.resyncs} resyncs, ${result.stats.producerKept} kept the producer id`);
    // The resyncs the stall caused went on with the producer id whose batches were in flight.
    expect(result.stats.producerKept).toBeGreaterThan(0);
  });

  it('a new owner waits for the batch its predecessor left with the stalled follower, then goes on after it', async () => {
    const f = fixture();
    const partitions = 1;
    const all = allPartitions(partitions);
    const topic = await f.topicPair({ partitions, destReplicationFactor: 3 });
    const producer = await f.producer();
    await sendAll(producer, topic, messages(500, partitions));
    const first = new AbortController();
    const firstCopy = f.copy({ topic, partitions: all, signal: first.signal, options: { unreachableAfterMs: 120_000 } });
    await expect.poll(async () => (await f.dest.listOffsets(topic, all, 'latest')).get(0), { timeout: 30_000, interval: 200 }).toBe(500n);
    const meta = await f.dest.partitions(topic);
    // The follower with the larger id: metadata requests go to the lowest-numbered broker first,
    // and one stopped there would hold every copier's resync, not only the acknowledgement.
    frozen = Math.max(...meta[0]!.replicas.filter((r) => r !== meta[0]!.leader));
    expect(pauseNode('dest', frozen!, true)).toBe(true);
    await sendAll(producer, topic, messages(1_500, partitions, { from: 500 }));
    // The first owner's batches reach the leader; their acknowledgement never comes back.
    await expect.poll(async () => (await f.dest.logEnds(new Map([[topic, all]]))).get(topic)!.get(0)!.logEnd, { timeout: 30_000, interval: 200 }).toBeGreaterThan(500n);
    first.abort();
    await firstCopy;
    const held = (await f.dest.logEnds(new Map([[topic, all]]))).get(topic)!.get(0)!;
    expect(held.highWatermark).toBe(500n);
    expect(held.logEnd).toBeGreaterThan(500n);
    // The next owner starts while the batch still waits for the follower.
    const next = new AbortController();
    const nextCopy = f.copy({ topic, partitions: all, signal: next.signal, options: { unreachableAfterMs: 120_000 } });
    // (Its lease may first wait out the predecessor's: ttl 3 s + grace 2.5 s in the tests.)
    await sleep(9_000);
    pauseNode('dest', frozen!, false);
    frozen = undefined;
    const result = await finishAndVerify(f, topic, partitions, { stop: async () => 2_000 }, { stop: next, copying: nextCopy });
    console.log(`takeover over a stalled follower: waited ${result.stats.unacknowledgedWaits} time(s), ${result.stats.resyncs} resyncs`);
    expect(result.stats.unacknowledgedWaits).toBe(1);
  });
});
