// Kafka RecordBatch v2 (magic 2), the on-disk and on-wire format kmirror copies byte for byte.
//
//   offset  field                  type
//   0       baseOffset             int64   (rewritten by the broker on append)
//   8       batchLength            int32   (bytes after this field)
//   12      partitionLeaderEpoch   int32   (rewritten by the broker)
//   16      magic                  int8    (2)
//   17      crc                    uint32  CRC-32C of bytes [21, end)
//   21      attributes             int16   bits 0-2 codec, 3 LogAppendTime, 4 transactional,
//                                          5 control, 6 delete horizon set
//   23      lastOffsetDelta        int32
//   27      baseTimestamp          int64
//   35      maxTimestamp           int64
//   43      producerId             int64
//   51      producerEpoch          int16
//   53      baseSequence           int32
//   57      recordsCount           int32
//   61      records                (compressed as a whole when codec != 0)
//
//   Record: length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
//           key varint-length bytes (-1 = null), value likewise, headers varint count of
//           (key varint-length utf8, value varint-length bytes, -1 = null).
//
// Pure: no I/O, no kafkajs. The copier re-stamps producer id/epoch/sequence and the CRC, and keeps
// everything else — keys, values, headers (order, duplicates, nulls), timestamps, compression; it
// may merge consecutive small uncompressed batches into one (mergedBatch), records unchanged.
import { crc32c } from '@node-rs/crc32';
import { decompressFrameSync as lz4DecompressFrame } from 'lz4-napi';
import { gunzipSync, zstdDecompressSync } from 'node:zlib';
import { uncompressSync as snappyUncompress } from 'snappy';
import { KmirrorError } from '../domain/errors.ts';

export const BATCH_HEADER_BYTES = 61;
const LOG_OVERHEAD = 12; // baseOffset + batchLength
const CRC_START = 21;

export const Codec = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 } as const;
const ATTR_CODEC_MASK = 0x07;
const ATTR_LOG_APPEND_TIME = 0x08;
const ATTR_TRANSACTIONAL = 0x10;
const ATTR_CONTROL = 0x20;
const ATTR_DELETE_HORIZON = 0x40;

/** A batch as fetched from the source: its header fields and its exact bytes. */
export interface RawBatch {
  readonly baseOffset: bigint;
  /** baseOffset + lastOffsetDelta */
  readonly lastOffset: bigint;
  readonly leaderEpoch: number;
  readonly attributes: number;
  readonly codec: number;
  readonly isTransactional: boolean;
  readonly isControl: boolean;
  readonly hasDeleteHorizon: boolean;
  readonly logAppendTime: boolean;
  readonly producerId: bigint;
  readonly recordsCount: number;
  readonly baseTimestamp: bigint;
  readonly maxTimestamp: bigint;
  /** The whole batch, header included. A view into the fetch response buffer. */
  readonly bytes: Buffer;
}

/** True when the batch's offsets run base..last without a hole (compaction can leave holes). */
export function isContiguous(batch: RawBatch): boolean {
  return BigInt(batch.recordsCount) === batch.lastOffset - batch.baseOffset + 1n;
}

/**
 * Split a fetch response's record set into batches. A trailing partial batch (the broker cuts at
 * maxBytes) is dropped; the next fetch starts at its offset. Throws CORRUPT_RECORD_BATCH at a batch
 * whose header (outside the CRC) cannot be true; splitFetchedBatches keeps the batches before it.
 */
export function splitBatches(records: Buffer): RawBatch[] {
  const { batches, corrupt } = splitFetchedBatches(records);
  if (corrupt !== undefined) throw new KmirrorError('CORRUPT_RECORD_BATCH', `record batch at offset ${corrupt.offset}: ${corrupt.reason}`, { baseOffset: corrupt.offset.toString() });
  return batches;
}

/**
 * Split a record set into its batches up to the first one whose header cannot be true (the CRC
 * does not cover the first 21 bytes: offset, length, leader epoch, magic): a length below a batch
 * header, or a magic other than 2 (Kafka 4 brokers write no older one). The batches before it are
 * good; `corrupt` says where and why the rest cannot be read. (A length too large looks like a batch
 * cut at the size limit: no progress, reported as such.)
 */
