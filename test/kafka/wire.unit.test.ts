import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { asRawBatch, crcValid, decodeRecords, encodeBatch, isContiguous, nextSequence, restampBatch, splitBatches, type RecordToEncode } from '../../kafka/wire.ts';

const stamp = { producerId: 42n, producerEpoch: 3, baseSequence: 7 };

const recordArb: fc.Arbitrary<RecordToEncode> = fc.record({
  timestamp: fc.bigInt({ min: 0n, max: 2n ** 42n }),
  key: fc.option(fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)), { nil: null }),
  value: fc.option(fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)), { nil: null }),
  headers: fc.array(
    fc.record({ key: fc.string({ maxLength: 10 }), value: fc.option(fc.uint8Array({ maxLength: 20 }).map((a) => Buffer.from(a)), { nil: null }) }),
    { maxLength: 4 },
  ),
});

describe('RecordBatch v2', () => {
  it('encodes and decodes any records losslessly (keys, null values, header order and nulls, timestamps)', () => {
    fc.assert(
      fc.property(fc.array(recordArb, { minLength: 1, maxLength: 30 }), (records) => {
        const batch = asRawBatch(encodeBatch(records, stamp));
        expect(crcValid(batch)).toBe(true);
        expect(isContiguous(batch)).toBe(true);
        expect(batch.lastOffset).toBe(BigInt(records.length - 1));
        const decoded = decodeRecords(batch);
        expect(decoded.map((r) => ({ timestamp: r.timestamp, key: r.key, value: r.value, headers: r.headers }))).toEqual(
          records.map((r) => ({ ...r, headers: [...r.headers] })),
        );
        expect(decoded.map((r) => r.offset)).toEqual(records.map((_, i) => BigInt(i)));
      }),
    );
  });

  it('restamping replaces producer id, epoch and sequence, keeps records, and recomputes the CRC', () => {
    const original = asRawBatch(encodeBatch([{ timestamp: 5n, key: null, value: Buffer.from('v'), headers: [] }], stamp));
    const restamped = asRawBatch(Buffer.concat(restampBatch(original, { producerId: 99n, producerEpoch: 1, baseSequence: 1000 })));
    expect(restamped.producerId).toBe(99n);
    expect(restamped.bytes.readInt32BE(53)).toBe(1000);
    expect(crcValid(restamped)).toBe(true);
    expect(decodeRecords(restamped)).toEqual(decodeRecords(original));
    // a flipped byte anywhere after the CRC field is detected
    const corrupt = Buffer.from(restamped.bytes);
    corrupt[corrupt.length - 1]! ^= 0xff;
    expect(crcValid(asRawBatch(corrupt))).toBe(false);
  });

  it('drops a trailing partial batch and splits consecutive ones', () => {
    const a = encodeBatch([{ timestamp: 1n, key: null, value: Buffer.from('a'), headers: [] }], stamp);
    const b = encodeBatch([{ timestamp: 2n, key: null, value: Buffer.from('b'), headers: [] }], stamp);
    expect(splitBatches(Buffer.concat([a, b])).length).toBe(2);
    expect(splitBatches(Buffer.concat([a, b.subarray(0, b.length - 1)])).length).toBe(1);
  });

  it('detects a compaction hole inside a batch (records count vs offset span)', () => {
    const bytes = encodeBatch([{ timestamp: 1n, key: null, value: null, headers: [] }, { timestamp: 1n, key: null, value: null, headers: [] }], stamp);
    bytes.writeInt32BE(5, 23); // lastOffsetDelta 5 with 2 records: offsets 1..4 compacted away
    expect(isContiguous(asRawBatch(bytes))).toBe(false);
  });

  it('wraps producer sequence numbers at 2^31', () => {
    expect(nextSequence(2 ** 31 - 2, 3)).toBe(1);
    expect(nextSequence(10, 5)).toBe(15);
  });
});
