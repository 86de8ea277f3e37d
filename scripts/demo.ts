// `npm run demo`: the product on the local stack, through its own CLI. The stack and a worker come
// up; the two local clusters are registered; a mirror is created and a topic whose head retention
// already removed is started (its destination is created read-only and aligned to the source's log
// start); records keep arriving while it mirrors; `describe` shows the lag reaching 0; pause holds
// the destination while the source grows and resume catches up; every partition is compared record
// by record; then the disaster-recovery round trip: failover (the destination becomes writable and
// takes writes), the old primary takes a stray write too (a divergent tail), failback archives that
// tail and makes the old primary a mirror of the new one, promote brings it back, and both logs are
// compared again; the mirror's history is printed with the Temporal UI links of its workflows.
// `npm run stack -- down` stops it all.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { runCli } from '../cli/program.ts';
import { workflowUrl } from '../client/index.ts';
import { createDatabase } from '../db/connect.ts';
import { readStream } from '../db/event-store/read-stream.ts';
import { mirrorStreamId } from '../domain/events.ts';
import { createTopicsAndWait } from '../kafka/admin.ts';
import { createKafka } from '../kafka/connection.ts';
import { RawCluster } from '../kafka/protocol.ts';
import { verifyPartition } from '../kafka/verify.ts';
import { appConnection, connectionFor } from './stack/kafka.ts';
import { databaseUrl } from './stack/postgres.ts';
import { secretFiles } from './stack/secrets.ts';
import { projectRoot, stackDir } from './stack/topology.ts';
import { startWorker, workerLog } from './stack/worker.ts';

const say = (line = ''): void => void process.stdout.write(`${line}\n`);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Run a kmirror command in-process, showing it as an operator would type it. */
async function kmirror(...args: string[]): Promise<number> {
  say(`\n$ kmirror ${args.map((a) => (/[\s'"*\\|]/.test(a) ? `'${a}'` : a)).join(' ')}`);
  return runCli(['node', 'kmirror', ...args]);
}

async function must(...args: string[]): Promise<void> {
  const code = await kmirror(...args);
  if (code !== 0) throw new Error(`kmirror ${args.join(' ')} exited ${code}`);
}