export function splitFetchedBatches(records: Buffer): { readonly batches: RawBatch[]; readonly corrupt?: { readonly offset: bigint; readonly reason: string } } {
  const batches: RawBatch[] = [];
  let pos = 0;
  while (pos + LOG_OVERHEAD <= records.length) {
    const offset = records.readBigInt64BE(pos);
    const batchLength = records.readInt32BE(pos + 8);
    if (batchLength < BATCH_HEADER_BYTES - LOG_OVERHEAD) return { batches, corrupt: { offset, reason: `its length ${batchLength} is below a batch header's` } };
    const end = pos + LOG_OVERHEAD + batchLength;
    // Cut at the fetch's size limit (a partition's first batch may be cut too, when it is not the
    // first partition of the answer): fetched again from here.
    if (end > records.length) break;
    const magic = records.readInt8(pos + 16);
    if (magic !== 2) return { batches, corrupt: { offset, reason: `it has magic ${magic}; a Kafka 4 broker writes only magic 2` } };
    const bytes = records.subarray(pos, end);
    const attributes = bytes.readInt16BE(21);
    const baseOffset = bytes.readBigInt64BE(0);
    batches.push({
      baseOffset,
      lastOffset: baseOffset + BigInt(bytes.readInt32BE(23)),
      leaderEpoch: bytes.readInt32BE(12),
      attributes,
      codec: attributes & ATTR_CODEC_MASK,
      isTransactional: (attributes & ATTR_TRANSACTIONAL) !== 0,
      isControl: (attributes & ATTR_CONTROL) !== 0,
      hasDeleteHorizon: (attributes & ATTR_DELETE_HORIZON) !== 0,
      logAppendTime: (attributes & ATTR_LOG_APPEND_TIME) !== 0,
      producerId: bytes.readBigInt64BE(43),
      recordsCount: bytes.readInt32BE(57),
      baseTimestamp: bytes.readBigInt64BE(27),
      maxTimestamp: bytes.readBigInt64BE(35),
      bytes,
    });
    pos = end;
  }
  return { batches };
}

export interface ProducerStamp {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly baseSequence: number;
  /** Mark the batch transactional (gap fillers, written inside a destination transaction). */
  readonly transactional?: boolean;
}

/**
 * `batch` ready to produce as an idempotent, non-transactional batch: producer id, epoch and
 * sequence replaced, transactional bit cleared (only committed data is copied), base offset and
 * leader epoch zeroed (the broker assigns them), CRC recomputed. Returned as two chunks — a new
 * 61-byte header and the untouched records, still a view of the fetch buffer — so copying a batch
 * allocates 61 bytes, not the batch again.
 */
export function restampBatch(batch: RawBatch, stamp: ProducerStamp): Buffer[] {
  const header = Buffer.from(batch.bytes.subarray(0, BATCH_HEADER_BYTES));
  const body = batch.bytes.subarray(BATCH_HEADER_BYTES);
  header.writeBigInt64BE(0n, 0);
  header.writeInt32BE(-1, 12);
  header.writeInt16BE(batch.attributes & ~ATTR_TRANSACTIONAL & ~ATTR_LOG_APPEND_TIME, 21);
  header.writeBigInt64BE(stamp.producerId, 43);
  header.writeInt16BE(stamp.producerEpoch, 51);
  header.writeInt32BE(stamp.baseSequence, 53);
  header.writeUInt32BE(crc32c(body, crc32c(header.subarray(CRC_START))), 17);
  return [header, body];
}

/** True when `batch` may go into a merged batch (mergedBatch): uncompressed, CreateTime, not a
 *  control batch, no delete horizon (its base timestamp is the horizon, which must stay with the
 *  batch's own records), offsets without holes. */
export function isMergeable(batch: RawBatch): boolean {
  return batch.codec === Codec.none && !batch.logAppendTime && !batch.isControl && !batch.hasDeleteHorizon && isContiguous(batch);
}

/** A batch written straight into a larger buffer (the produce request being encoded) instead of
 *  built on its own and copied there: `size` bytes from `at`, CRC included. */
export interface InPlaceBatch {
  readonly size: number;
  writeInto(out: Buffer, at: number): void;
}

