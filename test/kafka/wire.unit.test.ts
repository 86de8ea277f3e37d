import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { crc32c } from '@node-rs/crc32';
import { compressFrameSync as lz4CompressFrame } from 'lz4-napi';
import { gzipSync, zstdCompressSync } from 'node:zlib';
import { compressSync as snappyCompress } from 'snappy';
import { isKmirrorError, type KmirrorError } from '../../domain/errors.ts';
import {
  asRawBatch,
  BATCH_HEADER_BYTES,
  Codec,
  crcValid,
  decodeRecords,
  encodeBatch,
  isContiguous,
  isMergeable,
  mergedBatch,
  nextSequence,
  restampBatch,
  splitBatches,
  splitFetchedBatches,
  type RawBatch,
  type RecordToEncode,
} from '../../kafka/wire.ts';

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

  it('stops at a batch whose header (outside the CRC) cannot be true, keeping the batches before it', () => {
    const a = encodeBatch([{ timestamp: 1n, key: null, value: Buffer.from('a'), headers: [] }], stamp);
    const b = Buffer.from(encodeBatch([{ timestamp: 2n, key: null, value: Buffer.from('b'), headers: [] }], { ...stamp, baseSequence: 1 }));
    b.writeBigInt64BE(1n, 0);
    const badMagic = Buffer.from(b);
    badMagic.writeInt8(1, 16);
    expect(splitFetchedBatches(Buffer.concat([a, badMagic]))).toMatchObject({ batches: [{ baseOffset: 0n }], corrupt: { offset: 1n, reason: expect.stringContaining('magic 1') } });
    const badLength = Buffer.from(b);
    badLength.writeInt32BE(-5, 8);
    expect(splitFetchedBatches(Buffer.concat([a, badLength]))).toMatchObject({ batches: [{ baseOffset: 0n }], corrupt: { offset: 1n, reason: expect.stringContaining('length -5') } });
    expect(() => splitBatches(Buffer.concat([a, badLength]))).toThrow(/record batch at offset 1/);
    expect(splitFetchedBatches(Buffer.concat([a, b]))).toEqual({ batches: expect.any(Array) });
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

/** snappy-java's SnappyOutputStream format (what the Java producer writes), `blockBytes` of input per block. */
function xerialSnappy(data: Buffer, blockBytes: number): Buffer {
  const header = Buffer.alloc(16);
  Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]).copy(header);
  header.writeInt32BE(1, 8);
  header.writeInt32BE(1, 12);
  const chunks: Buffer[] = [header];
  for (let pos = 0; pos < data.length; pos += blockBytes) {
    const block = snappyCompress(data.subarray(pos, pos + blockBytes));
    const length = Buffer.alloc(4);
    length.writeInt32BE(block.length);
    chunks.push(length, block);
  }
  return Buffer.concat(chunks);
}

const codecNames: Readonly<Record<number, string>> = Object.fromEntries(Object.entries(Codec).map(([name, id]) => [id, name]));

interface Compression {
  readonly name: string;
  readonly codec: number;
  readonly compress: (records: Buffer) => Buffer;
}

const compressions: readonly Compression[] = [
  { name: 'none', codec: Codec.none, compress: (b) => b },
  { name: 'gzip', codec: Codec.gzip, compress: (b) => gzipSync(b) },
  { name: 'snappy (raw block)', codec: Codec.snappy, compress: (b) => snappyCompress(b) },
  { name: 'snappy (xerial framing, 100-byte blocks)', codec: Codec.snappy, compress: (b) => xerialSnappy(b, 100) },
  { name: 'snappy (xerial framing, 32 KiB blocks)', codec: Codec.snappy, compress: (b) => xerialSnappy(b, 32 * 1024) },
  { name: 'lz4 (frame)', codec: Codec.lz4, compress: (b) => lz4CompressFrame(b) },
  { name: 'lz4 (frame with block and content checksums)', codec: Codec.lz4, compress: (b) => lz4CompressFrame(b, { blockChecksums: true, contentChecksum: true }) },
  { name: 'zstd', codec: Codec.zstd, compress: (b) => zstdCompressSync(b) },
];

/** A batch whose records section is `body` (compressed with `codec`): length, attributes and CRC fixed up. */
function batchWithBody(template: Buffer, codec: number, body: Buffer): RawBatch {
  const bytes = Buffer.concat([template.subarray(0, BATCH_HEADER_BYTES), body]);
  bytes.writeInt32BE(bytes.length - 12, 8);
  bytes.writeInt16BE((template.readInt16BE(21) & ~0x07) | codec, 21);
  bytes.writeUInt32BE(crc32c(bytes.subarray(21)), 17);
  return asRawBatch(bytes);
}

