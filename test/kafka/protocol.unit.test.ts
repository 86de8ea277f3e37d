// Request framing (kafka/protocol.ts): kafkajs' own framing (protocol/request.js: size, api key,
// version, correlation id, client id, body) adopts a body written behind FRAME_ROOM bytes instead of
// copying it, and yields the same bytes as kafkajs' copying path.
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { body, coordinatorAnswerClears, FetchSession, FRAME_ROOM, type FetchPartitionRequest } from '../../kafka/protocol.ts';

const require = createRequire(import.meta.url);
const frame = require('kafkajs/src/protocol/request') as (req: { correlationId: number; clientId: string; request: { apiKey: number; apiVersion: number; encode: () => Promise<unknown> } }) => Promise<{ buffer: Buffer; size(): number }>;

/** What kafkajs sends, written out by hand from the protocol's request header v1. */
function expected(apiKey: number, apiVersion: number, correlationId: number, clientId: string, payload: Buffer): Buffer {
  const id = Buffer.from(clientId);
  const header = Buffer.alloc(2 + 2 + 4 + 2 + id.length);
  header.writeInt16BE(apiKey, 0);
  header.writeInt16BE(apiVersion, 2);
  header.writeInt32BE(correlationId, 4);
  header.writeInt16BE(id.length, 8);
  id.copy(header, 10);
  const size = Buffer.alloc(4);
  size.writeInt32BE(header.length + payload.length);
  return Buffer.concat([size, header, payload]);
}

/** True when a and b are views of overlapping memory (small buffers share pooled slabs). */
const overlap = (a: Buffer, b: Buffer): boolean => a.buffer === b.buffer && a.byteOffset < b.byteOffset + b.length && b.byteOffset < a.byteOffset + a.length;

const written = (payload: Buffer): Buffer => Buffer.concat([Buffer.alloc(FRAME_ROOM, 0xee), payload]);

describe('request framing', () => {
  it('frames a body in the buffer it was written into, with the bytes kafkajs would send', async () => {
    const payload = randomBytes(100_000);
    const whole = written(payload);
    const request = await frame({ correlationId: 77, clientId: 'kmirror-test', request: { apiKey: 0, apiVersion: 8, encode: async () => body(whole) } });
    expect(request.buffer.equals(expected(0, 8, 77, 'kmirror-test', payload))).toBe(true);
    expect(overlap(request.buffer, whole)).toBe(true); // adopted, not copied
  });

  it('a body sent again is copied, so the first request keeps its header', async () => {
    const payload = randomBytes(5_000);
    const whole = written(payload);
    const first = await frame({ correlationId: 1, clientId: 'a', request: { apiKey: 1, apiVersion: 11, encode: async () => body(whole) } });
    const second = await frame({ correlationId: 2, clientId: 'a', request: { apiKey: 1, apiVersion: 11, encode: async () => body(whole) } });
    expect(first.buffer.equals(expected(1, 11, 1, 'a', payload))).toBe(true);
    expect(second.buffer.equals(expected(1, 11, 2, 'a', payload))).toBe(true);
    expect(overlap(second.buffer, whole)).toBe(false);
  });

  it('a client id longer than the room falls back to copying', async () => {
    const payload = randomBytes(64);
    const clientId = 'x'.repeat(FRAME_ROOM);
    const request = await frame({ correlationId: 3, clientId, request: { apiKey: 0, apiVersion: 8, encode: async () => body(written(payload)) } });
    expect(request.buffer.equals(expected(0, 8, 3, clientId, payload))).toBe(true);
  });

  it('encoders that grow keep every byte written (kafkajs encoding its own requests)', () => {
    const Encoder = require('kafkajs/src/protocol/encoder') as new () => { writeInt32(v: number): unknown; writeBytes(b: Buffer): unknown; buffer: Buffer };
    const e = new Encoder();
    const chunks = [randomBytes(300), randomBytes(5_000), randomBytes(70_000)];
    for (const c of chunks) e.writeBytes(c);
    const want = Buffer.concat(chunks.flatMap((c) => [Buffer.from([(c.length >>> 24) & 255, (c.length >>> 16) & 255, (c.length >>> 8) & 255, c.length & 255]), c]));
    expect(e.buffer.equals(want)).toBe(true);
  });
});

