// `verify`: compare a source and a destination partition record by record — offset, key, value,
// headers (order and nulls included) and timestamp — over the offsets both should hold. Both sides
// are read as read_committed consumers see them (control batches and aborted data left out).
import { createHash } from 'node:crypto';
import { KmirrorError, isKmirrorError } from '../domain/errors.ts';
import { isGapFiller } from './gap-filler.ts';
import { AbortedTransactions, IsolationLevel, KafkaAnswerError, type RawCluster } from './protocol.ts';
import { crcValid, decodeRecords, type DecodedRecord, type RawBatch } from './wire.ts';
import type { Retention } from './mirror-topics.ts';

export interface VerifyMismatch {
  readonly partition: number;
  readonly offset: string;
  readonly field:
    | 'missing-on-destination'
    | 'missing-on-source'
    | 'key'
    | 'value'
    | 'headers'
    | 'timestamp'
    | 'log-start'
    | 'aborted-data-on-destination'
    | 'corrupt-batch-on-source'
    | 'corrupt-batch-on-destination';
  readonly source: string;
  readonly destination: string;
}

export interface PartitionVerification {
  readonly partition: number;
  readonly equal: boolean;
  readonly recordsCompared: number;
  readonly from: string;
  readonly to: string;
  readonly firstMismatch?: VerifyMismatch;
  /** [from, to): records the destination's own retention removed (it starts later than the
   *  source), left out of the comparison; only with `destinationRetention`. */
  readonly removedByDestinationRetention?: { readonly from: string; readonly to: string };
}

export interface VerifyOptions {
  /** How the destination topic deletes by retention (mirror-topics.ts deletesByRetention): its own
   *  retention removes segments whose bounds differ from the source's, so it may start later than
   *  the source. A later start is compared from there when retention explains it — a size limit,
   *  or the source's last record below it older than the time limit; otherwise (and without this)
   *  it is a mismatch: records the mirror never got. */
  readonly destinationRetention?: Retention;
}

/** Committed records of [from, to) in offset order, fetched in chunks (no consumer group). A log
 *  that holds nothing more below `to` (it ends early, or the range was deleted) is an error, never
 *  a silent end: two truncated reads must not compare equal. A batch whose CRC does not match its
 *  bytes is CORRUPT_RECORD_BATCH (details: baseOffset). `onAborted` sees the records of aborted
 *  transactions (what only read_uncommitted consumers see). `wanted`: a committed batch it refuses
 *  is passed over without decoding its records (a search that its header already rules out). */
export async function* readCommitted(
  cluster: RawCluster,
  topic: string,
  partition: number,
  from: bigint,
  to: bigint,
  onAborted?: (record: DecodedRecord) => void,
  wanted?: (batch: RawBatch) => boolean,
): AsyncGenerator<DecodedRecord> {
  let next = from;
  let emptyReads = 0;
  while (next < to) {
    const leader = await cluster.leaderOf(topic, partition);
    const [fetched] = await cluster.fetch({
      leader,
      partitions: [{ topic, partition, fetchOffset: next, maxBytes: 4 * 1024 * 1024 }],
      maxWaitMs: 100,
      maxBytes: 4 * 1024 * 1024,
      isolationLevel: IsolationLevel.READ_COMMITTED,
    });
    if (fetched === undefined) throw new KmirrorError('CLUSTER_UNREACHABLE', `verify: no fetch answer for ${topic}-${partition} at ${next}`, { topic, partition });
    if (fetched.error) throw new KafkaAnswerError(`verify: fetch ${topic}-${partition} at ${next}: ${fetched.error.type}`, fetched.error);
    if (fetched.batches.length === 0 && fetched.corrupt !== undefined) {
      throw new KmirrorError('CORRUPT_RECORD_BATCH', `verify: ${topic}-${partition}: the record batch at offset ${fetched.corrupt.offset} is corrupt (${fetched.corrupt.reason})`, {
        topic,
        partition,
        baseOffset: fetched.corrupt.offset.toString(),
      });
    }
    if (fetched.batches.length === 0) {
      // The last stable offset may lag a moment behind a just-committed transaction: a few tries.
      if (++emptyReads >= 20) {
        throw new KmirrorError('OFFSET_DIVERGENCE', `verify: ${topic}-${partition} holds no record at or after offset ${next}, below ${to} (its log ends at ${fetched.lastStableOffset} for read_committed)`, {
          topic,
          partition,
          offset: next.toString(),
        });
      }
      continue;
    }
    emptyReads = 0;
    const aborted = new AbortedTransactions(fetched.abortedTransactions);
    for (const batch of fetched.batches) {
      if (batch.lastOffset >= next && !crcValid(batch)) {
        throw new KmirrorError('CORRUPT_RECORD_BATCH', `verify: the batch of ${topic}-${partition} at offsets ${batch.baseOffset}–${batch.lastOffset} fails its CRC check`, {
          topic,
          partition,
          baseOffset: batch.baseOffset.toString(),
        });
      }
      const hidden = aborted.isAborted(batch);
      if (batch.lastOffset < next) continue;
      if (!hidden && (wanted === undefined || wanted(batch))) {
        for (const record of decodeRecords(batch)) {
          if (record.offset >= next && record.offset < to) yield record;
        }
      } else if (hidden && onAborted !== undefined && !batch.isControl) {
        for (const record of decodeRecords(batch)) if (record.offset >= next && record.offset < to) onAborted(record);
      }
      next = batch.lastOffset + 1n;
    }
  }
}