/** encodeBatch(), then its records section compressed as `compression` does. */
function compressedBatch(records: readonly RecordToEncode[], compression: Compression): RawBatch {
  const plain = encodeBatch(records, stamp);
  return batchWithBody(plain, compression.codec, compression.compress(plain.subarray(BATCH_HEADER_BYTES)));
}

function decodeError(batch: RawBatch): unknown {
  try {
    decodeRecords(batch);
  } catch (err) {
    return err;
  }
  return undefined;
}

/** mergedBatch written into a buffer of its own, behind `at` bytes of something else. */
function mergeBatches(batches: readonly RawBatch[], s: typeof stamp, at = 0): Buffer {
  const merged = mergedBatch(batches, s);
  const out = Buffer.alloc(at + merged.size, 0xee);
  merged.writeInto(out, at);
  return out.subarray(at);
}

/** `records` as one source batch based at `baseOffset` (what a fetch returns). */
function sourceBatch(records: readonly RecordToEncode[], baseOffset: bigint): RawBatch {
  const bytes = encodeBatch(records, stamp);
  bytes.writeBigInt64BE(baseOffset, 0);
  return asRawBatch(bytes);
}

describe('merging consecutive batches', () => {
  it('keeps every record, offset and timestamp of any run of batches (timestamps out of order included)', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 2n ** 40n }), fc.array(fc.array(recordArb, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 6 }), fc.boolean(), (start, drawn, close) => {
        // close: timestamps within ±2^20 ms of each other (short varint deltas, negative ones
        // included), as a real producer writes them; else anywhere in 0..2^42 (long varints).
        const runs = close ? drawn.map((records) => records.map((r) => ({ ...r, timestamp: 1_700_000_000_000n + (r.timestamp % 2n ** 21n) - 2n ** 20n }))) : drawn;
        let at = start;
        const batches = runs.map((records) => {
          const batch = sourceBatch(records, at);
          at += BigInt(records.length);
          return batch;
        });
        const merged = mergeBatches(batches, { producerId: 99n, producerEpoch: 1, baseSequence: 1000 }, 13);
        expect(merged.readBigInt64BE(0)).toBe(0n); // the broker assigns the base offset
        merged.writeBigInt64BE(start, 0); // as the destination will hold it
        const batch = asRawBatch(merged); // the CRC covers bytes 21.., not the base offset
        expect(crcValid(batch)).toBe(true);
        expect(isContiguous(batch)).toBe(true);
        expect(batch.lastOffset).toBe(at - 1n);
        expect(batch.recordsCount).toBe(runs.flat().length);
        expect(batch.maxTimestamp).toBe(batches.reduce((m, b) => (b.maxTimestamp > m ? b.maxTimestamp : m), batches[0]!.maxTimestamp));
        expect([batch.producerId, batch.bytes.readInt16BE(51), batch.bytes.readInt32BE(53), batch.attributes]).toEqual([99n, 1, 1000, 0]);
        expect(decodeRecords(batch)).toEqual(batches.flatMap((b) => decodeRecords(b)));
      }),
    );
  });

  it('refuses batches that do not follow each other, compressed, LogAppendTime and delete-horizon batches', () => {
    const one = (ts: bigint): RecordToEncode[] => [{ timestamp: ts, key: null, value: Buffer.from('v'), headers: [] }];
    const code = (f: () => unknown): string | undefined => {
      try {
        f();
      } catch (err) {
        return isKmirrorError(err) ? err.code : 'not a KmirrorError';
      }
      return undefined;
    };
    expect(code(() => mergeBatches([sourceBatch(one(1n), 10n), sourceBatch(one(2n), 12n)], stamp))).toBe('INVALID_ARGUMENT');
    expect(code(() => mergeBatches([], stamp))).toBe('INVALID_ARGUMENT');
    for (const attributes of [Codec.gzip, 0x08 /* LogAppendTime */, 0x40 /* delete horizon */]) {
      const bytes = Buffer.from(sourceBatch(one(2n), 11n).bytes);
      bytes.writeInt16BE(attributes, 21);
      expect(isMergeable(asRawBatch(bytes))).toBe(false);
      expect(code(() => mergeBatches([sourceBatch(one(1n), 10n), asRawBatch(bytes)], stamp))).toBe('INVALID_ARGUMENT');
    }
    expect(isMergeable(sourceBatch(one(1n), 10n))).toBe(true);
  });
});

