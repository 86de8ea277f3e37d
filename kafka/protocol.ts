// The one module that uses kafkajs internals. kafkajs' public API cannot fetch without a consumer
// group, and its producer re-encodes records (it cannot write null header values and regroups
// duplicate header keys). So this module borrows kafkajs' connections (cluster metadata, SASL,
// request framing, correlation) and speaks two requests itself, carrying record batches as raw
// bytes:
//
//   Fetch v11 (request)  replica_id=-1 max_wait min_bytes max_bytes isolation session_id
//                        session_epoch [topic [partition current_leader_epoch=-1 fetch_offset
//                        log_start_offset=-1 partition_max_bytes]] [forgotten: topic [partition]]
//                        rack_id=""   (session_id=0 epoch=-1 without a FetchSession: KIP-227)
//            (response) throttle error session [topic [partition error hw lso log_start
//                        [aborted: producer_id first_offset] preferred_replica records]]
//   Produce v8 (request) transactional_id acks timeout [topic [partition records]]
//            (response) [topic [partition error base_offset log_append_time log_start
//                        [record_errors: batch_index message?] error_message?]] throttle
//
// Transactions (gap filling) use kafkajs' own FindCoordinator, InitProducerId, AddPartitionsToTxn
// and EndTxn requests at the transaction coordinator.
//
// Kafka 4.x brokers accept both versions (KIP-896 removed only older ones); docs/compatibility.md.
import { createRequire } from 'node:module';
import type { Kafka } from 'kafkajs';
import pRetry from 'p-retry';
import { isKmirrorError, KmirrorError } from '../domain/errors.ts';
import { controlType, splitFetchedBatches, type InPlaceBatch, type RawBatch } from './wire.ts';
import { kafkaCode } from './errors.ts';
import { largeBuffers } from './buffer-pool.ts';

const require = createRequire(import.meta.url);
const { createErrorFromCode } = require('kafkajs/src/protocol/error') as {
  createErrorFromCode: (code: number) => Error & { type: string; retriable: boolean };
};

// --- request framing without copies -------------------------------------------------------
// kafkajs frames a request (protocol/request.js) by copying its body into one encoder behind the
// header and that encoder into another behind the size: three copies of every produce request, in
// buffers grown to the next power of two and zero-filled — a 1.1 MiB produce allocated and zeroed
// 2 × 2 MiB (about a tenth of the copier's main thread in a CPU profile, and garbage that brings
// the next major collection closer). So the bodies this module sends reserve FRAME_ROOM
// bytes in front of them, and an encoder that has written only a header (≤ the room) *adopts* the
// body: it copies its few header bytes into the room and takes the body's buffer as its own. The
// outer encoder then adopts that one the same way, so a request reaches the socket in the buffer it
// was encoded into. Any other write clears the adoption mark (it may reallocate), and grown
// encoders take what they need (at least double), unzeroed: bytes past `offset` are never read.
export const FRAME_ROOM = 512;
const ROOM = Symbol('kmirror.frameRoom');
interface KafkajsEncoder {
  buf: Buffer;
  offset: number;
  [ROOM]?: { readonly whole: Buffer; readonly start: number };
  ensureAvailable(length: number): void;
  writeEncoder(value: KafkajsEncoder): KafkajsEncoder;
}
const EncoderPrototype = (require('kafkajs/src/protocol/encoder') as { prototype: KafkajsEncoder }).prototype;
const copyingWriteEncoder = EncoderPrototype.writeEncoder;
EncoderPrototype.ensureAvailable = function ensureAvailable(this: KafkajsEncoder, length: number): void {
  delete this[ROOM];
  const needed = this.offset + length;
  if (needed <= this.buf.length) return;
  const grown = Buffer.allocUnsafe(Math.max(needed, this.buf.length * 2));
  this.buf.copy(grown, 0, 0, this.offset);
  this.buf = grown;
};
EncoderPrototype.writeEncoder = function writeEncoder(this: KafkajsEncoder, value: KafkajsEncoder): KafkajsEncoder {
  const room = value[ROOM];
  if (room === undefined || this.offset > room.start) return copyingWriteEncoder.call(this, value);
  const start = room.start - this.offset;
  this.buf.copy(room.whole, start, 0, this.offset);
  this.buf = room.whole.subarray(start, room.start + value.offset);
  this.offset += value.offset;
  this[ROOM] = { whole: room.whole, start };
  return this;
};

// kafkajs assembles a response from the chunks a socket delivers (network/connection.js
// processData) and copies them into one buffer whenever it holds more than one — including the
// empty remainder it keeps after each response. kafka/socket.ts delivers whole responses, so that
// empty remainder is dropped first and a whole response is used as it is, uncopied.
interface KafkajsConnection {
  chunks: Buffer[];
  processData(rawData: Buffer): void;
}
const ConnectionPrototype = (require('kafkajs/src/network/connection') as { prototype: KafkajsConnection }).prototype;
const assemblingProcessData = ConnectionPrototype.processData;
ConnectionPrototype.processData = function processData(this: KafkajsConnection, rawData: Buffer): void {
  if (this.chunks.length === 1 && this.chunks[0]!.length === 0) this.chunks = [];
  assemblingProcessData.call(this, rawData);
};

/** Bodies already framed once: sent again (a retry), one is copied, so a request still queued on a
 *  socket never has its header rewritten. */
const framed = new WeakSet<Buffer>();

/** A request body (written behind FRAME_ROOM bytes by Writer.done) that kafkajs' framing adopts
 *  without copying the first time it is sent. Exported for its unit test. */
export function body(whole: Buffer): Pick<KafkajsEncoder, 'buf' | 'offset' | typeof ROOM> & { buffer: Buffer } {
  const buffer = whole.subarray(FRAME_ROOM);
  if (framed.has(whole)) return { buf: buffer, buffer, offset: buffer.length };
  framed.add(whole);
  return { buf: buffer, buffer, offset: buffer.length, [ROOM]: { whole, start: FRAME_ROOM } };
}

/** Partitions of several topics: topic → partition numbers. */
export type PartitionsByTopic = ReadonlyMap<string, readonly number[]>;

/** The partitions named, by topic (in first-appearance order). */
export function partitionsByTopic(items: Iterable<{ readonly topic: string; readonly partition: number }>): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const { topic, partition } of items) {
    const list = out.get(topic);
    if (list === undefined) out.set(topic, [partition]);
    else list.push(partition);
  }
  return out;
}

/** Set a partition's value in a map by topic, then partition (the shape per-partition answers take). */
export function setByTopic<V>(out: Map<string, Map<number, V>>, topic: string, partition: number, value: V): void {
  const inner = out.get(topic);
  if (inner === undefined) out.set(topic, new Map([[partition, value]]));
  else inner.set(partition, value);
}

/** Topics per Metadata request in RawCluster.refreshLeaders (a response of 1,000 topics of 10
 *  partitions is ~200 KiB). */