const show = (b: Buffer | null): string => (b === null ? 'null' : b.length > 64 ? `${b.subarray(0, 64).toString('hex')}… (${b.length} bytes)` : b.toString('hex'));
const showHeaders = (r: DecodedRecord): string => JSON.stringify(r.headers.map((h) => [h.key, h.value === null ? null : h.value.toString('hex')]));

function firstDifference(partition: number, s: DecodedRecord, d: DecodedRecord): VerifyMismatch | undefined {
  const at = { partition, offset: s.offset.toString() };
  if (!bufEq(s.key, d.key)) return { ...at, field: 'key', source: show(s.key), destination: show(d.key) };
  if (!bufEq(s.value, d.value)) return { ...at, field: 'value', source: show(s.value), destination: show(d.value) };
  if (showHeaders(s) !== showHeaders(d)) return { ...at, field: 'headers', source: showHeaders(s), destination: showHeaders(d) };
  if (s.timestamp !== d.timestamp) return { ...at, field: 'timestamp', source: s.timestamp.toString(), destination: d.timestamp.toString() };
  return undefined;
}

function bufEq(a: Buffer | null, b: Buffer | null): boolean {
  return a === null || b === null ? a === b : a.equals(b);
}

/** Whether the destination's retention explains its log start above the source's: a size limit
 *  can remove any prefix; a time limit only records older than it (a deleted segment's newest
 *  record is older than now − retention.ms, so the last record below the start is too). */
async function retentionExplains(source: RawCluster, topic: string, partition: number, sourceStart: bigint, destinationStart: bigint, retention: Retention | undefined): Promise<boolean> {
  if (retention === undefined) return false;
  if (retention.bySize) return true;
  if (retention.ms === null) return false;
  const window = destinationStart - sourceStart < 1_000n ? sourceStart : destinationStart - 1_000n;
  let last: DecodedRecord | undefined;
  for await (const r of readCommitted(source, topic, partition, window, destinationStart)) last = r;
  return last !== undefined && last.timestamp < BigInt(Date.now()) - retention.ms;
}

/**
 * Compare one partition over [source log start, to). `to` defaults to the end of the longer of the
 * two logs (read_committed), so a missing and an extra record both show. The destination must not
 * start above the source's log start.
 */