describe('FetchSession (KIP-227): what each fetch names', () => {
  const at = (partition: number, fetchOffset: bigint, topic = 't'): FetchPartitionRequest => ({ topic, partition, fetchOffset, maxBytes: 1024 });

  it('opens with a full request, then names only moved partitions and forgets the ones no longer wanted', () => {
    const s = new FetchSession();
    const all = [at(0, 10n), at(1, 20n), at(2, 30n)];
    const first = s.request(all);
    expect(first).toEqual({ sessionId: 0, epoch: 0, partitions: all, forgotten: [] });
    s.answered(first, 42);
    expect(s.request(all)).toEqual({ sessionId: 42, epoch: 1, partitions: [], forgotten: [] });
    const moved = s.request([at(0, 15n), at(1, 20n)]);
    expect(moved).toEqual({ sessionId: 42, epoch: 1, partitions: [at(0, 15n)], forgotten: [{ topic: 't', partition: 2 }] });
    s.answered(moved, 42);
    // The broker now holds 0@15 and 1@20; 2 is gone, so wanting it again restates it.
    expect(s.request([at(0, 15n), at(1, 20n), at(2, 30n)])).toEqual({ sessionId: 42, epoch: 2, partitions: [at(2, 30n)], forgotten: [] });
    // A changed maxBytes is a change too; another topic's partition of the same number is another partition.
    expect(s.request([at(0, 15n), { ...at(1, 20n), maxBytes: 2048 }, at(0, 15n, 'u')]).partitions).toEqual([{ ...at(1, 20n), maxBytes: 2048 }, at(0, 15n, 'u')]);
    expect(s.stats).toEqual({ full: 1, incremental: 1, resets: 0 });
  });

  it('keeps making full requests while the broker gives no session (id 0), and starts over after a reset', () => {
    const s = new FetchSession();
    const all = [at(0, 1n)];
    s.answered(s.request(all), 0);
    expect(s.request(all)).toMatchObject({ sessionId: 0, epoch: 0, partitions: all });
    s.answered(s.request(all), 7);
    s.answered(s.request(all), 7);
    expect(s.request(all)).toMatchObject({ sessionId: 7, epoch: 2 });
    s.reset();
    expect(s.request(all)).toEqual({ sessionId: 0, epoch: 0, partitions: all, forgotten: [] });
    expect(s.stats.resets).toBe(1);
  });

  it('runs its requests one at a time, in order, a failed one not stopping the next', async () => {
    const s = new FetchSession();
    const order: string[] = [];
    const slow = s.serial(async () => {
      await new Promise((r) => setTimeout(r, 20));
      order.push('first');
      throw new Error('lost');
    });
    const next = s.serial(async () => {
      order.push('second');
      return 2;
    });
    await expect(slow).rejects.toThrow('lost');
    await expect(next).resolves.toBe(2);
    expect(order).toEqual(['first', 'second']);
  });
});

describe('coordinatorAnswerClears: which coordinator answers are sent again', () => {
  // kafkajs' own errors for Kafka's error codes, as its brokers throw them.
  const { createErrorFromCode } = require('kafkajs/src/protocol/error') as { createErrorFromCode: (code: number) => Error & { type: string; retriable: boolean } };
  const [loading, notAvailable, notCoordinator, rebalancing, concurrentTxns, unknownMember] = [14, 15, 16, 27, 51, 25].map(createErrorFromCode);

  it('a coordinator loading, not available or moved: again, for groups and transactions', () => {
    for (const e of [loading, notAvailable, notCoordinator]) {
      expect(coordinatorAnswerClears(e, 0), e!.type).toBe(true);
      expect(coordinatorAnswerClears(e, 1), e!.type).toBe(true);
    }
  });

  it("a group's other answers are final (a rebalance means the group has members); a transaction's retriable ones are not", () => {
    expect(coordinatorAnswerClears(rebalancing, 0)).toBe(false);
    expect(coordinatorAnswerClears(unknownMember, 0)).toBe(false);
    expect(coordinatorAnswerClears(concurrentTxns, 1)).toBe(true);
    expect(coordinatorAnswerClears(unknownMember, 1)).toBe(false);
    expect(coordinatorAnswerClears(new Error('socket hang up'), 0)).toBe(false);
  });
});
