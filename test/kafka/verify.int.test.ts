// The oracle the tests and the demo trust (kafka/verify.ts) catches every kind of difference: a
// changed key, value, header or timestamp, a missing and an extra record, a destination starting
// above the source (unless the destination's own retention explains it: then compared from its start), a source-aborted record's data in the destination's aborted transactions; and its read_committed view keeps a producer's committed transaction that
// follows one of its aborted ones.
import { beforeEach, describe, expect, it } from 'vitest';
import type { Message } from 'kafkajs';
import { readCommitted, verifyPartition } from '../../kafka/verify.ts';
import { deletesByRetention } from '../../kafka/mirror-topics.ts';
import { useMirrorFixture, type MirrorFixture } from '../support/mirror-fixture.ts';
import { randomName } from '../support/stack.ts';
import { isKmirrorError } from '../../domain/errors.ts';

const fixture = useMirrorFixture();
let f: MirrorFixture;
beforeEach(() => {
  f = fixture();
});

const base = Date.now() - 60_000;
const records = (n: number): Message[] => Array.from({ length: n }, (_, i) => ({ key: `k${i}`, value: `v${i}`, headers: { h: `x${i}` }, timestamp: String(base + i) }));

/** The same records on the source; on the destination with `change` applied. */
async function pair(change: (messages: Message[]) => Message[]): Promise<string> {
  const topic = await f.topicPair();
  const src = f.sourceKafka.producer();
  const dst = f.destKafka.producer();
  await Promise.all([src.connect(), dst.connect()]);
  await src.send({ topic, messages: records(10) });
  await dst.send({ topic, messages: change(records(10)) });
  await Promise.all([src.disconnect(), dst.disconnect()]);
  return topic;
}

const at = (i: number, patch: Partial<Message>) => (m: Message[]) => m.map((r, j) => (j === i ? { ...r, ...patch } : r));

describe('verifyPartition', () => {
  it('equal logs compare equal, record by record', async () => {
    const topic = await pair((m) => m);
    expect(await verifyPartition(f.source, f.dest, topic, 0)).toMatchObject({ equal: true, recordsCompared: 10, from: '0', to: '10' });
  });

  it.each([
    ['key', at(5, { key: 'other' })],
    ['value', at(5, { value: 'other' })],
    ['headers', at(5, { headers: { h: 'other' } })],
    ['timestamp', at(5, { timestamp: String(base + 999) })],
  ] as const)('catches a changed %s and names the offset', async (field, change) => {
    const topic = await pair(change);
    expect(await verifyPartition(f.source, f.dest, topic, 0)).toMatchObject({ equal: false, recordsCompared: 5, firstMismatch: { field, offset: '5' } });
  });

  it('catches a missing record (the destination ends early)', async () => {
    const topic = await pair((m) => m.slice(0, 9));
    expect(await verifyPartition(f.source, f.dest, topic, 0)).toMatchObject({ equal: false, recordsCompared: 9, firstMismatch: { field: 'missing-on-destination', offset: '9' } });
  });

  it('catches an extra record (the destination is longer than the source)', async () => {
    const topic = await pair((m) => [...m, { key: 'extra', value: 'x', timestamp: String(base + 10) }]);
    expect(await verifyPartition(f.source, f.dest, topic, 0)).toMatchObject({ equal: false, recordsCompared: 10, firstMismatch: { field: 'missing-on-source', offset: '10' } });
  });

  it('catches a record the source aborted written into a destination transaction (aborted there too)', async () => {
    // Both logs: an aborted transaction of one record, its marker, a plain record. Equal for
    // read_committed consumers — but a read_uncommitted consumer of the destination would see the
    // aborted record's data, which a mirror must never write (gap fillers only).
    const topic = await f.topicPair();
    for (const kafka of [f.sourceKafka, f.destKafka]) {
      const txn = kafka.producer({ transactionalId: randomName('txn'), idempotent: true, maxInFlightRequests: 1 });
      await txn.connect();
      const t = await txn.transaction();
      await t.send({ topic, messages: [{ key: 'k', value: 'aborted-data', timestamp: String(base) }] });
      await t.abort();
      await txn.disconnect();
    }
    await new Promise((r) => setTimeout(r, 500)); // the markers are written after abort() returns
    const plain = [{ key: 'p', value: 'plain', timestamp: String(base + 1) }];
    const [src, dst] = [f.sourceKafka.producer(), f.destKafka.producer()];
    await Promise.all([src.connect(), dst.connect()]);
    await Promise.all([src.send({ topic, messages: plain }), dst.send({ topic, messages: plain })]);
    await Promise.all([src.disconnect(), dst.disconnect()]);
    expect(await verifyPartition(f.source, f.dest, topic, 0)).toMatchObject({ equal: false, firstMismatch: { field: 'aborted-data-on-destination', offset: '0' } });
  });

  it('catches a destination that starts above the source', async () => {
    const topic = await pair((m) => m);
    await f.dest.deleteRecords(topic, new Map([[0, 3n]]));
    expect(await verifyPartition(f.source, f.dest, topic, 0)).toMatchObject({ equal: false, firstMismatch: { field: 'log-start', source: '0', destination: '3' } });
  });

  it("where the destination's own retention explains a later start, compares from it, says what it left out, and still catches a difference after it", async () => {
    // The records are a minute old: a 30 s time limit explains their deletion, a day does not.
    const minute = { ms: 30_000n, bySize: false };
    const same = await pair((m) => m);
    await f.dest.deleteRecords(same, new Map([[0, 3n]]));
    expect(await verifyPartition(f.source, f.dest, same, 0, undefined, { destinationRetention: minute })).toEqual({
      partition: 0,
      equal: true,
      recordsCompared: 7,
      from: '3',
      to: '10',
      removedByDestinationRetention: { from: '0', to: '3' },
    });
    expect(await verifyPartition(f.source, f.dest, same, 0, undefined, { destinationRetention: { ms: 86_400_000n, bySize: false } })).toMatchObject({
      equal: false,
      firstMismatch: { field: 'log-start', source: '0', destination: '3' },
    });
    // A size limit may remove any prefix.
    expect(await verifyPartition(f.source, f.dest, same, 0, undefined, { destinationRetention: { ms: null, bySize: true } })).toMatchObject({ equal: true, from: '3' });
    const changed = await pair(at(5, { value: 'changed' }));
    await f.dest.deleteRecords(changed, new Map([[0, 3n]]));
    expect(await verifyPartition(f.source, f.dest, changed, 0, undefined, { destinationRetention: minute })).toMatchObject({
      equal: false,
      recordsCompared: 2,
      firstMismatch: { field: 'value', offset: '5' },
      removedByDestinationRetention: { from: '0', to: '3' },
    });
  });
});

