// Fidelity against sources kmirror did not write (librdkafka producers), for every codec:
//  - a LogAppendTime source: consumers of the destination see the same timestamp values (type
//    CreateTime: stock Kafka cannot hold both, as the first test shows);
//  - a source whose log start falls inside a compressed batch (retention or DeleteRecords cut it):
//    the batch's tail is copied, nothing before the cut, every offset in place.
import { crc32c } from '@node-rs/crc32';
import { afterAll, describe, expect, it } from 'vitest';
import { MIRROR_TOPIC_CONFIGS } from '../../kafka/mirror-topics.ts';
import { decodeRecords, encodeBatch } from '../../kafka/wire.ts';
import { LibrdkafkaProducers } from '../support/second-client.ts';
import { fetchBatches, useMirrorFixture } from '../support/mirror-fixture.ts';
import { randomName } from '../support/stack.ts';

const fixture = useMirrorFixture();
const running: LibrdkafkaProducers[] = [];
afterAll(async () => {
  await Promise.all(running.map((p) => p.close()));
});

const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;

/** 300 records in batches of the codec, from librdkafka (idempotent producer 0). */
async function fill(topic: string, codec: string): Promise<void> {
  const p = await LibrdkafkaProducers.start({ topic, transactional: [false], compression: codec, id: randomName('fid') });
  running.push(p);
  for (let i = 0; i < 300; i++) p.send({ op: 'send', p: 0, partition: 0, key: `k${i}`, value: `${codec} value ${i} `.repeat(5), headers: [['i', String(i)]] });
  p.send({ op: 'flush', p: 0 });
  await p.sync();
}

describe('what stock Kafka does with LogAppendTime batches from a client', () => {
  it('a CreateTime topic stores one as CreateTime; a LogAppendTime topic refuses one, and stamps its own clock on any other', async () => {
    const f = fixture();
    const createTime = await f.topicPair({ configs: { 'message.timestamp.type': 'CreateTime' } });
    const appendTime = await f.topicPair({ configs: { 'message.timestamp.type': 'LogAppendTime' } });
    const sent = BigInt(Date.now() - 60_000);
    const plain = (): Buffer => encodeBatch([{ timestamp: sent, key: null, value: Buffer.from('x'), headers: [] }], { producerId: -1n, producerEpoch: -1, baseSequence: -1 });
    const withAppendTime = (): Buffer => {
      const batch = plain();
      batch.writeInt16BE(0x08, 21); // the LogAppendTime attribute…
      batch.writeUInt32BE(crc32c(batch.subarray(21)), 17); // …and the CRC over it
      return batch;
    };
    const produce = async (topic: string, batch: Buffer) => (await f.dest.produce({ leader: await f.dest.leaderOf(topic, 0), partitions: [{ topic, partition: 0, batch }] }))[0]!;

    expect((await produce(createTime, withAppendTime())).error).toBeUndefined();
    const [stored] = (await fetchBatches(f.dest, createTime, 0)).batches;
    expect(stored).toMatchObject({ logAppendTime: false, maxTimestamp: sent });

    expect((await produce(appendTime, withAppendTime())).error?.type).toBe('INVALID_TIMESTAMP');
    expect((await produce(appendTime, plain())).error).toBeUndefined();
    const [stamped] = (await fetchBatches(f.dest, appendTime, 0)).batches;
    expect(stamped!.logAppendTime).toBe(true);
    expect(stamped!.maxTimestamp).toBeGreaterThan(sent + 30_000n);
  });
});

describe('fidelity for every codec (librdkafka source)', () => {
  for (const codec of CODECS) {
    it(`a LogAppendTime source (${codec}): the destination's records carry the source's append times`, async () => {
      const f = fixture();
      const topic = await f.topicPair({ configs: { 'message.timestamp.type': 'LogAppendTime' }, destConfigs: { ...MIRROR_TOPIC_CONFIGS } });
      await fill(topic, codec);
      const source = await fetchBatches(f.source, topic, 0);
      expect(source.batches.every((b) => b.logAppendTime && (codec === 'none' || b.codec !== 0))).toBe(true);
      await new Promise((r) => setTimeout(r, 50)); // so a destination clock stamp would differ
      const result = await f.copy({ topic, partitions: [0], untilCaughtUp: true });
      expect(result.partitions[0]!.nextOffset).toBe(300n);
      expect(await f.verifyAll(topic, [0])).toMatchObject([{ equal: true, recordsCompared: 300 }]);
      const want = source.batches.flatMap((b) => decodeRecords(b).map((r) => r.timestamp));
      const got = (await fetchBatches(f.dest, topic, 0)).batches.flatMap((b) => decodeRecords(b).map((r) => r.timestamp));
      expect(got).toEqual(want);
    });

    it(`a log start inside a ${codec} batch: the batch's tail is copied, every offset in place`, async () => {
      const f = fixture();
      const topic = await f.topicPair();
      await fill(topic, codec);
      const first = (await fetchBatches(f.source, topic, 0)).batches[0]!;
      expect(first.recordsCount).toBeGreaterThan(2);
      const cut = first.baseOffset + BigInt(Math.floor(first.recordsCount / 2));
      await f.source.deleteRecords(topic, new Map([[0, cut]]));
      const result = await f.copy({ topic, partitions: [0], untilCaughtUp: true });
      expect(result.partitions[0]).toMatchObject({ status: 'caught-up', nextOffset: 300n });
      expect(await f.dest.listOffsets(topic, [0], 'earliest')).toEqual(new Map([[0, cut]]));
      expect(await f.verifyAll(topic, [0])).toMatchObject([{ equal: true, recordsCompared: Number(300n - cut) }]);
    });
  }
});