const METADATA_TOPICS_PER_REQUEST = 1_000;
/** Topics read at once when such a request is refused and its topics are read one by one. */
const METADATA_FALLBACK_CONCURRENCY = 16;

const API_PRODUCE = 0;
const API_FETCH = 1;
const API_LIST_OFFSETS = 2;
const API_OFFSET_FOR_LEADER_EPOCH = 23;
const API_INCREMENTAL_ALTER_CONFIGS = 44;
/** DescribeConfigs/IncrementalAlterConfigs resource type of a topic, and the SET/DELETE operations. */
const RESOURCE_TOPIC = 2;
const CONFIG_SET = 0;
const CONFIG_DELETE = 1;

export const IsolationLevel = { READ_UNCOMMITTED: 0, READ_COMMITTED: 1 } as const;

// --- the slice of kafkajs internals we use, typed ---------------------------------------------
interface InternalBroker {
  nodeId: number;
  connectionPool: { send(protocolRequest: ProtocolRequest): Promise<unknown> };
  addPartitionsToTxn(req: { transactionalId: string; producerId: string; producerEpoch: number; topics: { topic: string; partitions: number[] }[] }): Promise<unknown>;
  endTxn(req: { transactionalId: string; producerId: string; producerEpoch: number; transactionResult: boolean }): Promise<unknown>;
  initProducerId(req: { transactionalId?: string | null; transactionTimeout: number }): Promise<{
    producerId: string;
    producerEpoch: number;
  }>;
  deleteRecords(req: { topics: { topic: string; partitions: { partition: number; offset: string }[] }[] }): Promise<unknown>;
  offsetCommit(req: {
    groupId: string;
    groupGenerationId: number;
    memberId: string;
    topics: { topic: string; partitions: { partition: number; offset: string }[] }[];
  }): Promise<unknown>;
  metadata(topics: string[]): Promise<{ topicMetadata: { topic: string; partitionMetadata: PartitionMetadata[] }[] }>;
  listOffsets(req: {
    replicaId?: number;
    isolationLevel: number;
    topics: { topic: string; partitions: { partition: number; timestamp: number }[] }[];
  }): Promise<{ responses: { topic: string; partitions: { partition: number; errorCode: number; offset: string }[] }[] }>;
}
export interface PartitionMetadata {
  partitionId: number;
  leader: number;
  replicas: number[];
  isr: number[];
  leaderEpoch?: number;
  partitionErrorCode: number;
}
interface InternalCluster {
  /** coordinatorType 1 = transaction coordinator. */
  findGroupCoordinator(req: { groupId: string; coordinatorType?: number }): Promise<InternalBroker>;
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  refreshMetadata(): Promise<void>;
  findBroker(req: { nodeId: number }): Promise<InternalBroker>;
  getNodeIds(): number[];
}
interface ProtocolRequest {
  request: { apiKey: number; apiVersion: number; apiName: string; encode: () => Promise<unknown> };
  response: { decode: (payload: Buffer) => Promise<unknown>; parse: (decoded: unknown) => Promise<unknown> };
  requestTimeout?: number;
}

function createCluster(kafka: Kafka): InternalCluster {
  const symbol = Object.getOwnPropertySymbols(kafka).find((s) => s.description === 'private:Kafka:createCluster');
  if (symbol === undefined) throw new Error('kafkajs internals changed: private:Kafka:createCluster not found (pinned kafkajs 2.2.4 expected)');
  const factory = (kafka as unknown as Record<symbol, (opts: object) => InternalCluster>)[symbol]!;
  return factory({ allowAutoTopicCreation: false, metadataMaxAge: 60_000 });
}


// --- tiny big-endian writer/reader ------------------------------------------------------------
class Writer {
  private parts: (Buffer | InPlaceBatch)[] = [];
  private fixed(size: number, write: (b: Buffer) => void): this {
    const b = Buffer.allocUnsafe(size);
    write(b);
    this.parts.push(b);
    return this;
  }
  int8(v: number): this {
    return this.fixed(1, (b) => b.writeInt8(v));
  }
  int16(v: number): this {
    return this.fixed(2, (b) => b.writeInt16BE(v));
  }
  int32(v: number): this {
    return this.fixed(4, (b) => b.writeInt32BE(v));
  }
  int64(v: bigint): this {
    return this.fixed(8, (b) => b.writeBigInt64BE(v));
  }
  string(v: string | null): this {
    if (v === null) return this.int16(-1);
    const s = Buffer.from(v, 'utf8');
    this.int16(s.length);
    this.parts.push(s);
    return this;
  }
  bytes(value: Buffer | readonly Buffer[] | InPlaceBatch): this {
    if (Buffer.isBuffer(value)) return this.bytes([value]);
    if ('writeInto' in value) {
      this.int32(value.size);
      this.parts.push(value);
      return this;
    }
    this.int32(value.reduce((n, c) => n + c.length, 0));
    this.parts.push(...value);
    return this;
  }
  /** The request body behind FRAME_ROOM unused bytes, for body(): one buffer (a large one from
   *  kafka/buffer-pool.ts), each part copied (or written, for an InPlaceBatch) into it once. */
  done(): Buffer {
    const size = this.parts.reduce((n, p) => n + (Buffer.isBuffer(p) ? p.length : p.size), FRAME_ROOM);
    const out = largeBuffers.take(size);
    let at = FRAME_ROOM;
    for (const part of this.parts) {
      if (Buffer.isBuffer(part)) at += part.copy(out, at);
      else {
        part.writeInto(out, at);
        at += part.size;
      }
    }
    return out;
  }
}

class Reader {
  pos = 0;
  constructor(private readonly buf: Buffer) {}
  int8(): number {
    const v = this.buf.readInt8(this.pos);
    this.pos += 1;
    return v;
  }
  int16(): number {
    const v = this.buf.readInt16BE(this.pos);
    this.pos += 2;
    return v;
  }
  int32(): number {
    const v = this.buf.readInt32BE(this.pos);
    this.pos += 4;
    return v;
  }
  int64(): bigint {
    const v = this.buf.readBigInt64BE(this.pos);
    this.pos += 8;
    return v;
  }
  string(): string | null {
    const n = this.int16();
    if (n < 0) return null;
    const s = this.buf.toString('utf8', this.pos, this.pos + n);
    this.pos += n;
    return s;
  }
  bytes(): Buffer {
    const n = this.int32();
    if (n < 0) return Buffer.alloc(0);
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
  array<T>(item: () => T): T[] {
    const n = this.int32();
    const out: T[] = [];
    for (let i = 0; i < n; i++) out.push(item());
    return out;
  }
}

// --- errors -----------------------------------------------------------------------------------
export interface KafkaErrorInfo {
  readonly code: number;
  readonly type: string;
  readonly retriable: boolean;
}
export function kafkaError(code: number): KafkaErrorInfo | undefined {
  if (code === 0) return undefined;
  const err = createErrorFromCode(code);
  return { code, type: err.type, retriable: err.retriable };
}

// --- fetch ------------------------------------------------------------------------------------
export interface FetchPartitionRequest {
  readonly topic: string;
  readonly partition: number;
  readonly fetchOffset: bigint;
  readonly maxBytes: number;
}
export interface FetchedPartition {
  readonly topic: string;
  readonly partition: number;
  readonly error?: KafkaErrorInfo;
  readonly highWatermark: bigint;
  readonly lastStableOffset: bigint;
  readonly logStartOffset: bigint;
  readonly abortedTransactions: readonly { producerId: bigint; firstOffset: bigint }[];
  /** Complete batches only; may start before fetchOffset (a batch is returned whole). */
  readonly batches: readonly RawBatch[];
  /** The batch after `batches` has a header that cannot be true (wire.ts splitFetchedBatches). */
  readonly corrupt?: { readonly offset: bigint; readonly reason: string };
  /** Bytes of the record set as received (what this partition's data holds in memory). */
  readonly bytes: number;
}

/** Requests grouped by topic, in first-appearance order (the wire nests partitions under topics). */
function byTopic<T extends { readonly topic: string }>(items: readonly T[]): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const list = out.get(item.topic);
    if (list === undefined) out.set(item.topic, [item]);
    else list.push(item);
  }
  return out;
}

