// `npm run demo`: the local stack and the worker up, then kmirror's data plane on a real topic —
// a source topic whose retention already removed its head is mirrored into the secured
// destination with every offset preserved, and both logs are compared record by record.
// Ends by printing the endpoints and the Temporal Web UI URL. `npm run stack -- down` stops it all.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { createDatabase } from '../db/connect.ts';
import { createPartitionLease } from '../db/leases.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { createTopicsAndWait } from '../kafka/admin.ts';
import { ByteBudget } from '../kafka/budget.ts';
import { createKafka } from '../kafka/connection.ts';
import { copy } from '../kafka/copier.ts';
import { RawCluster } from '../kafka/protocol.ts';
import { verifyPartition } from '../kafka/verify.ts';
import { connectionFor } from './stack/kafka.ts';
import { databaseUrl } from './stack/postgres.ts';
import { projectRoot, stackDir } from './stack/topology.ts';
import { startWorker, workerLog } from './stack/worker.ts';

const say = (line: string): void => void process.stdout.write(`${line}\n`);

const up = spawnSync(process.execPath, ['--import', 'tsx', join(projectRoot, 'scripts', 'stack.ts'), 'up'], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
if (up.status !== 0) process.exit(up.status ?? 1);
const endpoints = up.stdout;

const workerPidNow = await startWorker();
say(`worker: running (pid ${workerPidNow}, log ${workerLog})`);

const topic = `demo.orders-${Date.now().toString(36)}`;
const partitions = [0, 1, 2];
const sourceKafka = createKafka(connectionFor('source'));
const destKafka = createKafka(connectionFor('dest'));
const source = new RawCluster(sourceKafka);
const dest = new RawCluster(destKafka);
const db = createDatabase(databaseUrl);
await migrateToLatest(db);

const sourceAdmin = sourceKafka.admin();
const destAdmin = destKafka.admin();
await Promise.all([sourceAdmin.connect(), destAdmin.connect()]);
const spec = { topic, partitions: partitions.length, replicationFactor: 1 };
await createTopicsAndWait(sourceAdmin, [spec]);
await createTopicsAndWait(destAdmin, [spec]);
const producer = sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
await producer.connect();
for (let i = 0; i < 30; i++) {
  await producer.send({
    topic,
    messages: Array.from({ length: 1_000 }, (_, j) => {
      const n = i * 1_000 + j;
      return { partition: n % 3, key: `order-${n}`, value: JSON.stringify({ order: n, amount: n % 97 }), headers: { source: 'demo' } };
    }),
  });
}
await producer.disconnect();
// Retention on the source already removed the first 2,500 records of partition 0.
await source.deleteRecords(topic, new Map([[0, 2_500n]]));
say(`\nsource topic ${topic}: 30,000 records in 3 partitions; partition 0 starts at offset 2500 (retention)`);

const started = Date.now();
const result = await copy({
  source,
  destination: dest,
  assignments: [{ topic, partitions }],
  budget: new ByteBudget(32 * 1024 * 1024),
  lease: createPartitionLease(db, { mirror: 'demo', assignments: [{ topic, partitions }], owner: `demo-${process.pid}`, ttlMs: 10_000, graceMs: 15_000 }),
  signal: AbortSignal.timeout(120_000),
  untilCaughtUp: true,
});
say(`mirrored in ${Date.now() - started} ms: ${result.stats.records} records in ${result.stats.batches} batches copied as bytes, ${result.stats.fillerRecords} alignment offsets`);
say('\npartition  source [start, end)   destination [start, end)   record-by-record');
for (const p of partitions) {
  const [srcStart, srcEnd, dstStart, dstEnd, verified] = await Promise.all([
    source.listOffsets(topic, [p], 'earliest'),
    source.listOffsets(topic, [p], 'latest'),
    dest.listOffsets(topic, [p], 'earliest'),
    dest.listOffsets(topic, [p], 'latest'),
    verifyPartition(source, dest, topic, p),
  ]);
  const range = (a: Map<number, bigint>, b: Map<number, bigint>): string => `[${a.get(p)}, ${b.get(p)})`.padEnd(24);
  say(`${String(p).padEnd(10)} ${range(srcStart, srcEnd)} ${range(dstStart, dstEnd)}   ${verified.equal ? `equal (${verified.recordsCompared} records)` : `DIFFERENT at ${JSON.stringify(verified.firstMismatch)}`}`);
  if (!verified.equal) process.exitCode = 1;
}
await Promise.all([sourceAdmin.disconnect(), destAdmin.disconnect(), source.close(), dest.close(), db.destroy()]);

say(`\nendpoints (also in ${join(stackDir, 'env')}):\n${endpoints.trim()}`);
say(`\nTemporal Web UI: ${endpoints.match(/^TEMPORAL_UI_URL=(.*)$/m)?.[1] ?? 'http://127.0.0.1:8233'}`);
say('stop everything with: npm run stack -- down');
process.exit();
