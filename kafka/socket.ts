// kafkajs' socket factory (public API: KafkaConfig.socketFactory), with responses read in place.
//
// kafkajs' own sockets hand it the kernel's data in 64 KiB chunks, each a fresh buffer; it keeps
// them in a list until a response is whole and then copies them into one buffer (Buffer.concat).
// A 16 MiB fetch answer thus costs 256 chunk allocations and a second copy of every byte, and the
// garbage brings major collections closer. A plain TCP socket here reads with `onread`: the
// kernel writes each response's 4-byte size into a small header buffer and then the response
// itself straight into one buffer of that size, which kafkajs receives whole, as one `data`
// event. kafkajs frames responses the same way (int32 size, then the bytes), so it sees exactly
// the bytes it would have assembled; kafka/protocol.ts stops it from copying a lone buffer again.
// Large answers land in blocks of kafka/buffer-pool.ts, which the copier gives back once done.
//
// TLS sockets keep Node's ordinary reads (the same options as kafkajs' default factory): TLS
// decrypts into its own buffers, so there is no read to place.
import net from 'node:net';
import tls from 'node:tls';
import type { ISocketFactory } from 'kafkajs';
import { largeBuffers } from './buffer-pool.ts';

/** As kafkajs' default factory. */
const KEEP_ALIVE_DELAY_MS = 60_000;

/** Larger than any answer kmirror asks for (fetches ask ≤ 64 MiB); a bigger size is a corrupt
 *  stream, and the connection is closed with an error rather than a huge allocation. */
export const MAX_RESPONSE_BYTES = 2 ** 30;

const SIZE_BYTES = 4;

/**
 * Splits one connection's byte stream into Kafka responses ([int32 size][size bytes]), choosing
 * where each read lands. Contract: `target()` is called before every read and `landed(n)` after
 * it, with the n bytes written at the start of the buffer `target()` returned; `emit` receives each
 * whole response, size prefix included, in a buffer no one else writes to.
 */
export class ResponseFramer {
  private readonly header = Buffer.allocUnsafe(SIZE_BYTES);
  private headerFilled = 0;
  private response: Buffer | undefined;
  private filled = 0;

  constructor(
    private readonly emit: (response: Buffer) => void,
    private readonly fail: (error: Error) => void,
  ) {}

  /** Where the next read goes: the rest of the size prefix, or the rest of the response. Never
   *  more than the current response needs, so a read never crosses into the next one. */
  target(): Buffer {
    return this.response === undefined ? this.header.subarray(this.headerFilled) : this.response.subarray(this.filled);
  }

  /** The last read wrote `n` bytes at `target()`. False once the stream is corrupt. */
  landed(n: number): boolean {
    if (this.response === undefined) {
      this.headerFilled += n;
      if (this.headerFilled < SIZE_BYTES) return true;
      this.headerFilled = 0;
      const size = this.header.readInt32BE(0);
      if (size < 0 || size > MAX_RESPONSE_BYTES) {
        this.fail(new Error(`the broker sent a response size of ${size} bytes (at most ${MAX_RESPONSE_BYTES} expected): the stream is corrupt`));
        return false;
      }
      this.response = largeBuffers.take(SIZE_BYTES + size);
      this.header.copy(this.response);
      this.filled = SIZE_BYTES;
    } else {
      this.filled += n;
    }
    if (this.filled === this.response.length) {
      const whole = this.response;
      this.response = undefined;
      this.emit(whole);
    }
    return true;
  }
}

export const socketFactory: ISocketFactory = ({ host, port, ssl, onConnect }) => {
  if (ssl) {
    const socket = tls.connect({ host, port, ...(net.isIP(host) ? {} : { servername: host }), ...ssl }, onConnect);
    socket.setKeepAlive(true, KEEP_ALIVE_DELAY_MS);
    return socket;
  }
  // The framer's callbacks run from the first read on, after connect() has returned the socket.
  const framer = new ResponseFramer(
    (response) => socket.emit('data', response),
    (error) => socket.destroy(error),
  );
  const socket = net.connect({ host, port, onread: { buffer: () => framer.target(), callback: (n) => framer.landed(n) } }, onConnect);
  socket.setKeepAlive(true, KEEP_ALIVE_DELAY_MS);
  return socket;
};