// --- incremental fetch sessions (KIP-227) --------------------------------------------------
const FETCH_SESSION_ID_NOT_FOUND = 70;
const INVALID_FETCH_SESSION_EPOCH = 71;
/** A partition as one string (map keys across kmirror). */
export const partitionKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;
const keyOf = (p: { readonly topic: string; readonly partition: number }): string => partitionKey(p.topic, p.partition);

/** What one fetch request carries: the partitions to (re)state, those to drop from the session. */
export interface FetchSessionRequest {
  readonly sessionId: number;
  readonly epoch: number;
  readonly partitions: readonly FetchPartitionRequest[];
  readonly forgotten: readonly { readonly topic: string; readonly partition: number }[];
}

/**
 * One fetcher's incremental fetch session with one broker (KIP-227). The broker keeps the session's
 * partitions and their fetch positions, so a request names only the partitions whose position
 * changed since the last request (and those to forget), and a response holds only partitions with
 * records, an error, or a changed high watermark / LSO / log start: a partition left out of a
 * response has nothing new. At thousands of mostly idle partitions that spares the source broker
 * (and the fetcher) a pass over every partition per fetch.
 *
 * Contract: the partitions of `request()` are every partition the fetcher wants — any other the
 * session holds is forgotten; requests run one at a time (`serial`: the epochs are a sequence);
 * `answered` after a response without a top-level error, `reset` after anything else (the broker
 * may or may not have taken the request: the next request is a full one that opens a new session).
 */
export class FetchSession {
  private id = 0;
  /** 0: the next request is a full one asking for a new session; 1…: incremental ones in it. */
  private epoch = 0;
  /** The session's partitions as the broker holds them: what was last sent for each. */
  private readonly held = new Map<string, FetchPartitionRequest>();
  private tail: Promise<unknown> = Promise.resolve();
  readonly stats = { full: 0, incremental: 0, resets: 0 };

  /** Run `fn` after every request of this session that is still in flight. */
  serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn);
    this.tail = run.catch(() => undefined);
    return run;
  }

  request(partitions: readonly FetchPartitionRequest[]): FetchSessionRequest {
    if (this.epoch === 0) return { sessionId: 0, epoch: 0, partitions, forgotten: [] };
    const wanted = new Set(partitions.map(keyOf));
    const changed = partitions.filter((p) => {
      const held = this.held.get(keyOf(p));
      return held === undefined || held.fetchOffset !== p.fetchOffset || held.maxBytes !== p.maxBytes;
    });
    const forgotten = [...this.held.values()].filter((p) => !wanted.has(keyOf(p))).map(({ topic, partition }) => ({ topic, partition }));
    return { sessionId: this.id, epoch: this.epoch, partitions: changed, forgotten };
  }

  /** The broker answered `sent` (no top-level error) with session id `sessionId`. */
  answered(sent: FetchSessionRequest, sessionId: number): void {
    if (sent.epoch === 0) {
      this.stats.full++;
      this.held.clear();
      // Session id 0: the broker made none (its session cache is full): full requests go on.
      if (sessionId === 0) return;
      this.id = sessionId;
      this.epoch = 1;
    } else {
      this.stats.incremental++;
      for (const p of sent.forgotten) this.held.delete(keyOf(p));
      this.epoch = this.epoch === 0x7fffffff ? 1 : this.epoch + 1;
    }
    for (const p of sent.partitions) this.held.set(keyOf(p), p);
  }

  reset(): void {
    if (this.epoch !== 0) this.stats.resets++;
    this.forget();
  }

  /** The request that ends the session on the broker (epoch -1, FINAL_EPOCH, no partitions), or
   *  undefined when none is open; the session is forgotten here either way. */
  closing(): FetchSessionRequest | undefined {
    const open = this.epoch !== 0 ? { sessionId: this.id, epoch: -1, partitions: [], forgotten: [] } : undefined;
    this.forget();
    return open;
  }

  private forget(): void {
    this.id = 0;
    this.epoch = 0;
    this.held.clear();
  }
}

function encodeFetch(req: {
  partitions: readonly FetchPartitionRequest[];
  maxWaitMs: number;
  minBytes: number;
  maxBytes: number;
  isolationLevel: number;
  session?: FetchSessionRequest;
}): Buffer {
  const w = new Writer()
    .int32(-1)
    .int32(req.maxWaitMs)
    .int32(req.minBytes)
    .int32(req.maxBytes)
    .int8(req.isolationLevel)
    .int32(req.session?.sessionId ?? 0)
    .int32(req.session?.epoch ?? -1);
  const topics = byTopic(req.partitions);
  w.int32(topics.size);
  for (const [topic, partitions] of topics) {
    w.string(topic).int32(partitions.length);
    for (const p of partitions) w.int32(p.partition).int32(-1).int64(p.fetchOffset).int64(-1n).int32(p.maxBytes);
  }
  const forgotten = byTopic(req.session?.forgotten ?? []);
  w.int32(forgotten.size);
  for (const [topic, partitions] of forgotten) {
    w.string(topic).int32(partitions.length);
    for (const p of partitions) w.int32(p.partition);
  }
  return w.string('').done();
}

