// Responses read in place (kafka/socket.ts), buffers used again (kafka/buffer-pool.ts), and
// kafkajs taking a whole response without copying it (kafka/protocol.ts' processData).
import { createRequire } from 'node:module';
import net from 'node:net';
import tls from 'node:tls';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { BufferPool } from '../../kafka/buffer-pool.ts';
import { MAX_RESPONSE_BYTES, ResponseFramer, socketFactory } from '../../kafka/socket.ts';
import '../../kafka/protocol.ts';
import { ensureStackTls } from '../../scripts/stack/tls.ts';

const require = createRequire(import.meta.url);

/** A Kafka response as it travels: int32 size, then correlation id and payload. */
function frame(correlationId: number, payload: Buffer): Buffer {
  const out = Buffer.alloc(8 + payload.length);
  out.writeInt32BE(4 + payload.length, 0);
  out.writeInt32BE(correlationId, 4);
  payload.copy(out, 8);
  return out;
}

/** Drive a framer the way Node's onread does: each read fills at most what target() offers. */
function feed(framer: ResponseFramer, stream: Buffer, readSizes: () => number): void {
  let at = 0;
  while (at < stream.length) {
    const target = framer.target();
    const n = Math.min(target.length, readSizes(), stream.length - at);
    stream.copy(target, 0, at, at + n);
    at += n;
    if (!framer.landed(n)) return;
  }
}

describe('ResponseFramer', () => {
  it('emits each response whole, whatever the reads deliver, and never reads past one', () => {
    const responses = [frame(1, randomBytes(10)), frame(2, Buffer.alloc(0)), frame(3, randomBytes(300_000)), frame(4, randomBytes(3))];
    const stream = Buffer.concat(responses);
    for (const readSize of [1, 3, 4, 5, 7, 64 * 1024, 10_000_000]) {
      const got: Buffer[] = [];
      const framer = new ResponseFramer((r) => got.push(r), (e) => expect.unreachable(e.message));
      feed(framer, stream, () => readSize);
      expect(got.length, `reads of ${readSize}`).toBe(responses.length);
      got.forEach((r, i) => expect(r.equals(responses[i]!), `response ${i}, reads of ${readSize}`).toBe(true));
    }
  });

  it('offers a read no more than the rest of the current response', () => {
    const framer = new ResponseFramer(() => undefined, () => undefined);
    expect(framer.target().length).toBe(4);
    const header = Buffer.alloc(4);
    header.writeInt32BE(100);
    header.copy(framer.target());
    framer.landed(4);
    expect(framer.target().length).toBe(100);
    framer.landed(60);
    expect(framer.target().length).toBe(40);
  });

  it.each([-1, MAX_RESPONSE_BYTES + 1])('fails the connection on a size of %i (a corrupt stream) instead of allocating', (size) => {
    const errors: Error[] = [];
    const framer = new ResponseFramer(() => expect.unreachable('no response'), (e) => errors.push(e));
    framer.target().writeInt32BE(size);
    expect(framer.landed(4)).toBe(false);
    expect(errors[0]?.message).toMatch(/response size of -?\d+ bytes.*corrupt/);
  });
});