describe('deletesByRetention', () => {
  it('names the topics whose cleanup policy deletes with a time or size limit, with their limits', async () => {
    const topics = {
      byDefault: await f.topicPair(),
      compactOnly: await f.topicPair({ configs: { 'cleanup.policy': 'compact' } }),
      unlimited: await f.topicPair({ configs: { 'retention.ms': '-1', 'retention.bytes': '-1' } }),
      sizeOnly: await f.topicPair({ configs: { 'retention.ms': '-1', 'retention.bytes': '1073741824' } }),
      compactAndDelete: await f.topicPair({ configs: { 'cleanup.policy': 'compact,delete' } }),
    };
    const retaining = await deletesByRetention(f.destAdmin, Object.values(topics));
    expect(Object.fromEntries(Object.entries(topics).map(([k, t]) => [k, retaining.get(t) ?? null]))).toEqual({
      byDefault: { ms: 604_800_000n, bySize: false },
      compactOnly: null,
      unlimited: null,
      sizeOnly: { ms: null, bySize: true },
      compactAndDelete: { ms: 604_800_000n, bySize: false },
    });
  });
});

describe('readCommitted', () => {
  it('drops an aborted transaction and keeps the same producer\'s committed one after it', async () => {
    const topic = await f.topicPair();
    const txn = f.sourceKafka.producer({ transactionalId: randomName('txn'), idempotent: true, maxInFlightRequests: 1 });
    await txn.connect();
    const aborted = await txn.transaction();
    await aborted.send({ topic, messages: [{ value: 'gone-1' }, { value: 'gone-2' }] });
    await aborted.abort();
    const committed = await txn.transaction();
    await committed.send({ topic, messages: [{ value: 'kept-1' }, { value: 'kept-2' }] });
    await committed.commit();
    await txn.disconnect();
    const end = (await f.source.listOffsets(topic, [0], 'latest')).get(0)!;
    const values: string[] = [];
    for await (const r of readCommitted(f.source, topic, 0, 0n, end)) values.push(r.value!.toString());
    expect(values).toEqual(['kept-1', 'kept-2']);
  });

  it('a read that finds nothing more below `to` fails with OFFSET_DIVERGENCE naming the offset, never ends quietly', async () => {
    const topic = await pair((m) => m);
    const read: number[] = [];
    let caught: unknown;
    try {
      for await (const r of readCommitted(f.source, topic, 0, 0n, 12n)) read.push(Number(r.offset));
    } catch (err) {
      caught = err;
    }
    // Every record it holds, then the error: two truncated reads cannot compare equal.
    expect(read).toEqual(Array.from({ length: 10 }, (_, i) => i));
    expect(isKmirrorError(caught, 'OFFSET_DIVERGENCE')).toBe(true);
    expect((caught as Error).message).toMatch(/holds no record at or after offset 10, below 12 \(its log ends at 10 for read_committed\)/);
  });
});