function decodeFetch(payload: Buffer): { errorCode: number; sessionId: number; partitions: FetchedPartition[] } {
  const r = new Reader(payload);
  r.int32(); // throttle
  const errorCode = r.int16();
  const sessionId = r.int32();
  const partitions: FetchedPartition[] = [];
  r.array(() => {
    const topic = r.string() ?? '';
    r.array(() => {
      const partition = r.int32();
      const code = r.int16();
      const highWatermark = r.int64();
      const lastStableOffset = r.int64();
      const logStartOffset = r.int64();
      const abortedTransactions = r.array(() => ({ producerId: r.int64(), firstOffset: r.int64() }));
      r.int32(); // preferred read replica
      const records = r.bytes();
      const error = kafkaError(code);
      // A batch whose header is damaged ends this partition's data, not the whole answer.
      const { batches, corrupt } = error ? { batches: [], corrupt: undefined } : splitFetchedBatches(records);
      partitions.push({
        topic,
        partition,
        ...(error ? { error } : {}),
        highWatermark,
        lastStableOffset,
        logStartOffset,
        abortedTransactions,
        batches,
        ...(corrupt ? { corrupt } : {}),
        bytes: records.length,
      });
    });
  });
  return { errorCode, sessionId, partitions };
}

/**
 * Aborted-transaction filter for one read_committed fetch, as the Java consumer applies it: walk
 * the batches in offset order (control batches included); a producer becomes "aborting" when a
 * batch reaches the first offset of one of its aborted transactions in the response's list, and
 * stops being so at its ABORT marker — so its later, committed transactions are not dropped.
 * Control batches are never visible.
 */
export class AbortedTransactions {
  private readonly pending: { producerId: bigint; firstOffset: bigint }[];
  private readonly aborting = new Set<bigint>();
  constructor(list: readonly { producerId: bigint; firstOffset: bigint }[]) {
    this.pending = [...list].sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0));
  }
  /** Call for every batch, in offset order. True when read_committed consumers never see it. */
  isAborted(batch: RawBatch): boolean {
    while (this.pending.length > 0 && this.pending[0]!.firstOffset <= batch.lastOffset) this.aborting.add(this.pending.shift()!.producerId);
    if (batch.isControl) {
      if (controlType(batch) === 'abort') this.aborting.delete(batch.producerId);
      return true;
    }
    return batch.isTransactional && this.aborting.has(batch.producerId);
  }
}

// --- produce ----------------------------------------------------------------------------------
export interface ProducePartitionRequest {
  readonly topic: string;
  readonly partition: number;
  /** Exactly one record batch (Produce v3+ allows one per partition per request), possibly in
   *  chunks (a re-stamped header and the original records) or written in place (merged batches). */
  readonly batch: Buffer | readonly Buffer[] | InPlaceBatch;
}
export interface ProducedPartition {
  readonly topic: string;
  readonly partition: number;
  readonly error?: KafkaErrorInfo;
  readonly errorMessage?: string;
  readonly baseOffset: bigint;
  readonly logStartOffset: bigint;
}

function encodeProduce(req: { partitions: readonly ProducePartitionRequest[]; acks: number; timeoutMs: number; transactionalId?: string }): Buffer {
  const topics = byTopic(req.partitions);
  const w = new Writer().string(req.transactionalId ?? null).int16(req.acks).int32(req.timeoutMs).int32(topics.size);
  for (const [topic, partitions] of topics) {
    w.string(topic).int32(partitions.length);
    for (const p of partitions) w.int32(p.partition).bytes(p.batch);
  }
  return w.done();
}

function decodeProduce(payload: Buffer): ProducedPartition[] {
  const r = new Reader(payload);
  const out: ProducedPartition[] = [];
  r.array(() => {
    const topic = r.string() ?? '';
    r.array(() => {
      const partition = r.int32();
      const code = r.int16();
      const baseOffset = r.int64();
      r.int64(); // log append time
      const logStartOffset = r.int64();
      const recordErrors = r.array(() => ({ index: r.int32(), message: r.string() }));
      const message = r.string() ?? recordErrors.map((e) => `batch ${e.index}: ${e.message ?? ''}`).join('; ');
      const error = kafkaError(code);
      out.push({ topic, partition, ...(error ? { error, errorMessage: message } : {}), baseOffset, logStartOffset });
    });
  });
  return out;
}

/** A transactional producer's identity (InitProducerId with a transactional id). */
export interface TransactionalProducer {
  readonly transactionalId: string;
  readonly producerId: bigint;
  readonly producerEpoch: number;
}

// --- the session ------------------------------------------------------------------------------
/**
 * Raw access to one cluster: leader lookup, raw fetch, raw produce, producer ids, list offsets.
 * Owns its connections; call close().
 */
export class RawCluster {
  private readonly cluster: InternalCluster;
  /** The connection being made or made: callers that ask at once (a copier's first requests go
   *  out together) share it, rather than each reading the cluster's full metadata. */
  private connecting: Promise<void> | undefined;
  /**
   * The leader of every partition per topic (-1: none known), read with Metadata requests naming
   * the topics wanted (partitions, refreshLeaders). (kafkajs' cluster keeps one snapshot of all its
   * "target topics", and once one of them is deleted every refresh fails with
   * UNKNOWN_TOPIC_OR_PARTITION — a long-lived session would then be unable to look up any topic.) Only leaders are kept: a copier of 500 partitions of
   * topics of 10,000 would otherwise hold the full metadata (replicas, ISR) of all 10,000, and a
   * worker runs one such cluster pair per copy activity. kafkajs' cluster is used for the broker
   * list only (refreshBrokers).
   */
  private readonly leaders = new Map<string, Int32Array>();

  constructor(kafka: Kafka) {
    this.cluster = createCluster(kafka);
  }

  async connect(): Promise<void> {
    this.connecting ??= (async () => {
      await this.cluster.connect();
      await this.refreshBrokers();
    })().catch((err: unknown) => {
      this.connecting = undefined; // the next call tries again
      throw err;
    });
    return this.connecting;
  }

  /**
   * Read the broker list (getNodeIds, findBroker). kafkajs can only ask for it with the metadata of
   * every topic in the cluster (it sends an empty topic list as null, which means all), and would
   * keep that snapshot — ~0.5 KiB per partition of the cluster, per RawCluster: 150 MiB in a
   * process of 40 of them on a cluster of 10,000 partitions. The topics are dropped at once.
   */
  private async refreshBrokers(): Promise<void> {
    await this.cluster.refreshMetadata();
    const pool = (this.cluster as unknown as { brokerPool?: { metadata?: { topicMetadata?: unknown[] } } }).brokerPool;
    if (pool?.metadata?.topicMetadata !== undefined) pool.metadata.topicMetadata = [];
  }

  async close(): Promise<void> {
    if (this.connecting === undefined) return;
    this.connecting = undefined;
    await this.cluster.disconnect();
  }

  /**
   * Partition metadata of a topic (leader, replicas, ISR), read from the cluster now; the leaders
   * are kept for leaderOf. A topic that does not exist is UNKNOWN_TOPIC; transient answers (no
   * leader yet, a topic created a moment ago) are retried for up to `metadataWaitMs`.
   */
  async partitions(topic: string): Promise<PartitionMetadata[]> {
    await this.connect();
    const partitions = await this.readMetadata(topic);
    this.keepLeaders(topic, partitions);
    return partitions;
  }