/**
 * Consecutive mergeable batches (each starting where the previous one ends) as one idempotent,
 * non-transactional batch stamped with `stamp`: the copier's way to write a source fed by small
 * producer batches as large ones, as a producer with a large batch.size would have — the
 * destination broker then appends, indexes and replicates a few large batches instead of many
 * small ones. Every record keeps its bytes (attributes, key, value, headers) and its offset and
 * timestamp: only its offset and timestamp deltas are rebased onto the first batch's base offset
 * and base timestamp (so its length prefix may change). maxTimestamp is the largest of the batches'.
 * The records are read now (a batch that cannot be merged is INVALID_ARGUMENT here) and written
 * when the request is encoded.
 */
export function mergedBatch(batches: readonly RawBatch[], stamp: ProducerStamp): InPlaceBatch {
  const first = batches[0];
  if (first === undefined) throw new KmirrorError('INVALID_ARGUMENT', 'cannot merge no batches');
  const count = batches.reduce((n, b) => n + b.recordsCount, 0);
  // Each record's rebased deltas and where its unchanged part (key, value, headers) lies.
  const timestampDeltas = new Float64Array(count);
  const offsetDeltas = new Float64Array(count);
  const restStarts = new Int32Array(count);
  const restEnds = new Int32Array(count);
  const sources = new Int32Array(count);
  const attributes = new Uint8Array(count);
  let size = BATCH_HEADER_BYTES;
  let maxTimestamp = first.maxTimestamp;
  let expectedBase = first.baseOffset;
  let i = 0;
  const cursor = { pos: 0 };
  batches.forEach((batch, b) => {
    if (!isMergeable(batch) || batch.baseOffset !== expectedBase) {
      throw new KmirrorError('INVALID_ARGUMENT', `batch at offset ${batch.baseOffset} cannot be merged after the one ending at ${expectedBase - 1n}`);
    }
    expectedBase = batch.lastOffset + 1n;
    if (batch.maxTimestamp > maxTimestamp) maxTimestamp = batch.maxTimestamp;
    const timestampShift = Number(batch.baseTimestamp - first.baseTimestamp);
    const offsetShift = Number(batch.baseOffset - first.baseOffset);
    const bytes = batch.bytes;
    cursor.pos = BATCH_HEADER_BYTES;
    for (let r = 0; r < batch.recordsCount; r++, i++) {
      const length = readVarint(bytes, cursor);
      const end = cursor.pos + length;
      attributes[i] = bytes[cursor.pos++]!;
      const timestampDelta = readVarint(bytes, cursor) + timestampShift;
      const offsetDelta = readVarint(bytes, cursor) + offsetShift;
      timestampDeltas[i] = timestampDelta;
      offsetDeltas[i] = offsetDelta;
      restStarts[i] = cursor.pos;
      restEnds[i] = end;
      sources[i] = b;
      const body = 1 + varintSize(timestampDelta) + varintSize(offsetDelta) + (end - cursor.pos);
      size += varintSize(body) + body;
      cursor.pos = end;
    }
    if (cursor.pos !== bytes.length) throw new KmirrorError('CORRUPT_RECORD_BATCH', `batch at offset ${batch.baseOffset} has ${bytes.length - cursor.pos} bytes after its last record`);
  });
  const lastOffsetDelta = Number(expectedBase - 1n - first.baseOffset);
  return {
    size,
    writeInto(out: Buffer, at: number): void {
      out.writeBigInt64BE(0n, at);
      out.writeInt32BE(size - LOG_OVERHEAD, at + 8);
      out.writeInt32BE(-1, at + 12);
      out.writeInt8(2, at + 16);
      out.writeInt16BE(0, at + 21);
      out.writeInt32BE(lastOffsetDelta, at + 23);
      out.writeBigInt64BE(first.baseTimestamp, at + 27);
      out.writeBigInt64BE(maxTimestamp, at + 35);
      out.writeBigInt64BE(stamp.producerId, at + 43);
      out.writeInt16BE(stamp.producerEpoch, at + 51);
      out.writeInt32BE(stamp.baseSequence, at + 53);
      out.writeInt32BE(count, at + 57);
      let pos = at + BATCH_HEADER_BYTES;
      for (let r = 0; r < count; r++) {
        const restStart = restStarts[r]!;
        const restEnd = restEnds[r]!;
        const timestampDelta = timestampDeltas[r]!;
        const offsetDelta = offsetDeltas[r]!;
        pos = writeVarint(out, pos, 1 + varintSize(timestampDelta) + varintSize(offsetDelta) + (restEnd - restStart));
        out[pos++] = attributes[r]!;
        pos = writeVarint(out, pos, timestampDelta);
        pos = writeVarint(out, pos, offsetDelta);
        pos += batches[sources[r]!]!.bytes.copy(out, pos, restStart, restEnd);
      }
      if (pos !== at + size) throw new KmirrorError('INTERNAL', `merged batch wrote ${pos - at} bytes, expected ${size}`);
      out.writeUInt32BE(crc32c(out.subarray(at + CRC_START, at + size)), at + 17);
    },
  };
}

