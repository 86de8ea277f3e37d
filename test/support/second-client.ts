// The tests' second Kafka client: librdkafka producers (Python confluent-kafka, installed into the
// project venv from PyPI on first use) driven by test/support/txn-producer.py, so the copier is
// tested against transactions, markers and batches it did not write itself.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { vi } from 'vitest';
import { IsolationLevel, type RawCluster } from '../../kafka/protocol.ts';
import { ensureConfluentKafka } from '../../scripts/stack/python.ts';
import { sourceConnection } from './stack.ts';

const script = fileURLToPath(new URL('./txn-producer.py', import.meta.url));

export type SecondClientCommand =
  | { readonly op: 'begin' | 'commit' | 'abort' | 'flush'; readonly p: number }
  | { readonly op: 'send'; readonly p: number; readonly partition: number; readonly key: string | null; readonly value: string | null; readonly headers?: readonly [string, string | null][] };

export class LibrdkafkaProducers {
  private readonly lines: AsyncIterator<string>;
  private stderr = '';

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    child.stderr.on('data', (d: Buffer) => (this.stderr = (this.stderr + d.toString()).slice(-4_000)));
    this.lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  }

  /** Producers into `topic` on the source: producer i is transactional when transactional[i]. */
  static async start(opts: { topic: string; transactional: readonly boolean[]; compression?: string; id: string }): Promise<LibrdkafkaProducers> {
    const python = ensureConfluentKafka();
    const producers = new LibrdkafkaProducers(spawn(python, [script], { stdio: ['pipe', 'pipe', 'pipe'] }));
    producers.send({ op: 'producers', bootstrap: sourceConnection().bootstrap.join(','), topic: opts.topic, transactional: opts.transactional, compression: opts.compression ?? 'none', id: opts.id });
    await producers.sync();
    return producers;
  }

  send(command: SecondClientCommand | Record<string, unknown>): void {
    this.child.stdin.write(`${JSON.stringify(command)}\n`);
  }

  /** Wait until every command sent so far is done; throws what the producer reported. */
  async sync(): Promise<void> {
    this.send({ op: 'sync' });
    const { value, done } = await this.lines.next();
    if (done || !String(value).startsWith('ok ')) throw new Error(`librdkafka producer: ${done ? 'exited' : String(value)} ${this.stderr}`);
  }

  /**
   * Wait until every transaction the producers ended has its marker in `partitions` of the topic:
   * the source's last stable offset equals its high watermark. A commit or abort returns once the
   * coordinator has decided; it writes the markers afterwards, so right after sync() the LSO can
   * still be behind (seen: 10 records behind on each of 3 partitions) and a copy "until caught up"
   * would rightly stop there. Only for a source with no transaction left open.
   */
  async markersWritten(source: RawCluster, topic: string, partitions: readonly number[]): Promise<void> {
    await vi.waitFor(
      async () => {
        const [lso, hw] = await Promise.all([source.listOffsets(topic, partitions, 'latest', IsolationLevel.READ_COMMITTED), source.listOffsets(topic, partitions, 'latest')]);
        for (const p of partitions) if (lso.get(p) !== hw.get(p)) throw new Error(`${topic}-${p}: last stable offset ${lso.get(p)} < high watermark ${hw.get(p)} 30 s after the producers' last commit/abort`);
      },
      { timeout: 30_000, interval: 50 },
    );
  }

  async close(): Promise<void> {
    this.child.stdin.end();
    await new Promise<void>((resolve) => (this.child.exitCode !== null ? resolve() : this.child.once('exit', () => resolve())));
  }
}

/** mulberry32: a small seeded generator, so a failing run can be replayed from its logged seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A random interleaving of two transactional producers (0, 1) and an idempotent one (2): each step
 * one producer writes 1–4 records (a transactional one inside its transaction, beginning one when
 * none is open) and is flushed, so the producers' batches interleave in the log; transactions end
 * with commit or abort at random, often after a single record.
 */
export function interleaving(seed: number, steps: number, partitions: number): SecondClientCommand[] {
  const next = random(seed);
  const open = [false, false];
  const out: SecondClientCommand[] = [];
  let n = 0;
  for (let step = 0; step < steps; step++) {
    const p = Math.floor(next() * 3);
    if (p < 2 && !open[p]) {
      out.push({ op: 'begin', p });
      open[p] = true;
    }
    const count = 1 + Math.floor(next() * 4);
    for (let i = 0; i < count; i++, n++) {
      out.push({
        op: 'send',
        p,
        partition: Math.floor(next() * partitions),
        key: next() < 0.1 ? null : `k${n}`,
        value: next() < 0.05 ? null : `v${n}-${'x'.repeat(Math.floor(next() * 200))}`,
        headers: next() < 0.5 ? [['n', String(n)], ['empty', null]] : [],
      });
    }
    out.push({ op: 'flush', p });
    if (p < 2 && next() < 0.6) {
      out.push({ op: next() < 0.4 ? 'abort' : 'commit', p });
      open[p] = false;
    }
  }
  for (const p of [0, 1]) if (open[p]) out.push({ op: 'commit', p });
  return out;
}