  /**
   * Read the leaders of many topics, in Metadata requests of up to METADATA_TOPICS_PER_REQUEST
   * topics (one per topic would be thousands of requests for a mirror of thousands of topics).
   * A request refused as a whole (kafkajs refuses an answer in which any topic or partition has an
   * error: a topic missing, a partition with no leader yet) is read again topic by topic (16 at a
   * time), with `partitions`' waits; `skipUnknown` leaves topics the cluster lacks out (else UNKNOWN_TOPIC).
   * Returns the topics that were left out.
   */
  async refreshLeaders(topics: Iterable<string>, skipUnknown = false): Promise<Set<string>> {
    await this.connect();
    const all = [...new Set(topics)];
    const missing = new Set<string>();
    for (let i = 0; i < all.length; i += METADATA_TOPICS_PER_REQUEST) {
      const chunk = all.slice(i, i + METADATA_TOPICS_PER_REQUEST);
      try {
        const broker = await this.broker(this.cluster.getNodeIds()[0]!);
        const { topicMetadata } = await broker.metadata(chunk);
        for (const t of topicMetadata) this.keepLeaders(t.topic, t.partitionMetadata);
        for (const topic of chunk) if (!this.leaders.has(topic)) throw new Error(`no metadata for ${topic}`);
      } catch {
        let next = 0;
        const reader = async (): Promise<void> => {
          while (next < chunk.length) {
            const topic = chunk[next++]!;
            try {
              await this.partitions(topic);
            } catch (err) {
              if (!skipUnknown || !isKmirrorError(err, 'UNKNOWN_TOPIC')) throw err;
              missing.add(topic);
            }
          }
        };
        await Promise.all(Array.from({ length: Math.min(METADATA_FALLBACK_CONCURRENCY, chunk.length) }, reader));
      }
    }
    return missing;
  }

  private keepLeaders(topic: string, partitions: readonly PartitionMetadata[]): void {
    const leaders = new Int32Array(partitions.reduce((n, p) => Math.max(n, p.partitionId + 1), 0)).fill(-1);
    for (const p of partitions) leaders[p.partitionId] = p.leader;
    this.leaders.set(topic, leaders);
  }

  private async readMetadata(topic: string, metadataWaitMs = 5_000): Promise<PartitionMetadata[]> {
    const deadline = Date.now() + metadataWaitMs;
    for (let attempt = 0; ; attempt++) {
      try {
        const nodeIds = this.cluster.getNodeIds();
        const broker = await this.broker(nodeIds[attempt % nodeIds.length]!);
        const { topicMetadata } = await broker.metadata([topic]);
        const partitions = topicMetadata.find((t) => t.topic === topic)?.partitionMetadata ?? [];
        if (partitions.length > 0) return [...partitions].sort((a, b) => a.partitionId - b.partitionId);
        throw Object.assign(new Error('no partitions'), { type: 'UNKNOWN_TOPIC_OR_PARTITION', retriable: true });
      } catch (err) {
        const { type, retriable } = err as { type?: string; retriable?: boolean };
        if (Date.now() >= deadline || !retriable) {
          if (type === 'UNKNOWN_TOPIC_OR_PARTITION') this.leaders.delete(topic);
          throw type === 'UNKNOWN_TOPIC_OR_PARTITION'
            ? new KmirrorError('UNKNOWN_TOPIC', `topic '${topic}' does not exist on ${this.description()}`, { topic })
            : new KmirrorError('CLUSTER_UNREACHABLE', `metadata of '${topic}' from ${this.description()}: ${type ?? (err as Error).message}`, { topic }, { cause: err });
        }
        await new Promise((r) => setTimeout(r, Math.min(1_000, 50 * 2 ** attempt)));
      }
    }
  }

  private description(): string {
    return `the cluster with brokers ${this.cluster.getNodeIds().join(', ')}`;
  }

  /** The partition's leader as last read; refresh=true (after a leader move) reads it again. */
  async leaderOf(topic: string, partition: number, refresh = false): Promise<number> {
    const leaderIn = (leaders: Int32Array | undefined) => (leaders !== undefined && partition < leaders.length ? leaders[partition]! : undefined);
    let leader = refresh ? undefined : leaderIn(this.leaders.get(topic));
    // A partition the cached leaders lack may have been added since (the topic grew): re-read once.
    if (leader === undefined) {
      await this.partitions(topic);
      leader = leaderIn(this.leaders.get(topic));
    }
    if (leader === undefined || leader < 0) {
      throw new KmirrorError('CLUSTER_UNREACHABLE', `no leader for ${topic}-${partition}`, { topic, partition });
    }
    return leader;
  }

  private async broker(nodeId: number): Promise<InternalBroker> {
    await this.connect();
    try {
      return await this.cluster.findBroker({ nodeId });
    } catch {
      // A broker that joined after connect(): re-read the broker list once.
      await this.refreshBrokers();
      return this.cluster.findBroker({ nodeId });
    }
  }

  /** Fetch from one leader, any topics. The partitions must all be led by `leader`. With a
   *  `session` (of this leader), `partitions` are all the fetcher wants and the answer holds only
   *  those with something new (FetchSession); a session the broker lost is reopened once. */
  async fetch(req: {
    leader: number;
    partitions: readonly FetchPartitionRequest[];
    maxWaitMs: number;
    minBytes?: number;
    maxBytes: number;
    isolationLevel: number;
    session?: FetchSession;
  }): Promise<FetchedPartition[]> {
    const send = (session?: FetchSessionRequest) =>
      this.sendFetch(req.leader, {
        partitions: session?.partitions ?? req.partitions,
        maxWaitMs: req.maxWaitMs,
        minBytes: req.minBytes ?? 1,
        maxBytes: req.maxBytes,
        isolationLevel: req.isolationLevel,
        ...(session ? { session } : {}),
      });
    const failed = (errorCode: number): KmirrorError => {
      const topLevel = kafkaError(errorCode)!;
      return new KmirrorError('CLUSTER_UNREACHABLE', `fetch from broker ${req.leader} failed: ${topLevel.type}`, { kafkaError: topLevel.type });
    };
    const session = req.session;
    if (session === undefined) {
      const result = await send();
      if (result.errorCode !== 0) throw failed(result.errorCode);
      return result.partitions;
    }
    return session.serial(async () => {
      for (let attempt = 0; ; attempt++) {
        const sent = session.request(req.partitions);
        let result;
        try {
          result = await send(sent);
        } catch (err) {
          session.reset();
          throw err;
        }
        if (result.errorCode === 0) {
          session.answered(sent, result.sessionId);
          return result.partitions;
        }
        session.reset();
        // The broker evicted the session (its cache is bounded) or lost track of its epoch: open a new one.
        const lost = result.errorCode === FETCH_SESSION_ID_NOT_FOUND || result.errorCode === INVALID_FETCH_SESSION_EPOCH;
        if (!lost || attempt > 0) throw failed(result.errorCode);
      }
    });
  }