describe('socketFactory (a real loopback connection)', () => {
  it('delivers whole responses as single data events, however the server writes them', async () => {
    const responses = [frame(7, randomBytes(2_000_000)), frame(8, randomBytes(5)), frame(9, randomBytes(70_000))];
    const stream = Buffer.concat(responses);
    const server = net.createServer((s) => {
      // Odd pieces, with pauses, so reads end mid-size and mid-response.
      let at = 0;
      const step = (): void => {
        if (at >= stream.length) return void s.end();
        const n = [3, 1, 100_003, 65_537][at % 4]!;
        s.write(stream.subarray(at, at + n));
        at += n;
        setImmediate(step);
      };
      step();
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as net.AddressInfo;
      let connected = false;
      const socket = socketFactory({ host: '127.0.0.1', port, ssl: undefined as never, onConnect: () => (connected = true) });
      const got: Buffer[] = [];
      socket.on('data', (d: Buffer) => got.push(d));
      await once(socket, 'end');
      socket.destroy();
      expect(connected).toBe(true);
      expect(got.map((d) => d.length)).toEqual(responses.map((r) => r.length));
      got.forEach((d, i) => expect(d.equals(responses[i]!)).toBe(true));
    } finally {
      server.close();
    }
  });
});

describe('socketFactory over TLS (a real loopback connection, a throwaway CA and certificate)', () => {
  it('connects with the given TLS options and delivers the bytes as Node reads them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kmirror-tls-'));
    try {
      // The local stack's CA and broker certificate, made the way the stack makes them.
      const { caFile, brokerKeystore } = ensureStackTls(dir);
      const keystore = readFileSync(brokerKeystore); // the key, then the certificate chain
      const response = frame(5, randomBytes(300_000));
      const server = tls.createServer({ key: keystore, cert: keystore }, (s) => s.end(response));
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      try {
        const { port } = server.address() as net.AddressInfo;
        let connected = false;
        const socket = socketFactory({ host: '127.0.0.1', port, ssl: { ca: [readFileSync(caFile)] }, onConnect: () => (connected = true) });
        const got: Buffer[] = [];
        socket.on('data', (d: Buffer) => got.push(d));
        await once(socket, 'end');
        socket.destroy();
        expect(connected).toBe(true);
        expect(Buffer.concat(got).equals(response)).toBe(true);
      } finally {
        server.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('kafkajs takes a whole response without copying it', () => {
  interface Connection {
    chunks: Buffer[];
    bytesBuffered: number;
    bytesNeeded: number;
    authHandlers: null;
    requestQueue: { fulfillRequest(r: { correlationId: number; payload: Buffer; size: number }): void };
    processData(raw: Buffer): void;
  }
  const { prototype } = require('kafkajs/src/network/connection') as { prototype: Connection };
  /** A kafkajs connection as its constructor leaves it, and the responses it hands over. */
  function freshConnection(): { connection: Connection; fulfilled: { correlationId: number; payload: Buffer }[] } {
    const fulfilled: { correlationId: number; payload: Buffer }[] = [];
    const connection: Connection = Object.assign(Object.create(prototype) as Connection, {
      chunks: [],
      bytesBuffered: 0,
      bytesNeeded: 4,
      authHandlers: null,
      requestQueue: { fulfillRequest: (r: { correlationId: number; payload: Buffer }) => fulfilled.push(r) },
    });
    return { connection, fulfilled };
  }

  it('hands over payloads that are views of the responses delivered, response after response', () => {
    const { connection, fulfilled } = freshConnection();
    const responses = [frame(1, randomBytes(1_000)), frame(2, randomBytes(500_000)), frame(3, randomBytes(20))];
    for (const r of responses) connection.processData(r);
    expect(fulfilled.map((f) => f.correlationId)).toEqual([1, 2, 3]);
    fulfilled.forEach((f, i) => {
      expect(f.payload.equals(responses[i]!.subarray(8))).toBe(true);
      expect(f.payload.buffer, `response ${i + 1} was copied`).toBe(responses[i]!.buffer);
    });
  });

  it('still assembles a response delivered in pieces (TLS sockets)', () => {
    const { connection, fulfilled } = freshConnection();
    const stream = Buffer.concat([frame(1, randomBytes(1_000)), frame(2, randomBytes(3_000))]);
    for (let at = 0; at < stream.length; at += 700) connection.processData(stream.subarray(at, at + 700));
    expect(fulfilled.map((f) => f.payload.length)).toEqual([1_000, 3_000]);
    expect(Buffer.concat(fulfilled.map((f) => f.payload)).equals(Buffer.concat([stream.subarray(8, 1_008), stream.subarray(1_016)]))).toBe(true);
  });
});

describe('BufferPool', () => {
  it('hands a given-back block out again, at the size asked', () => {
    const pool = new BufferPool(1024, 10 * 2 ** 20);
    const a = pool.take(100_000);
    expect(a.length).toBe(100_000);
    pool.give(a.buffer);
    const b = pool.take(90_000);
    expect(b.length).toBe(90_000);
    expect(b.buffer).toBe(a.buffer);
    expect(pool.stats).toEqual({ made: 1, reused: 1 });
  });

  it('never hands out a block twice at once', () => {
    const pool = new BufferPool(1024, 10 * 2 ** 20);
    const a = pool.take(100_000);
    pool.give(a.buffer);
    pool.give(a.buffer); // a second give of the same block is ignored
    const b = pool.take(100_000);
    const c = pool.take(100_000);
    expect(b.buffer).toBe(a.buffer);
    expect(c.buffer).not.toBe(a.buffer);
  });

  it('does not pin a large block for a small request, nor keep blocks past its limit', () => {
    const pool = new BufferPool(1024, 3 * 2 ** 20);
    const big = pool.take(2 ** 20);
    pool.give(big.buffer);
    expect(pool.take(100_000).buffer).not.toBe(big.buffer); // more than twice the size asked
    expect(pool.take(2 ** 20 - 10).buffer).toBe(big.buffer);
    const blocks = [pool.take(2 ** 20), pool.take(2 ** 20), pool.take(2 ** 20), pool.take(2 ** 20)];
    for (const b of blocks) pool.give(b.buffer);
    const again = [pool.take(2 ** 20), pool.take(2 ** 20), pool.take(2 ** 20), pool.take(2 ** 20)];
    expect(again.filter((b) => blocks.some((x) => x.buffer === b.buffer)).length).toBe(3);
  });

  it('ignores buffers it did not make: small ones share a slab with other buffers', () => {
    const pool = new BufferPool(1024, 10 * 2 ** 20);
    const small = pool.take(100);
    const foreign = Buffer.allocUnsafe(100_000);
    expect([pool.owns(small.buffer), pool.owns(foreign.buffer), pool.owns(pool.take(100_000).buffer)]).toEqual([false, false, true]);
    pool.give(small.buffer);
    pool.give(foreign.buffer);
    expect(pool.take(100_000).buffer).not.toBe(foreign.buffer);
    expect(pool.stats.reused).toBe(0);
  });
});
