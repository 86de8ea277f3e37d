// Contract 3 of the copier (gap filling) against sources kmirror did not write: librdkafka
// producers (Python confluent-kafka) with transactions — interleaved committed and aborted ones,
// single-record ones, two transactional producers beside an idempotent one, one left open while
// mirroring — for every codec, and a compacted topic whose cleaner left gaps at its start and
// inside. Each time every partition must verify equal (offsets, keys, values, headers, timestamps
// as read_committed consumers see them) and the destination's aborted records must be gap fillers
// only (verify's aborted-data check), never a record the source aborted.
import { afterAll, describe, expect, it } from 'vitest';
import { IsolationLevel } from '../../kafka/protocol.ts';
import { readCommitted } from '../../kafka/verify.ts';
import { interleaving, LibrdkafkaProducers } from '../support/second-client.ts';
import { allPartitions, fetchBatches, messages, sendAll, useMirrorFixture } from '../support/mirror-fixture.ts';
import { randomName } from '../support/stack.ts';

const fixture = useMirrorFixture();
const running: LibrdkafkaProducers[] = [];
afterAll(async () => {
  await Promise.all(running.map((p) => p.close()));
});

async function producers(topic: string, compression: string): Promise<LibrdkafkaProducers> {
  const p = await LibrdkafkaProducers.start({ topic, transactional: [true, true, false], compression, id: randomName('txn') });
  running.push(p);
  return p;
}

/** Control batches and aborted records the source holds (the gaps the copier had to fill). */
async function sourceGaps(topic: string, partitions: number): Promise<{ markers: number; abortedRecords: number; committed: number }> {
  const f = fixture();
  let markers = 0;
  let abortedRecords = 0;
  let committed = 0;
  for (const partition of allPartitions(partitions)) {
    const end = (await f.source.listOffsets(topic, [partition], 'latest', IsolationLevel.READ_COMMITTED)).get(partition)!;
    const fetched = await fetchBatches(f.source, topic, partition);
    markers += fetched.batches.filter((b) => b.isControl).length;
    for await (const _ of readCommitted(f.source, topic, partition, 0n, end, () => abortedRecords++)) committed++;
  }
  return { markers, abortedRecords, committed };
}

describe('gap filling (contract 3) against a second client', () => {
  for (const codec of ['none', 'gzip', 'snappy', 'lz4', 'zstd']) {
    it(`transactions (${codec}): interleaved commits and aborts, single-record ones, two producers beside an idempotent one`, async () => {
      const f = fixture();
      const seed = Date.now() % 1_000_000;
      console.log(`gap filling ${codec}: seed ${seed}`);
      const topic = await f.topicPair({ partitions: 3 });
      const p = await producers(topic, codec);
      for (const command of interleaving(seed, 60, 3)) p.send(command);
      await p.sync();

      const result = await f.copy({ topic, partitions: allPartitions(3), untilCaughtUp: true });
      expect(result.partitions.map((x) => x.status)).toEqual(['caught-up', 'caught-up', 'caught-up']);
      const gaps = await sourceGaps(topic, 3);
      expect(gaps.markers).toBeGreaterThan(5);
      expect(gaps.abortedRecords).toBeGreaterThan(0);
      expect(result.stats.gapsFilled).toBeGreaterThan(0);
      for (const v of await f.verifyAll(topic, allPartitions(3))) expect(v, `seed ${seed}`).toMatchObject({ equal: true });
      // Destination offsets end where the source's do (markers included).
      const [srcEnd, dstEnd] = await Promise.all([f.source.listOffsets(topic, allPartitions(3), 'latest'), f.dest.listOffsets(topic, allPartitions(3), 'latest')]);
      expect(dstEnd).toEqual(srcEnd);
    });
  }

  it('a transaction open while mirroring: nothing past the source LSO is copied; after its commit the rest follows', async () => {
    const f = fixture();
    const topic = await f.topicPair({ partitions: 1 });
    const p = await producers(topic, 'none');
    p.send({ op: 'begin', p: 0 });
    p.send({ op: 'send', p: 0, partition: 0, key: 'a', value: 'committed-1' });
    p.send({ op: 'commit', p: 0 });
    p.send({ op: 'begin', p: 1 });
    p.send({ op: 'send', p: 1, partition: 0, key: 'b', value: 'open' });
    p.send({ op: 'flush', p: 1 });
    p.send({ op: 'send', p: 2, partition: 0, key: 'c', value: 'plain-after-open' });
    p.send({ op: 'flush', p: 2 });
    await p.sync();
    const lso = (await f.source.listOffsets(topic, [0], 'latest', IsolationLevel.READ_COMMITTED)).get(0)!;
    const first = await f.copy({ topic, partitions: [0], untilCaughtUp: true });
    expect(first.partitions[0]!.nextOffset).toBe(lso);
    expect((await f.dest.listOffsets(topic, [0], 'latest')).get(0)).toBe(lso);

    p.send({ op: 'commit', p: 1 });
    await p.sync();
    await f.copy({ topic, partitions: [0], untilCaughtUp: true });
    const [v] = await f.verifyAll(topic, [0]);
    expect(v).toMatchObject({ equal: true, recordsCompared: 3 });
  });

  it('a compacted topic: the gaps the cleaner left at the log start and inside are filled', async () => {
    const f = fixture();
    // Segments roll every 100 ms and the cleaner may clean at once, so gaps appear within seconds.
    const configs = { 'cleanup.policy': 'compact', 'segment.ms': '100', 'min.cleanable.dirty.ratio': '0.01', 'min.compaction.lag.ms': '0', 'delete.retention.ms': '100' };
    const topic = await f.topicPair({ partitions: 2, configs });
    const producer = await f.producer();
    for (let round = 0; round < 6; round++) {
      // The same 20 keys each round (older values become garbage), plus a unique key. Timestamps
      // of now: a segment rolls by the time its records carry.
      const now = String(Date.now());
      await sendAll(producer, topic, messages(40, 2).map((m, i) => ({ ...m, key: i < 39 ? `key-${i % 20}` : `unique-${round}`, value: `round ${round}`, timestamp: now })));
      await new Promise((r) => setTimeout(r, 300));
    }
    // Wait until the cleaner has left a gap in each partition (a batch after a hole).
    const holes = async (): Promise<number> => {
      let found = 0;
      for (const partition of [0, 1]) {
        const fetched = await fetchBatches(f.source, topic, partition);
        let next = 0n;
        for (const b of fetched.batches) {
          if (b.baseOffset > next || BigInt(b.recordsCount) !== b.lastOffset - b.baseOffset + 1n) {
            found++;
            break;
          }
          next = b.lastOffset + 1n;
        }
      }
      return found;
    };
    const deadline = Date.now() + 60_000;
    while ((await holes()) < 2) {
      if (Date.now() > deadline) throw new Error('the source cleaner left no gap within 60 s');
      // The active segment is never cleaned: keep rolling it.
      await producer.send({ topic, messages: [0, 1].map((partition) => ({ partition, key: 'roll', value: 'r' })) });
      await new Promise((r) => setTimeout(r, 500));
    }
    const result = await f.copy({ topic, partitions: [0, 1], untilCaughtUp: true });
    expect(result.stats.gapsFilled).toBeGreaterThan(0);
    for (const v of await f.verifyAll(topic, [0, 1])) expect(v).toMatchObject({ equal: true });
    const [srcEnd, dstEnd] = await Promise.all([f.source.listOffsets(topic, [0, 1], 'latest'), f.dest.listOffsets(topic, [0, 1], 'latest')]);
    expect(dstEnd).toEqual(srcEnd);
  });
});