export async function verifyPartition(source: RawCluster, destination: RawCluster, topic: string, partition: number, to?: bigint, options: VerifyOptions = {}): Promise<PartitionVerification> {
  const [srcStart, dstStart, srcEnd, dstEnd] = await Promise.all([
    source.listOffsets(topic, [partition], 'earliest'),
    destination.listOffsets(topic, [partition], 'earliest'),
    source.listOffsets(topic, [partition], 'latest', IsolationLevel.READ_COMMITTED),
    destination.listOffsets(topic, [partition], 'latest', IsolationLevel.READ_COMMITTED),
  ]);
  const sourceStart = srcStart.get(partition)!;
  const destinationStart = dstStart.get(partition)!;
  // Without `to`, both whole logs: a destination longer than its source shows as extra records.
  const end = to ?? (srcEnd.get(partition)! > dstEnd.get(partition)! ? srcEnd.get(partition)! : dstEnd.get(partition)!);
  const removed = destinationStart > sourceStart && (await retentionExplains(source, topic, partition, sourceStart, destinationStart, options.destinationRetention));
  const from = removed ? (destinationStart < end ? destinationStart : end) : sourceStart;
  const base = {
    partition,
    from: from.toString(),
    to: end.toString(),
    ...(removed ? { removedByDestinationRetention: { from: sourceStart.toString(), to: from.toString() } } : {}),
  };
  // The destination may keep mirrored records below a log start the source's retention moved
  // later; it must not start above it (records the mirror never got) unless its own retention
  // removed them.
  if (destinationStart > from) {
    return {
      ...base,
      equal: false,
      recordsCompared: 0,
      firstMismatch: { partition, offset: from.toString(), field: 'log-start', source: from.toString(), destination: destinationStart.toString() },
    };
  }
  // Each side is read up to its own end at most: a shorter side shows as missing records.
  const min = (a: bigint, b: bigint) => (a < b ? a : b);
  const src = readCommitted(source, topic, partition, from, min(end, srcEnd.get(partition)!));
  // The destination's aborted records must be gap fillers, never records the source aborted.
  let abortedData: DecodedRecord | undefined;
  const dst = readCommitted(destination, topic, partition, from, min(end, dstEnd.get(partition)!), (r) => {
    if (abortedData === undefined && !isGapFiller(r)) abortedData = r;
  });
  let compared = 0;
  // A corrupt batch on either side ends the comparison as a mismatch at that batch.
  let corrupt: VerifyMismatch | undefined;
  const next = async (records: AsyncGenerator<DecodedRecord>, side: 'source' | 'destination'): Promise<IteratorResult<DecodedRecord>> => {
    try {
      return await records.next();
    } catch (err) {
      if (!isKmirrorError(err, 'CORRUPT_RECORD_BATCH')) throw err;
      const offset = String(err.details['baseOffset']);
      corrupt ??= { partition, offset, field: `corrupt-batch-on-${side}`, source: side === 'source' ? err.message : '', destination: side === 'destination' ? err.message : '' };
      return { done: true, value: undefined };
    }
  };
  for (;;) {
    const [s, d] = await Promise.all([next(src, 'source'), next(dst, 'destination')]);
    if (corrupt !== undefined) return { ...base, equal: false, recordsCompared: compared, firstMismatch: corrupt };
    if (abortedData !== undefined) {
      const r = abortedData;
      return {
        ...base,
        equal: false,
        recordsCompared: compared,
        firstMismatch: { partition, offset: r.offset.toString(), field: 'aborted-data-on-destination', source: 'skipped (read_committed)', destination: `key ${show(r.key)} value ${show(r.value)}` },
      };
    }
    if (s.done && d.done) return { ...base, equal: true, recordsCompared: compared };
    if (s.done || d.done || s.value.offset !== d.value.offset) {
      const missingOnDest = d.done || (!s.done && s.value.offset < d.value.offset);
      const offset = missingOnDest ? s.value!.offset : d.value!.offset;
      return {
        ...base,
        equal: false,
        recordsCompared: compared,
        firstMismatch: {
          partition,
          offset: offset.toString(),
          field: missingOnDest ? 'missing-on-destination' : 'missing-on-source',
          source: s.done ? 'end' : s.value.offset.toString(),
          destination: d.done ? 'end' : d.value.offset.toString(),
        },
      };
    }
    const mismatch = firstDifference(partition, s.value, d.value);
    if (mismatch) return { ...base, equal: false, recordsCompared: compared, firstMismatch: mismatch };
    compared++;
  }
}

/** The boundary checksum of an offset read_committed consumers skip (a transaction marker, an
 *  aborted record, a filled gap): what is at that offset matters, not which marker or filler. */
export function invisibleChecksum(offset: bigint): string {
  return createHash('sha256').update(`invisible:${offset}`).digest('hex');
}

/** SHA-256 over a record's offset, timestamp, key, value and headers: the boundary checksum
 *  recorded at failover and compared at failback (DESIGN §6). */
export function recordChecksum(record: DecodedRecord): string {
  const hash = createHash('sha256');
  const field = (b: Buffer | null): void => {
    const len = Buffer.alloc(4);
    len.writeInt32BE(b === null ? -1 : b.length);
    hash.update(len);
    if (b) hash.update(b);
  };
  hash.update(`${record.offset}:${record.timestamp}:`);
  field(record.key);
  field(record.value);
  for (const h of record.headers) {
    field(Buffer.from(h.key, 'utf8'));
    field(h.value);
  }
  return hash.digest('hex');
}
