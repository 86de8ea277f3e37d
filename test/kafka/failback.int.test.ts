// Archiving a failback's divergent tail (kafka/failback.ts) on the stack's source cluster: the
// archive keeps its records forever, an attempt cut short is resumed without duplicates, and an
// earlier attempt still running is fenced (what it left open is never visible).
import { ConfigResourceTypes } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deleteTopicsAndWait } from '../../kafka/admin.ts';
import { ARCHIVE_HEADERS, archiveDivergentTails, archiveTransactionalId } from '../../kafka/failback.ts';
import { readCommitted } from '../../kafka/verify.ts';
import { encodeBatch } from '../../kafka/wire.ts';
import { messages, sendAll, useMirrorFixture, type MirrorFixture } from '../support/mirror-fixture.ts';
import { randomName } from '../support/stack.ts';

const fixture = useMirrorFixture();
let f: MirrorFixture;
let archives: string[] = [];
beforeEach(() => {
  f = fixture();
  archives = [];
});
afterEach(async () => deleteTopicsAndWait(f.sourceAdmin, archives));

/** The archive partition's committed records as `key@original offset`. */
async function archived(archive: string, partition: number): Promise<string[]> {
  const end = (await f.source.listOffsets(archive, [partition], 'latest')).get(partition)!;
  const out: string[] = [];
  for await (const r of readCommitted(f.source, archive, partition, 0n, end)) out.push(`${r.key}@${r.headers.find((h) => h.key === ARCHIVE_HEADERS.offset)?.value}`);
  return out;
}

describe('archiveDivergentTails', () => {
  it('resumes after the last archived record (no duplicate), keeps the archive forever, and fences an earlier attempt', async () => {
    const topic = await f.topicPair({ partitions: 2 });
    const producer = await f.producer();
    await sendAll(producer, topic, messages(60, 2)); // 30 per partition
    const archive = `${topic}.kmirror-divergent-${randomName('t')}`;
    archives.push(archive);
    const expected = (partition: number, from: number, to: number) =>
      messages(60, 2)
        .filter((m) => m.partition === partition)
        .slice(from, to)
        .map((m, i) => `${m.key}@${from + i}`);

    // An attempt that archived [0, 10) of partition 0 and then died.
    expect(await archiveDivergentTails(f.source, f.sourceAdmin, topic, 2, [{ partition: 0, from: 0n, to: 10n }], archive)).toEqual(new Map([[0, 10]]));
    // An attempt still running (a timed-out one) holds an open transaction with a record in it.
    const zombie = await f.source.initTransactions(archiveTransactionalId(archive), 60_000);
    await f.source.addPartitionsToTxn(zombie, archive, [1]);
    const stray = encodeBatch([{ timestamp: BigInt(Date.now()), key: Buffer.from('zombie'), value: null, headers: [] }], { producerId: zombie.producerId, producerEpoch: zombie.producerEpoch, baseSequence: 0, transactional: true });
    const [open] = await f.source.produce({ leader: await f.source.leaderOf(archive, 1), partitions: [{ topic: archive, partition: 1, batch: stray }], transactionalId: zombie.transactionalId });
    expect(open?.error).toBeUndefined();

    // The retry: the whole tails. It fences the zombie, aborting its transaction, and goes on after offset 9.
    let progress = 0;
    const counts = await archiveDivergentTails(f.source, f.sourceAdmin, topic, 2, [{ partition: 0, from: 0n, to: 30n }, { partition: 1, from: 5n, to: 30n }], archive, (n) => (progress = n));
    expect(counts).toEqual(new Map([[0, 30], [1, 25]]));
    expect(progress).toBe(20 + 25); // what this attempt archived
    expect(await archived(archive, 0)).toEqual(expected(0, 0, 30));
    expect(await archived(archive, 1)).toEqual(expected(1, 5, 30)); // no 'zombie'
    const [late] = await f.source.produce({ leader: await f.source.leaderOf(archive, 1), partitions: [{ topic: archive, partition: 1, batch: stray }], transactionalId: zombie.transactionalId });
    expect(late?.error?.type).toMatch(/PRODUCER_FENCED|INVALID_PRODUCER_EPOCH|INVALID_TXN_STATE/);

    // Once more: nothing is added.
    expect(await archiveDivergentTails(f.source, f.sourceAdmin, topic, 2, [{ partition: 0, from: 0n, to: 30n }, { partition: 1, from: 5n, to: 30n }], archive)).toEqual(new Map([[0, 30], [1, 25]]));
    expect((await archived(archive, 0)).length).toBe(30);

    const configs = await f.sourceAdmin.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: archive, configNames: ['retention.ms', 'retention.bytes'] }], includeSynonyms: false });
    expect(Object.fromEntries(configs.resources[0]!.configEntries.map((e) => [e.configName, e.configValue]))).toEqual({ 'retention.ms': '-1', 'retention.bytes': '-1' });
  });
});
