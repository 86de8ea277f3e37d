// Benchmark "group-sync": one round of consumer-group offset sync (kafka/group-offsets.ts, what the
// mirror runner runs every KMIRROR_GROUP_SYNC_INTERVAL_MS and failover runs once more) for G
// consumer groups (default 4,000) with committed offsets on a mirrored topic of P partitions, on the
// local stack. The first round commits every group on the destination; the second finds them all
// synced (the steady state). Every group's destination commits are then checked.
//
//   npm run bench -- group-sync [--groups 4000] [--partitions 12] [--rounds 2]
//
// Prints RESULT lines: group_sync_first_round_seconds, group_sync_steady_round_seconds.
import { cpus, loadavg, totalmem } from 'node:os';
import { benchArgs } from './support/args.ts';
import { createTopicsAndWait, deleteTopicsAndWait } from '../kafka/admin.ts';
import { syncGroupOffsets } from '../kafka/group-offsets.ts';
import { KAFKA_VERSION } from '../scripts/stack/topology.ts';
import { note, openClusters, range, result, round2, stackUp } from './support/mirroring.ts';

const { values } = benchArgs(import.meta.url, { options: { groups: { type: 'string', default: '4000' }, partitions: { type: 'string', default: '12' }, rounds: { type: 'string', default: '2' } } });
const groupCount = Number(values.groups);
const partitionCount = Number(values.partitions);
const rounds = Math.max(2, Number(values.rounds));

stackUp();
const clusters = await openClusters();
const run = `bench.groups-${Date.now().toString(36)}`;
const topic = run;
const groups = range(groupCount).map((i) => `${run}-g${String(i).padStart(5, '0')}`);
const partitions = range(partitionCount).map((partition) => ({ topic, partition }));
let exitCode = 0;
try {
  note(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${Math.round(totalmem() / 2 ** 30)} GiB; Node ${process.version}; Kafka ${KAFKA_VERSION}; load average ${loadavg().map(round2).join(' ')}`);
  const spec = { topic, partitions: partitionCount, replicationFactor: 1 };
  await createTopicsAndWait(clusters.sourceAdmin, [spec]);
  await createTopicsAndWait(clusters.destAdmin, [spec]);
  // The same 1,000 records per partition on both sides (the sync looks at offsets only).
  for (const kafka of [clusters.sourceKafka, clusters.destKafka]) {
    const producer = kafka.producer();
    await producer.connect();
    for (let i = 0; i < 10; i++) await producer.send({ topic, messages: range(partitionCount * 100).map((n) => ({ partition: n % partitionCount, value: `r${n}` })) });
    await producer.disconnect();
  }
  // Each group has consumed some way into each partition, on the source.
  const c0 = performance.now();
  for (let i = 0; i < groups.length; i += 50) {
    await Promise.all(groups.slice(i, i + 50).map((group, j) => clusters.source.commitGroupOffsets(group, partitions.map((p) => ({ ...p, offset: BigInt((i + j) % 1_000) })))));
  }
  note(`${groupCount} groups committed on the source in ${round2((performance.now() - c0) / 1000)} s`);
  const filter = { include: [`${run.replaceAll('.', '\\.')}-g.*`], exclude: [] };
  const times: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    const { summary } = await syncGroupOffsets({ admin: clusters.sourceAdmin }, { admin: clusters.destAdmin, raw: clusters.dest }, partitions, filter);
    times.push((performance.now() - t0) / 1000);
    note(`round ${r + 1}: ${round2(times[r]!)} s, ${JSON.stringify(summary)}`);
    if (r === 0 && summary.synced !== groupCount) {
      note(`the first round synced ${summary.synced} of ${groupCount} groups`);
      exitCode = 1;
    }
  }
  // Every group's destination commits equal its source commits (all within the destination's end).
  let wrong = 0;
  for (let i = 0; i < groups.length; i += 50) {
    const answers = await Promise.all(groups.slice(i, i + 50).map((groupId) => clusters.destAdmin.fetchOffsets({ groupId, topics: [topic] })));
    answers.forEach((a, j) => {
      if (a[0]!.partitions.some((p) => p.offset !== String((i + j) % 1_000))) wrong++;
    });
  }
  note(`destination commits checked: ${groupCount - wrong} of ${groupCount} groups equal their source commits`);
  if (wrong > 0) exitCode = 1;
  result('groups', groupCount);
  result('partitions_per_group', partitionCount);
  result('group_sync_first_round_seconds', round2(times[0]!), 's');
  result('group_sync_steady_round_seconds', round2(Math.min(...times.slice(1))), 's');
} catch (err) {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  exitCode = 1;
} finally {
  for (const admin of [clusters.sourceAdmin, clusters.destAdmin]) {
    for (let i = 0; i < groups.length; i += 500) await admin.deleteGroups(groups.slice(i, i + 500)).catch(() => undefined);
  }
  await Promise.all([deleteTopicsAndWait(clusters.sourceAdmin, [topic]), deleteTopicsAndWait(clusters.destAdmin, [topic])]).catch(() => undefined);
  await clusters.close();
}
process.exit(exitCode);