  /** End `session` on broker `leader` (KIP-227's FINAL_EPOCH), after its requests in flight, so the
   *  broker's session cache — shared with every consumer of the cluster, 1,000 slots by default —
   *  does not keep it until it is evicted. Best effort: a broker that does not answer evicts it. */
  async closeFetchSession(leader: number, session: FetchSession): Promise<void> {
    await session.serial(async () => {
      const closing = session.closing();
      if (closing !== undefined) await this.sendFetch(leader, { partitions: [], maxWaitMs: 0, minBytes: 0, maxBytes: 1, isolationLevel: IsolationLevel.READ_UNCOMMITTED, session: closing });
    });
  }

  private async sendFetch(leader: number, request: Parameters<typeof encodeFetch>[0]): Promise<{ errorCode: number; sessionId: number; partitions: FetchedPartition[] }> {
    const broker = await this.broker(leader);
    const payload = encodeFetch(request);
    return (await broker.connectionPool.send({
      request: { apiKey: API_FETCH, apiVersion: 11, apiName: 'Fetch', encode: async () => body(payload) },
      response: { decode: async (b: Buffer) => decodeFetch(b), parse: async (d: unknown) => d },
      requestTimeout: request.maxWaitMs + 30_000,
    })) as { errorCode: number; sessionId: number; partitions: FetchedPartition[] };
  }

  /** Produce one batch per partition to one leader, any topics; returns the broker-assigned base
   *  offsets. Transactional batches need the producer's transactionalId. */
  async produce(req: {
    leader: number;
    partitions: readonly ProducePartitionRequest[];
    acks?: number;
    timeoutMs?: number;
    transactionalId?: string;
    /** Called once the connection is up, just before the request is written (the lease check:
     *  connecting may take seconds); throwing sends nothing. */
    beforeSend?: () => void;
  }): Promise<ProducedPartition[]> {
    const broker = await this.broker(req.leader);
    const payload = encodeProduce({ ...req, acks: req.acks ?? -1, timeoutMs: req.timeoutMs ?? 30_000 });
    const encode = async (): Promise<ReturnType<typeof body>> => {
      req.beforeSend?.();
      return body(payload);
    };
    const answer = (await broker.connectionPool.send({
      request: { apiKey: API_PRODUCE, apiVersion: 8, apiName: 'Produce', encode },
      response: { decode: async (b: Buffer) => decodeProduce(b), parse: async (d: unknown) => d },
      requestTimeout: (req.timeoutMs ?? 30_000) + 5_000,
    })) as ProducedPartition[];
    // Answered: the broker has read the whole request, so the socket is done with it. A request
    // that failed (a timeout, a lost connection) may still sit in a socket's queue: its buffer is
    // left to the garbage collector.
    largeBuffers.give(payload.buffer);
    return answer;
  }

  /** The pooled buffers (kafka/buffer-pool.ts) a fetch answer's batches are views into; a small
   *  answer's buffer is not pooled, and is left to the garbage collector. */
  pooledBuffers(partitions: readonly FetchedPartition[]): Set<ArrayBufferLike> {
    const blocks = new Set<ArrayBufferLike>();
    for (const p of partitions) {
      const block = p.batches[0]?.bytes.buffer;
      if (block !== undefined && largeBuffers.owns(block)) blocks.add(block);
    }
    return blocks;
  }

  /** Give pooledBuffers() back for reuse: only once nothing reads the answer's batches any more. */
  recycle(blocks: ReadonlySet<ArrayBufferLike>): void {
    for (const block of blocks) largeBuffers.give(block);
  }