/** CRC check of a fetched batch (the broker validates produced ones; we validate fetched ones). */
export function crcValid(batch: RawBatch): boolean {
  return batch.bytes.readUInt32BE(17) === crc32c(batch.bytes.subarray(CRC_START));
}

export interface RecordHeader {
  readonly key: string;
  readonly value: Buffer | null;
}

export interface DecodedRecord {
  readonly offset: bigint;
  readonly timestamp: bigint;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  /** In wire order, duplicates kept. */
  readonly headers: readonly RecordHeader[];
}

class Reader {
  pos = 0;
  constructor(readonly buf: Buffer) {}

  varint(): number {
    let shift = 0;
    let result = 0;
    for (;;) {
      const byte = this.buf[this.pos++];
      if (byte === undefined) throw new KmirrorError('CORRUPT_RECORD_BATCH', 'truncated varint in record');
      result += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) break;
      shift += 7;
      if (shift > 63) throw new KmirrorError('CORRUPT_RECORD_BATCH', 'varint too long in record');
    }
    // zigzag
    return result % 2 === 0 ? result / 2 : -(result + 1) / 2;
  }

  bytes(): Buffer | null {
    const length = this.varint();
    if (length < 0) return null;
    const out = this.buf.subarray(this.pos, this.pos + length);
    this.pos += length;
    return out;
  }
}

const codecNames: Readonly<Record<number, string>> = Object.fromEntries(Object.entries(Codec).map(([name, id]) => [id, name]));

// Snappy as the Java producer writes it (snappy-java's SnappyOutputStream, "xerial" framing):
//   magic 0x82 'SNAPPY' 0x00 (8 bytes), int32 version, int32 compatible version, then blocks of
//   [int32 compressed length][raw snappy block], all big-endian.
// librdkafka and kafkajs-snappy may write one plain raw snappy block instead. As in librdkafka, the
// magic decides, and unambiguously: in a raw block those bytes would be the length varint 0x82 0x53
// followed by 'N', a copy element, but a block must open with a literal.
const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER_BYTES = XERIAL_MAGIC.length + 8;

function snappyBlock(block: Buffer): Buffer {
  // asBuffer: true makes it a Buffer; the typings do not narrow on the option.
  return snappyUncompress(block, { asBuffer: true }) as Buffer;
}

function snappyDecompress(body: Buffer): Buffer {
  if (body.length < XERIAL_HEADER_BYTES || !body.subarray(0, XERIAL_MAGIC.length).equals(XERIAL_MAGIC)) return snappyBlock(body);
  const blocks: Buffer[] = [];
  let pos = XERIAL_HEADER_BYTES;
  while (pos < body.length) {
    if (pos + 4 > body.length) throw new Error(`xerial snappy block length at byte ${pos} is truncated`);
    const length = body.readInt32BE(pos);
    pos += 4;
    if (length < 0 || pos + length > body.length) throw new Error(`xerial snappy block at byte ${pos - 4} declares ${length} bytes, ${body.length - pos} remain`);
    blocks.push(snappyBlock(body.subarray(pos, pos + length)));
    pos += length;
  }
  return blocks.length === 1 ? blocks[0]! : Buffer.concat(blocks);
}

/** Decompressors by codec id. lz4 is the LZ4 frame format (magic 2 batches carry a correct header checksum). */
const decompressors: Readonly<Record<number, (body: Buffer) => Buffer>> = {
  [Codec.gzip]: gunzipSync,
  [Codec.snappy]: snappyDecompress,
  [Codec.lz4]: lz4DecompressFrame,
  [Codec.zstd]: zstdDecompressSync,
};