const up = spawnSync(process.execPath, ['--import', 'tsx', join(projectRoot, 'scripts', 'stack.ts'), 'up'], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
if (up.status !== 0) process.exit(up.status ?? 1);
const endpoints = up.stdout;
const uiUrl = endpoints.match(/^TEMPORAL_UI_URL=(.*)$/m)?.[1] ?? 'http://127.0.0.1:8233';

say(`worker: running (pid ${await startWorker()}, log ${workerLog})`);

const run = Date.now().toString(36);
const mirror = `demo-${run}`;
const topic = `demo.orders-${run}`;
const partitions = [0, 1, 2];
const source = createKafka(connectionFor('source'));
const sourceAdmin = source.admin();
await sourceAdmin.connect();
await createTopicsAndWait(sourceAdmin, [{ topic, partitions: partitions.length, replicationFactor: 1 }]);
const producer = source.producer({ idempotent: true, maxInFlightRequests: 1 });
await producer.connect();
let sent = 0;
const send = async (count: number) => {
  await producer.send({
    topic,
    messages: Array.from({ length: count }, (_, j) => {
      const n = sent + j;
      return { partition: n % 3, key: `order-${n}`, value: JSON.stringify({ order: n, amount: n % 97 }), headers: { source: 'demo' } };
    }),
  });
  sent += count;
};
for (let i = 0; i < 30; i++) await send(1_000);
const raw = new RawCluster(source);
// Retention on the source already removed the first 2,500 records of partition 0.
await raw.deleteRecords(topic, new Map([[0, 2_500n]]));
say(`\nsource topic ${topic}: 30,000 records in 3 partitions; partition 0 starts at offset 2500 (retention)`);

// The clusters: registered once per stack (a second demo run finds them).
const known = await runCli(['node', 'kmirror', 'cluster', 'describe', 'local-source'], { stdout: () => {}, stderr: () => {} });
if (known !== 0) {
  const dest = connectionFor('dest');
  await must('cluster', 'add', 'local-source', '--bootstrap', connectionFor('source').bootstrap.join(','));
  await must(
    'cluster', 'add', 'local-dest', '--bootstrap', dest.bootstrap.join(','), '--security-protocol', 'SASL_PLAINTEXT',
    '--sasl-mechanism', 'plain', '--username', dest.sasl!.username, '--password-file', secretFiles.destKmirrorPassword,
  );
} else {
  await must('cluster', 'list');
}

await must('create', mirror, '--source', 'local-source', '--destination', 'local-dest', '--reason', 'demo: DR copy of the orders topic');

// Records keep arriving while the mirror starts and runs.
let writing = true;
const writer = (async () => {
  while (writing) {
    await send(50);
    await pause(100);
  }
})();
await must('start', mirror, '--topic', topic, '--reason', 'demo');
say('\n(records keep arriving on the source while it mirrors)');
await pause(3_000);
await must('describe', mirror);
writing = false;
await writer;

// Lag reaches 0 once the writer has stopped.
const dest = new RawCluster(createKafka(connectionFor('dest')));
const sourceEnds = async () => [...(await raw.listOffsets(topic, partitions, 'latest')).values()].join(',');
const destEnds = async () => [...(await dest.listOffsets(topic, partitions, 'latest')).values()].join(',');
for (let i = 0; i < 100 && (await destEnds()) !== (await sourceEnds()); i++) await pause(200);
await must('describe', mirror);

await must('pause', mirror, '--all-topics', '--reason', 'demo: maintenance window');
const held = await destEnds();
await send(3_000);
await pause(2_000);
say(`\nwhile paused: 3,000 more records on the source; destination ends ${held} → ${await destEnds()} (unchanged)`);
await must('resume', mirror, '--all-topics');
for (let i = 0; i < 100 && (await destEnds()) !== (await sourceEnds()); i++) await pause(200);
await must('describe', mirror);

say('\nrecord by record (offset, key, value, headers, timestamp), source vs destination:');
let allEqual = true;
for (const p of partitions) {
  const v = await verifyPartition(raw, dest, topic, p);
  allEqual &&= v.equal;
  say(`  ${topic}-${p}: [${v.from}, ${v.to}) ${v.equal ? `equal (${v.recordsCompared} records)` : `DIFFERENT at ${JSON.stringify(v.firstMismatch)}`}`);
}

// --- Disaster recovery: A → B → A ------------------------------------------------------------
say('\n--- disaster recovery round trip ---');
await must('failover', mirror, '--all-topics', '--reason', 'demo: the source region is down');
const app = createKafka(appConnection()).producer();
await app.connect();
await app.send({ topic, messages: Array.from({ length: 300 }, (_, j) => ({ partition: j % 3, key: `after-failover-${j}`, value: 'written on the new primary' })) });
await app.disconnect();
say('\nthe application wrote 300 records to the new primary (the destination, writable now)');
await producer.send({ topic, messages: [{ partition: 1, key: 'stray', value: 'written on the old primary after the failover' }] });
say('and one stray record reached the old primary after the failover point (a divergent tail)');
await must('failback', mirror, '--dry-run');
await must('failback', mirror, '--reason', 'demo: the source region is back');
const reverse = `${mirror}-reverse`;
for (let i = 0; i < 100 && (await sourceEnds()) !== (await destEnds()); i++) await pause(200);
await must('promote', reverse, '--all-topics', '--reason', 'demo: back to the original primary');
say('\nafter the round trip, old primary vs new primary record by record:');
for (const p of partitions) {
  const v = await verifyPartition(dest, raw, topic, p);
  allEqual &&= v.equal;
  say(`  ${topic}-${p}: [${v.from}, ${v.to}) ${v.equal ? `equal (${v.recordsCompared} records)` : `DIFFERENT at ${JSON.stringify(v.firstMismatch)}`}`);
}

await must('history', mirror, '--limit', '12', '--verify');

const db = createDatabase(databaseUrl);
const workflows = [
  ...new Set([...(await readStream(db, mirrorStreamId(mirror))), ...(await readStream(db, mirrorStreamId(reverse)))].map((e) => e.metadata.workflowId).filter((id): id is string => id !== undefined)),
];
say('\nthe workflows of this mirror in the Temporal Web UI:');
for (const id of workflows) say(`  ${workflowUrl(uiUrl, 'default', id)}`);
await Promise.all([producer.disconnect(), sourceAdmin.disconnect(), raw.close(), dest.close(), db.destroy()]);

say(`\nendpoints (also in ${join(stackDir, 'env')}):\n${endpoints.trim()}`);
say(`\nTemporal Web UI: ${uiUrl}`);
say('stop everything with: npm run stack -- down');
process.exit(allEqual ? 0 : 1);
