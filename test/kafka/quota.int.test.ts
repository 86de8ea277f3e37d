// Limiting the mirror's bandwidth with what stock Kafka already has (KIP-1279 review RS10): a
// fetch quota (consumer_byte_rate) on the source for kmirror's client id. The broker answers a
// throttled fetch at once with its throttle time and then mutes the connection for that long; the
// copier must take that as a slower source — no request timing out, no resync, every record
// exact — and the rate must follow the quota. A client id of its own here, so no other test is
// throttled.
import { spawnSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { ByteBudget } from '../../kafka/budget.ts';
import { createKafka } from '../../kafka/connection.ts';
import { copy } from '../../kafka/copier.ts';
import { RawCluster } from '../../kafka/protocol.ts';
import { clientProperties, kafkaJava } from '../../scripts/stack/kafka.ts';
import { allPartitions, messages, sendAll, TEST_PRODUCE_TIMEOUT_MS, useMirrorFixture } from '../support/mirror-fixture.ts';
import { randomName, sourceConnection, testClientOptions } from '../support/stack.ts';

const fixture = useMirrorFixture();
const clientId = randomName('kmirror-quota');
const RATE = 1024 * 1024; // bytes per second

/** kafka-configs (Kafka's ConfigCommand) on the source, for `clientId`. */
function sourceClientQuota(change: ['--add-config' | '--delete-config', string]): void {
  const java = kafkaJava(
    'kafka.admin.ConfigCommand',
    ['--bootstrap-server', sourceConnection().bootstrap.join(','), '--command-config', clientProperties('quota-test-source', sourceConnection()), '--alter', '--entity-type', 'clients', '--entity-name', clientId, ...change],
    '256m',
  );
  const result = spawnSync(java.command, java.args, { encoding: 'utf8', timeout: 60_000 });
  if (result.status !== 0) throw new Error(`ConfigCommand ${change.join(' ')} failed: ${result.stdout}${result.stderr}`);
}

let throttled: RawCluster | undefined;
afterAll(async () => {
  sourceClientQuota(['--delete-config', 'consumer_byte_rate']);
  await throttled?.close();
});

describe('a fetch quota on the source', () => {
  it("limits the copier to the quota's rate, and the copy stays exact with no resync", async () => {
    const f = fixture();
    // One partition: a quota holds per broker, and one partition has one leader on any stack.
    const partitions = allPartitions(1);
    const topic = await f.topicPair({ partitions: 1 });
    const producer = await f.producer();
    const count = 16_000; // ~16 MiB of 1 KiB values
    await sendAll(producer, topic, messages(count, 1, { valueBytes: 1024 }));
    sourceClientQuota(['--add-config', `consumer_byte_rate=${RATE}`]);
    throttled = new RawCluster(createKafka({ ...sourceConnection(), clientId }, testClientOptions));

    const started = performance.now();
    const result = await copy({
      source: throttled,
      destination: f.dest,
      assignments: [{ topic, partitions }],
      budget: new ByteBudget(32 * 1024 * 1024),
      lease: f.lease(topic, partitions),
      signal: new AbortController().signal,
      untilCaughtUp: true,
      // Fetches of 1 MiB, so the quota meets many of them.
      options: { produceTimeoutMs: TEST_PRODUCE_TIMEOUT_MS, fetchMaxBytes: 1024 * 1024, partitionMaxBytes: 512 * 1024 },
    });
    const seconds = (performance.now() - started) / 1000;
    const rate = result.stats.bytes / seconds;
    console.log(`quota ${RATE} B/s: ${result.stats.bytes} bytes in ${seconds.toFixed(1)} s = ${Math.round(rate)} B/s, ${result.stats.resyncs} resync(s)`);

    expect(result.partitions.map((p) => p.status)).toEqual(['caught-up']);
    expect(result.stats.records).toBe(count);
    // The start's one resync, no other: throttled answers are neither timeouts nor errors.
    expect(result.stats.resyncs).toBe(1);
    // The broker measures a client's rate over its quota windows (11 of 1 s), so about the first
    // 10 s worth of the quota pass unthrottled; the rest goes at the quota. Unthrottled, the
    // copier moves these 16 MiB in under a second on this stack; throttled it took 12.2 s
    // (2026-12-07). A fifth of margin below the ideal time.
    expect(seconds).toBeGreaterThan(0.8 * (result.stats.bytes / RATE - 11));
    for (const v of await f.verifyAll(topic, partitions)) expect(v).toMatchObject({ equal: true });
  });
});