/** The batch's records section, decompressed. Corrupt or unknown compression is CORRUPT_RECORD_BATCH. */
function recordsPayload(batch: RawBatch): Buffer {
  const body = batch.bytes.subarray(BATCH_HEADER_BYTES);
  if (batch.codec === Codec.none) return body;
  const codec = codecNames[batch.codec];
  const decompress = decompressors[batch.codec];
  const details = { codec: codec ?? batch.codec, baseOffset: batch.baseOffset.toString() };
  if (codec === undefined || decompress === undefined) {
    throw new KmirrorError('CORRUPT_RECORD_BATCH', `record batch at offset ${batch.baseOffset} has unknown compression codec ${batch.codec}`, details);
  }
  try {
    return decompress(body);
  } catch (err) {
    throw new KmirrorError('CORRUPT_RECORD_BATCH', `cannot decompress the ${codec} records of the batch at offset ${batch.baseOffset}: ${(err as Error).message}`, details, {
      cause: err,
    });
  }
}

/** A control batch's marker: its one record's key is (version int16, type int16), type 0 = ABORT,
 *  1 = COMMIT. undefined for a data batch or an unknown type. Control batches are never compressed. */
export function controlType(batch: RawBatch): 'abort' | 'commit' | undefined {
  if (!batch.isControl || batch.recordsCount < 1) return undefined;
  const reader = new Reader(batch.bytes.subarray(BATCH_HEADER_BYTES));
  reader.varint(); // record length
  reader.pos += 1; // attributes
  reader.varint(); // timestamp delta
  reader.varint(); // offset delta
  const key = reader.bytes();
  if (key === null || key.length < 4) return undefined;
  const type = key.readInt16BE(2);
  return type === 0 ? 'abort' : type === 1 ? 'commit' : undefined;
}

/** Decode the records of a data batch (for verify and boundary checksums; copying never decodes). */
export function decodeRecords(batch: RawBatch): DecodedRecord[] {
  if (batch.isControl) return [];
  const reader = new Reader(recordsPayload(batch));
  const records: DecodedRecord[] = [];
  for (let i = 0; i < batch.recordsCount; i++) {
    const length = reader.varint();
    const end = reader.pos + length;
    reader.pos += 1; // record attributes (unused)
    const timestampDelta = reader.varint();
    const offsetDelta = reader.varint();
    const key = reader.bytes();
    const value = reader.bytes();
    const headerCount = reader.varint();
    const headers: RecordHeader[] = [];
    for (let h = 0; h < headerCount; h++) {
      const headerKey = reader.bytes();
      headers.push({ key: headerKey === null ? '' : headerKey.toString('utf8'), value: reader.bytes() });
    }
    reader.pos = end;
    records.push({
      offset: batch.baseOffset + BigInt(offsetDelta),
      timestamp: batch.logAppendTime ? batch.maxTimestamp : batch.baseTimestamp + BigInt(timestampDelta),
      key,
      value,
      headers,
    });
  }
  return records;
}

export interface RecordToEncode {
  readonly timestamp: bigint;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: readonly RecordHeader[];
}

function zigzag(value: number): number {
  return value >= 0 ? value * 2 : -value * 2 - 1;
}

function varintSize(value: number): number {
  let v = zigzag(value);
  if (v < 0x80) return 1;
  if (v < 0x4000) return 2;
  let size = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 128);
    size++;
  }
  return size;
}

function writeVarint(buf: Buffer, pos: number, value: number): number {
  let v = zigzag(value);
  if (v < 0x80) {
    buf[pos] = v;
    return pos + 1;
  }
  while (v >= 0x80) {
    buf[pos++] = (v % 128) | 0x80;
    v = Math.floor(v / 128);
  }
  buf[pos++] = v;
  return pos;
}

/** The zigzag varint at cursor.pos (advanced past it): up to 4 bytes inline, longer ones (large
 *  timestamp deltas) through Reader. Hot in mergedBatch, called for every record. */