  /** A fresh idempotent producer id (InitProducerId without a transactional id). */
  async initProducerId(): Promise<{ producerId: bigint; producerEpoch: number }> {
    await this.connect();
    // The broker answers COORDINATOR_LOAD_IN_PROGRESS and the like (retriable) while its
    // transaction state loads, e.g. right after start-up.
    const deadline = Date.now() + 60_000;
    for (let attempt = 0; ; attempt++) {
      try {
        const nodeIds = this.cluster.getNodeIds();
        const broker = await this.broker(nodeIds[attempt % nodeIds.length]!);
        const result = await broker.initProducerId({ transactionalId: null, transactionTimeout: 60_000 });
        return { producerId: BigInt(result.producerId), producerEpoch: result.producerEpoch };
      } catch (err) {
        if (!(err as { retriable?: boolean }).retriable || Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, Math.min(2_000, 100 * 2 ** attempt)));
      }
    }
  }

  /**
   * Run `op` at the coordinator of `key` (a group: type 0; a transactional id: type 1), looking the
   * coordinator up again after each failed try, for up to 30 s, while the answer is one that clears
   * by itself: the coordinator loading or moving, and for transactions any retriable answer
   * (CONCURRENT_TRANSACTIONS while the previous transaction's markers are written). A group's other
   * answers (e.g. a refusal because the group has members) are final.
   */
  private async atCoordinator<T>(key: string, coordinatorType: 0 | 1, op: (broker: InternalBroker) => Promise<T>): Promise<T> {
    await this.connect();
    return pRetry(async () => op(await this.cluster.findGroupCoordinator({ groupId: key, coordinatorType })), {
      retries: 1_000,
      minTimeout: 5,
      maxTimeout: 500,
      factor: 2,
      maxRetryTime: 30_000,
      shouldRetry: ({ error }) => coordinatorAnswerClears(error, coordinatorType),
    });
  }

  /**
   * InitProducerId for a transactional id: a transaction it left open is aborted (its markers
   * written) before this returns, and every earlier holder of the id is fenced.
   */
  async initTransactions(transactionalId: string, transactionTimeoutMs: number): Promise<TransactionalProducer> {
    const result = await this.atCoordinator(transactionalId, 1, (broker) => broker.initProducerId({ transactionalId, transactionTimeout: transactionTimeoutMs }));
    return { transactionalId, producerId: BigInt(result.producerId), producerEpoch: result.producerEpoch };
  }

  /** AddPartitionsToTxn: the partitions join the producer's transaction (one is begun if none is open). */
  async addPartitionsToTxn(producer: TransactionalProducer, topic: string, partitions: readonly number[]): Promise<void> {
    const { transactionalId, producerId, producerEpoch } = producer;
    await this.atCoordinator(transactionalId, 1, (broker) =>
      broker.addPartitionsToTxn({ transactionalId, producerId: producerId.toString(), producerEpoch, topics: [{ topic, partitions: [...partitions] }] }),
    );
  }

  /** EndTxn: the coordinator writes a COMMIT or ABORT marker to every partition of the transaction.
   *  The markers are written after this returns. */
  async endTxn(producer: TransactionalProducer, commit: boolean): Promise<void> {
    const { transactionalId, producerId, producerEpoch } = producer;
    await this.atCoordinator(transactionalId, 1, (broker) => broker.endTxn({ transactionalId, producerId: producerId.toString(), producerEpoch, transactionResult: commit }));
  }

  /**
   * Run `op` once per leader over the partitions it leads, of every topic asked (one request per
   * leader, not per topic). A leader's retriable answer (NOT_LEADER for a while after a create or a
   * leader move, LEADER_NOT_AVAILABLE, a request timeout) re-reads the topics' leaders and tries
   * again, for up to about 3 s, so every caller gets the same patience (a copier would otherwise
   * redo its whole resync); then the failure is thrown. Topics the cluster lacks are UNKNOWN_TOPIC,
   * or left out with `skipUnknown`.
   */
  private async atLeaders<T>(partitions: PartitionsByTopic, op: (broker: InternalBroker, partitions: Map<string, number[]>) => Promise<T>, skipUnknown = false): Promise<T[]> {
    for (let attempt = 0; ; attempt++) {
      try {
        const groups = await this.byLeader(partitions, { refresh: attempt > 0, skipUnknown });
        return await Promise.all([...groups].map(async ([leader, byTopic]) => op(await this.broker(leader), byTopic)));
      } catch (err) {
        if (attempt >= 5 || !isRetriableAnswer(err)) throw err;
        await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
      }
    }
  }

  /**
   * The partitions grouped by leader, then topic. Leaders not known yet (or all, with `refresh`)
   * are read first in a few requests (refreshLeaders); a partition with no leader is
   * CLUSTER_UNREACHABLE (leaderOf).
   */
  async byLeader(partitions: PartitionsByTopic, opts: { refresh?: boolean; skipUnknown?: boolean } = {}): Promise<Map<number, Map<string, number[]>>> {
    const missing = await this.refreshLeaders(opts.refresh === true ? partitions.keys() : [...partitions.keys()].filter((t) => !this.leaders.has(t)), opts.skipUnknown);
    const groups = new Map<number, Map<string, number[]>>();
    for (const [topic, ps] of partitions) {
      if (missing.has(topic)) continue;
      for (const p of ps) {
        const leader = await this.leaderOf(topic, p);
        let byTopic = groups.get(leader);
        if (byTopic === undefined) groups.set(leader, (byTopic = new Map()));
        let list = byTopic.get(topic);
        if (list === undefined) byTopic.set(topic, (list = []));
        list.push(p);
      }
    }
    return groups;
  }

  /**
   * Commit offsets for a consumer group without joining it (OffsetCommit with generation -1 and no
   * member id, as Kafka's AdminClient alterConsumerGroupOffsets does). The coordinator refuses it
   * while the group has active members, so a running consumer is never overridden.
   */
  async commitGroupOffsets(groupId: string, offsets: readonly { topic: string; partition: number; offset: bigint }[]): Promise<void> {
    await this.connect();
    const byTopic = new Map<string, { partition: number; offset: string }[]>();
    for (const o of offsets) byTopic.set(o.topic, [...(byTopic.get(o.topic) ?? []), { partition: o.partition, offset: o.offset.toString() }]);
    await this.atCoordinator(groupId, 0, (coordinator) =>
      coordinator.offsetCommit({ groupId, groupGenerationId: -1, memberId: '', topics: [...byTopic].map(([topic, partitions]) => ({ topic, partitions })) }),
    );
  }

  /**
   * IncrementalAlterConfigs (v0) of one topic: set these configs and delete those; its other
   * configs are left as they are (AlterConfigs, the only kind kafkajs has, replaces them all, so a
   * config written by someone else meanwhile would be lost). Sent to a broker that leads one of
   * the topic's partitions (any broker takes it to the controller).
   */
  async alterTopicConfigs(topic: string, set: Readonly<Record<string, string>>, remove: readonly string[]): Promise<void> {
    const broker = await this.broker(await this.leaderOf(topic, 0));
    const entries = [...Object.entries(set).map(([name, value]) => ({ name, op: CONFIG_SET, value })), ...remove.map((name) => ({ name, op: CONFIG_DELETE, value: null }))];
    const request = new Writer().int32(1).int8(RESOURCE_TOPIC).string(topic).int32(entries.length);
    for (const e of entries) request.string(e.name).int8(e.op).string(e.value);
    const payload = request.int8(0).done(); // validate_only: false
    const decode = async (b: Buffer) => {
      const r = new Reader(b);
      r.int32(); // throttle time
      return r.array(() => ({ code: r.int16(), message: r.string(), type: r.int8(), name: r.string() }));
    };
    const answers = (await broker.connectionPool.send({
      request: { apiKey: API_INCREMENTAL_ALTER_CONFIGS, apiVersion: 0, apiName: 'IncrementalAlterConfigs', encode: async () => body(payload) },
      response: { decode, parse: async (d: unknown) => d },
    })) as { code: number; message: string | null }[];
    for (const a of answers) {
      const error = kafkaError(a.code);
      if (error) throw new KafkaAnswerError(`alter the configs of ${topic}: ${error.type}${a.message ? ` (${a.message})` : ''}`, error);
    }
  }

  /** DeleteRecords of one topic's partitions (deleteRecordsOf). */
  async deleteRecords(topic: string, before: ReadonlyMap<number, bigint>): Promise<void> {
    await this.deleteRecordsOf(new Map([[topic, before]]));
  }

  /** DeleteRecords at the leaders, one request per leader for all the topics: each partition's log
   *  start moves up to the given offset (topic → partition → offset). */
  async deleteRecordsOf(before: ReadonlyMap<string, ReadonlyMap<number, bigint>>): Promise<void> {
    await this.atLeaders(new Map([...before].map(([topic, offsets]) => [topic, [...offsets.keys()]])), (broker, led) =>
      broker.deleteRecords({ topics: [...led].map(([topic, ps]) => ({ topic, partitions: ps.map((partition) => ({ partition, offset: before.get(topic)!.get(partition)!.toString() })) })) }),
    );
  }

  /** ListOffsets of one topic's partitions (listOffsetsOf). */
  async listOffsets(topic: string, partitions: readonly number[], which: 'earliest' | 'latest', isolationLevel: number = IsolationLevel.READ_UNCOMMITTED): Promise<Map<number, bigint>> {
    return (await this.listOffsetsOf(new Map([[topic, partitions]]), which, isolationLevel)).get(topic) ?? new Map();
  }

  /**
   * ListOffsets at the leaders, one request per leader for all the topics. which: 'earliest' = log
   * start; 'latest' = high watermark (read_uncommitted) or last stable offset (read_committed); a
   * timestamp (ms) = the broker's offsetsForTimes answer, the first record of any kind (control
   * batches included) whose timestamp is at or after it, -1 when none is.
   * Answers per topic, then partition; with `skipUnknown` a topic the cluster lacks has none.
   */
  async listOffsetsOf(partitions: PartitionsByTopic, which: 'earliest' | 'latest' | bigint, isolationLevel: number = IsolationLevel.READ_UNCOMMITTED, skipUnknown = false): Promise<Map<string, Map<number, bigint>>> {
    if (typeof which === 'bigint' && (which < 0n || which > BigInt(Number.MAX_SAFE_INTEGER))) throw new KmirrorError('INVALID_ARGUMENT', `a timestamp to look up must be between 0 and 2^53 ms, got ${which}`);
    const timestamp = which === 'earliest' ? -2 : which === 'latest' ? -1 : Number(which);
    const out = new Map<string, Map<number, bigint>>();
    await this.atLeaders(
      partitions,
      async (broker, byTopic) => {
        const result = await broker.listOffsets({
          replicaId: -1,
          isolationLevel,
          topics: [...byTopic].map(([topic, ps]) => ({ topic, partitions: ps.map((partition) => ({ partition, timestamp })) })),
        });
        for (const response of result.responses) {
          for (const p of response.partitions) {
            const error = kafkaError(p.errorCode);
            if (error) throw new KafkaAnswerError(`list offsets ${response.topic}-${p.partition}: ${error.type}`, error);
            setByTopic(out, response.topic, p.partition, BigInt(p.offset));
          }
        }
      },
      skipUnknown,
    );
    return out;
  }

  /**
   * Each partition's high watermark and log end at its leader, per topic, then partition. The log
   * end is the offset after the last record the leader has appended, its followers'
   * acknowledgement or not: a batch appended while a follower in the ISR stalls lies between the
   * two, invisible to every read, and lands (is acknowledged) once that follower catches up or
   * leaves the ISR. Read with ListOffsets v4 (the high watermark and the leader's epoch) and
   * OffsetForLeaderEpoch v3 for that epoch, which answers its end: the log end for the current
   * epoch. One request of each per leader, for all the topics.
   */
  async logEnds(partitions: PartitionsByTopic): Promise<Map<string, Map<number, { readonly highWatermark: bigint; readonly logEnd: bigint }>>> {
    const out = new Map<string, Map<number, { highWatermark: bigint; logEnd: bigint }>>();
    const answer = (topic: string, p: number, code: number, what: string) => {
      const error = kafkaError(code);
      if (error) throw new KafkaAnswerError(`${what} ${topic}-${p}: ${error.type}`, error);
    };
    await this.atLeaders(partitions, async (broker, led) => {
      const latest = new Writer().int32(-1).int8(IsolationLevel.READ_UNCOMMITTED).int32(led.size);
      for (const [topic, ps] of led) {
        latest.string(topic).int32(ps.length);
        for (const p of ps) latest.int32(p).int32(-1).int64(-1n);
      }
      const heads = await sendFlat(broker, API_LIST_OFFSETS, 4, 'ListOffsets', latest, (r, topic) => {
        const partition = r.int32();
        const code = r.int16();
        r.int64(); // timestamp
        return { topic, partition, code, offset: r.int64(), leaderEpoch: r.int32() };
      });
      for (const h of heads) answer(h.topic, h.partition, h.code, 'list offsets');
      // A leader that answers no epoch (none known: older message formats) has no end to ask for
      // beyond its high watermark.
      const epochs = byTopic(heads.filter((h) => h.leaderEpoch >= 0));
      for (const h of heads) if (h.leaderEpoch < 0) setByTopic(out, h.topic, h.partition, { highWatermark: h.offset, logEnd: h.offset });
      if (epochs.size === 0) return;
      const ask = new Writer().int32(-1).int32(epochs.size);
      for (const [topic, hs] of epochs) {
        ask.string(topic).int32(hs.length);
        for (const h of hs) ask.int32(h.partition).int32(h.leaderEpoch).int32(h.leaderEpoch);
      }
      const ends = await sendFlat(broker, API_OFFSET_FOR_LEADER_EPOCH, 3, 'OffsetForLeaderEpoch', ask, (r, topic) => {
        const code = r.int16();
        const partition = r.int32();
        r.int32(); // the epoch answered
        return { topic, code, partition, endOffset: r.int64() };
      });
      const highWatermarks = new Map(heads.map((h) => [partitionKey(h.topic, h.partition), h.offset]));
      for (const e of ends) {
        answer(e.topic, e.partition, e.code, 'offset for leader epoch');
        const highWatermark = highWatermarks.get(partitionKey(e.topic, e.partition))!;
        // The leader no longer knows that epoch (leadership moved between the two requests).
        if (e.endOffset < 0n) throw new KafkaAnswerError(`offset for leader epoch ${e.topic}-${e.partition}: the leader's epoch changed`, kafkaError(74)!);
        setByTopic(out, e.topic, e.partition, { highWatermark, logEnd: e.endOffset > highWatermark ? e.endOffset : highWatermark });
      }
    });
    return out;
  }
}

