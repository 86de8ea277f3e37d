// decodeRecords against compressed batches kmirror did not write: Apache Kafka's own Java producer
// (ConsoleProducer from the stack's Kafka jars) writes each codec into a fresh source topic, the
// batches are fetched raw, and every one must carry that codec and decode to the lines produced.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Admin, Kafka } from 'kafkajs';
import { createTopicsAndWait, deleteTopicsAndWait } from '../../kafka/admin.ts';
import { createKafka } from '../../kafka/connection.ts';
import { IsolationLevel, RawCluster } from '../../kafka/protocol.ts';
import { Codec, decodeRecords, type RawBatch } from '../../kafka/wire.ts';
import { kafkaJava } from '../../scripts/stack/kafka.ts';
import { randomName, sourceConnection, testClientOptions } from '../support/stack.ts';

const RECORDS = 300;

let kafka: Kafka;
let admin: Admin;
let raw: RawCluster;
const created: string[] = [];

beforeAll(async () => {
  kafka = createKafka(sourceConnection(), testClientOptions);
  admin = kafka.admin();
  await admin.connect();
  raw = new RawCluster(kafka);
});

afterAll(async () => {
  await raw.close();
  await deleteTopicsAndWait(admin, created);
  await admin.disconnect();
});

interface Expected {
  readonly key: string;
  readonly value: string;
  readonly headers: readonly [string, string][];
}

/** ConsoleProducer input lines ("h1:v1,h2:v2<TAB>key<TAB>value") and the records they stand for. */
function recordsFor(codec: string): { lines: string; expected: Expected[] } {
  const expected = Array.from({ length: RECORDS }, (_, i): Expected => ({
    key: `key-${i}`,
    // Compressible but distinct, ~0.8 KiB: a batch of them spans several snappy-java (32 KiB) and
    // lz4 frame (64 KiB) blocks.
    value: `${codec} record ${i} `.repeat(40).trimEnd(),
    headers: [
      ['n', String(i)],
      ['codec', codec],
    ],
  }));
  const lines = expected.map((r) => `${r.headers.map(([k, v]) => `${k}:${v}`).join(',')}\t${r.key}\t${r.value}\n`).join('');
  return { lines, expected };
}

/** Apache Kafka's console producer, `compression.type=<codec>`, one record per stdin line. */
function javaProduce(topic: string, codec: string, lines: string): Promise<void> {
  const java = kafkaJava(
    'org.apache.kafka.tools.ConsoleProducer',
    [
      '--bootstrap-server',
      sourceConnection().bootstrap.join(','),
      '--topic',
      topic,
      '--compression-codec',
      codec,
      '--batch-size',
      String(1 << 20),
      // Linger long enough that the whole input forms a few large batches.
      '--command-property',
      'linger.ms=1000',
      '--reader-property',
      'parse.key=true',
      '--reader-property',
      'parse.headers=true',
    ],
    '256m',
  );
  return new Promise((resolve, reject) => {
    const child = spawn(java.command, java.args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`ConsoleProducer (${codec}) exited with ${code ?? signal}:\n${output.split('\n').slice(-20).join('\n')}`));
    });
    child.stdin.end(lines);
  });
}

/** Every batch of partition 0, fetched raw from offset 0 to the high watermark. */
async function fetchAll(topic: string): Promise<RawBatch[]> {
  const leader = await raw.leaderOf(topic, 0);
  const batches: RawBatch[] = [];
  let next = 0n;
  for (;;) {
    const [p] = await raw.fetch({
      leader,
      partitions: [{ topic, partition: 0, fetchOffset: next, maxBytes: 4 << 20 }],
      maxWaitMs: 100,
      maxBytes: 4 << 20,
      isolationLevel: IsolationLevel.READ_COMMITTED,
    });
    expect(p!.error).toBeUndefined();
    const fresh = p!.batches.filter((b) => b.lastOffset >= next);
    const last = fresh.at(-1);
    if (last === undefined) throw new Error(`fetch of ${topic} from ${next} returned no batch below the high watermark ${p!.highWatermark}`);
    batches.push(...fresh);
    next = last.lastOffset + 1n;
    if (next >= p!.highWatermark) return batches;
  }
}

describe('compressed batches written by the Java producer', () => {
  it.each([
    ['gzip', Codec.gzip],
    ['snappy', Codec.snappy],
    ['lz4', Codec.lz4],
    ['zstd', Codec.zstd],
  ] as const)('%s: every batch carries the codec and decodes to the records produced', async (name, codec) => {
    const topic = randomName(`codecs-${name}`);
    created.push(topic);
    // compression.type=producer: the broker keeps the producer's batches as they are.
    expect(await createTopicsAndWait(admin, [{ topic, partitions: 1, replicationFactor: 1, configs: { 'compression.type': 'producer' } }])).toBe(true);
    const { lines, expected } = recordsFor(name);
    await javaProduce(topic, name, lines);

    const batches = await fetchAll(topic);
    expect(batches.length).toBeGreaterThan(0);
    expect(batches.map((b) => b.codec)).toEqual(batches.map(() => codec));
    const perBatch = batches.map((b) => decodeRecords(b));
    const records = perBatch.flat();
    expect(records.map((r) => r.offset)).toEqual(expected.map((_, i) => BigInt(i)));
    expect(
      records.map((r) => ({
        key: r.key?.toString() ?? null,
        value: r.value?.toString() ?? null,
        headers: r.headers.map((h) => [h.key, h.value?.toString() ?? null]),
      })),
    ).toEqual(expected);
    // At least one batch is larger than one snappy-java or lz4 block once decompressed.
    const largest = Math.max(...perBatch.map((rs) => rs.reduce((n, r) => n + (r.key?.length ?? 0) + (r.value?.length ?? 0), 0)));
    expect(largest).toBeGreaterThan(64 * 1024);
  });
});