describe('compressed RecordBatch v2', () => {
  // Compressible records (repeated text) so every codec really compresses and the payloads span
  // several xerial and lz4 blocks.
  const bulky: RecordToEncode[] = Array.from({ length: 200 }, (_, i) => ({
    timestamp: 1_700_000_000_000n + BigInt(i),
    key: Buffer.from(`key-${i}`),
    value: Buffer.from(`value ${i} `.repeat(40)),
    headers: [{ key: 'h', value: Buffer.from(String(i)) }],
  }));

  it.each(compressions)('$name: decodes any records exactly', (compression) => {
    fc.assert(
      fc.property(fc.array(recordArb, { minLength: 1, maxLength: 30 }), (records) => {
        const batch = compressedBatch(records, compression);
        expect(batch.codec).toBe(compression.codec);
        expect(crcValid(batch)).toBe(true);
        const decoded = decodeRecords(batch);
        expect(decoded.map((r) => ({ timestamp: r.timestamp, key: r.key, value: r.value, headers: r.headers }))).toEqual(
          records.map((r) => ({ ...r, headers: [...r.headers] })),
        );
        expect(decoded.map((r) => r.offset)).toEqual(records.map((_, i) => BigInt(i)));
      }),
      { numRuns: 50 },
    );
  });

  it.each(compressions)('$name: decodes a large batch exactly, and a restamped copy the same', (compression) => {
    const batch = compressedBatch(bulky, compression);
    const decoded = decodeRecords(batch);
    expect(decoded.map((r) => ({ timestamp: r.timestamp, key: r.key, value: r.value, headers: r.headers }))).toEqual(bulky);
    const restamped = asRawBatch(Buffer.concat(restampBatch(batch, { producerId: 7n, producerEpoch: 0, baseSequence: 0 })));
    expect(restamped.codec).toBe(compression.codec);
    expect(decodeRecords(restamped)).toEqual(decoded);
  });

  it.each(compressions.filter((c) => c.codec !== Codec.none))('$name: a truncated records section is a KmirrorError naming the codec', (compression) => {
    const plain = encodeBatch(bulky, stamp);
    const body = compression.compress(plain.subarray(BATCH_HEADER_BYTES));
    const err = decodeError(batchWithBody(plain, compression.codec, body.subarray(0, Math.floor(body.length / 2))));
    const codec = codecNames[compression.codec]!;
    expect(isKmirrorError(err, 'CORRUPT_RECORD_BATCH')).toBe(true);
    expect((err as Error).message).toMatch(new RegExp(`^cannot decompress the ${codec} records of the batch at offset 0: .`));
    expect((err as KmirrorError).details).toEqual({ codec, baseOffset: '0' });
  });

  it.each([
    ['gzip', Codec.gzip],
    ['snappy', Codec.snappy],
    ['lz4', Codec.lz4],
    ['zstd', Codec.zstd],
  ] as const)('%s: bytes that are not %s at all are a KmirrorError', (name, codec) => {
    const plain = encodeBatch(bulky, stamp);
    const err = decodeError(batchWithBody(plain, codec, Buffer.from('these bytes were never compressed')));
    expect(isKmirrorError(err, 'CORRUPT_RECORD_BATCH')).toBe(true);
    expect((err as Error).message).toContain(`cannot decompress the ${name} records`);
  });

  it('xerial snappy: a block length running past the end is a KmirrorError', () => {
    const plain = encodeBatch(bulky, stamp);
    const body = xerialSnappy(plain.subarray(BATCH_HEADER_BYTES), 1024);
    body.writeInt32BE(body.length, 16); // first block claims more bytes than the whole body
    const err = decodeError(batchWithBody(plain, Codec.snappy, body));
    expect(isKmirrorError(err, 'CORRUPT_RECORD_BATCH')).toBe(true);
    expect((err as Error).message).toMatch(/xerial snappy block at byte 16 declares \d+ bytes/);
  });

  it('lz4: a flipped byte under block checksums is a KmirrorError', () => {
    const plain = encodeBatch(bulky, stamp);
    const body = lz4CompressFrame(plain.subarray(BATCH_HEADER_BYTES), { blockChecksums: true, contentChecksum: true });
    body[body.length - 20]! ^= 0x01;
    expect(isKmirrorError(decodeError(batchWithBody(plain, Codec.lz4, body)), 'CORRUPT_RECORD_BATCH')).toBe(true);
  });

  it('an unknown codec id is a KmirrorError', () => {
    const plain = encodeBatch(bulky, stamp);
    const err = decodeError(batchWithBody(plain, 5, plain.subarray(BATCH_HEADER_BYTES)));
    expect(isKmirrorError(err, 'CORRUPT_RECORD_BATCH')).toBe(true);
    expect((err as Error).message).toBe('record batch at offset 0 has unknown compression codec 5');
  });
});