/** Send a request whose answer is a throttle time, then topics of partitions (ListOffsets v4,
 *  OffsetForLeaderEpoch v3); returns the partitions, each read by `partition`, in one list. */
async function sendFlat<T>(broker: InternalBroker, apiKey: number, apiVersion: number, apiName: string, request: Writer, partition: (r: Reader, topic: string) => T): Promise<T[]> {
  const payload = request.done();
  const decode = async (b: Buffer): Promise<T[]> => {
    const r = new Reader(b);
    r.int32(); // throttle time
    return r.array(() => {
      const topic = r.string() ?? '';
      return r.array(() => partition(r, topic));
    }).flat();
  };
  return (await broker.connectionPool.send({ request: { apiKey, apiVersion, apiName, encode: async () => body(payload) }, response: { decode, parse: async (d: unknown) => d } })) as T[];
}

/** A broker's per-partition error answer, as thrown inside RawCluster (mapped by callers). */
export class KafkaAnswerError extends KmirrorError {
  override readonly name = 'KafkaAnswerError';
  constructor(
    message: string,
    readonly kafka: KafkaErrorInfo,
  ) {
    super(kafkaCode(kafka.type, kafka.retriable), message, { kafkaError: kafka.type });
  }
}

/** A retriable per-partition answer (ours, or kafkajs' errors with `retriable` or per-partition ones). */
function isRetriableAnswer(err: unknown): boolean {
  if (err instanceof KafkaAnswerError) return err.kafka.retriable;
  const e = err as { retriable?: boolean; partitions?: { error?: { retriable?: boolean } }[] };
  if (e.retriable === true) return true;
  return Array.isArray(e.partitions) && e.partitions.some((p) => p.error?.retriable === true);
}

/** Kafka's answers (kafkajs' names) while a coordinator loads, is not available or has moved. */
const COORDINATOR_MOVED: ReadonlySet<string> = new Set(['GROUP_LOAD_IN_PROGRESS', 'GROUP_COORDINATOR_NOT_AVAILABLE', 'NOT_COORDINATOR_FOR_GROUP']);

/** Whether an answer of a group (0) or transaction (1) coordinator clears by itself, so the request
 *  is worth sending again to the coordinator looked up anew (RawCluster.atCoordinator). A group's
 *  other retriable answers (REBALANCE_IN_PROGRESS: the group has members) are final for us. */
export function coordinatorAnswerClears(error: unknown, coordinatorType: 0 | 1): boolean {
  const { type, retriable } = (error ?? {}) as { type?: string; retriable?: boolean };
  return COORDINATOR_MOVED.has(type ?? '') || (coordinatorType === 1 && retriable === true);
}