function readVarint(buf: Buffer, cursor: { pos: number }): number {
  let pos = cursor.pos;
  let byte = buf[pos++]!;
  let raw = byte & 0x7f;
  if (byte >= 0x80) {
    byte = buf[pos++]!;
    raw |= (byte & 0x7f) << 7;
    if (byte >= 0x80) {
      byte = buf[pos++]!;
      raw |= (byte & 0x7f) << 14;
      if (byte >= 0x80) {
        byte = buf[pos++]!;
        raw |= (byte & 0x7f) << 21;
        if (byte >= 0x80) {
          const reader = new Reader(buf);
          reader.pos = cursor.pos;
          const value = reader.varint();
          cursor.pos = reader.pos;
          return value;
        }
      }
    }
  }
  if (pos > buf.length) throw new KmirrorError('CORRUPT_RECORD_BATCH', 'truncated varint in record');
  cursor.pos = pos;
  return (raw >>> 1) ^ -(raw & 1);
}

function bytesSize(b: Buffer | null): number {
  return b === null ? varintSize(-1) : varintSize(b.length) + b.length;
}

function writeBytes(buf: Buffer, pos: number, b: Buffer | null): number {
  if (b === null) return writeVarint(buf, pos, -1);
  pos = writeVarint(buf, pos, b.length);
  b.copy(buf, pos);
  return pos + b.length;
}

/**
 * Encode an uncompressed batch (offset deltas 0..n-1) stamped for an idempotent (or, with
 * stamp.transactional, a transactional) producer. Used for alignment and gap fillers and for
 * re-encoded source records.
 */
export function encodeBatch(records: readonly RecordToEncode[], stamp: ProducerStamp): Buffer {
  if (records.length === 0) throw new KmirrorError('INVALID_ARGUMENT', 'cannot encode an empty batch');
  const baseTimestamp = records[0]!.timestamp;
  let maxTimestamp = baseTimestamp;
  const encoded = records.map((r, i) => {
    if (r.timestamp > maxTimestamp) maxTimestamp = r.timestamp;
    const headerKeys = r.headers.map((h) => Buffer.from(h.key, 'utf8'));
    const timestampDelta = Number(r.timestamp - baseTimestamp);
    let body = 1 + varintSize(timestampDelta) + varintSize(i) + bytesSize(r.key) + bytesSize(r.value) + varintSize(r.headers.length);
    r.headers.forEach((h, j) => {
      body += bytesSize(headerKeys[j]!) + bytesSize(h.value);
    });
    return { r, headerKeys, timestampDelta, body };
  });
  const total = BATCH_HEADER_BYTES + encoded.reduce((n, e) => n + varintSize(e.body) + e.body, 0);
  const out = Buffer.alloc(total);
  out.writeBigInt64BE(0n, 0);
  out.writeInt32BE(total - LOG_OVERHEAD, 8);
  out.writeInt32BE(-1, 12);
  out.writeInt8(2, 16);
  out.writeInt16BE(stamp.transactional === true ? ATTR_TRANSACTIONAL : 0, 21);
  out.writeInt32BE(records.length - 1, 23);
  out.writeBigInt64BE(baseTimestamp, 27);
  out.writeBigInt64BE(maxTimestamp, 35);
  out.writeBigInt64BE(stamp.producerId, 43);
  out.writeInt16BE(stamp.producerEpoch, 51);
  out.writeInt32BE(stamp.baseSequence, 53);
  out.writeInt32BE(records.length, 57);
  let pos = BATCH_HEADER_BYTES;
  encoded.forEach((e, i) => {
    pos = writeVarint(out, pos, e.body);
    out.writeInt8(0, pos++);
    pos = writeVarint(out, pos, e.timestampDelta);
    pos = writeVarint(out, pos, i);
    pos = writeBytes(out, pos, e.r.key);
    pos = writeBytes(out, pos, e.r.value);
    pos = writeVarint(out, pos, e.r.headers.length);
    e.r.headers.forEach((h, j) => {
      pos = writeBytes(out, pos, e.headerKeys[j]!);
      pos = writeBytes(out, pos, h.value);
    });
  });
  out.writeUInt32BE(crc32c(out.subarray(CRC_START)), 17);
  return out;
}

/** Parse one encoded batch back into a RawBatch (for tests and for re-encoded tails). */
export function asRawBatch(bytes: Buffer): RawBatch {
  const [batch] = splitBatches(bytes);
  if (!batch) throw new KmirrorError('INVALID_ARGUMENT', 'not a complete record batch');
  return batch;
}

/** Sequence numbers are int32 and wrap to 0 after 2^31-1, as the broker expects. */
export function nextSequence(sequence: number, records: number): number {
  return (sequence + records) % 2 ** 31;
}
