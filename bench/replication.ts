// Benchmark "replication": the byte-copy reference for bench/throughput.ts — how fast the
// destination broker itself copies the same data to a follower, on this machine. Kafka's replica
// fetcher moves log bytes without decoding them, as kmirror does; it is what "as fast as bytes can
// be copied between two brokers here" means, beside the Java clients' ceilings.
//
// Needs two destination nodes: stops the destination and runs `stack up --dest-nodes 2`, which
// RE-FORMATS the destination cluster (its data is discarded), and does the same with one node (a
// re-format again) at the end unless --keep-nodes. Per round: a topic of P partitions on node 1 only, filled with N bytes
// of R-byte records by ProducerPerformance batching as the throughput benchmark's profile does,
// then a reassignment adds node 2 as a replica of every partition; the time from the reassignment
// to the last partition having node 2 in sync gives MiB/s, with the CPU seconds per GiB of both
// destination brokers over that window (from /proc).
//
//   npm run bench -- replication [--mib 1024] [--record-bytes 1024] [--partitions 12] [--rounds 2]
//        [--batch-bytes 16384] [--keep-nodes]
//
// Prints RESULT replica_catch_up=<MiB/s> (median) and its range, and the CPU figure.
import { spawnSync } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { benchArgs } from './support/args.ts';
import { brokerPids, clientProperties } from '../scripts/stack/kafka.ts';
import { KAFKA_VERSION, projectRoot } from '../scripts/stack/topology.ts';
import { producerPerformance } from './support/kafka-tools.ts';
import { median, mibPerS, note, openClusters, range, result, round2 } from './support/mirroring.ts';
import { cpuSeconds } from './support/proc-cpu.ts';

const { values } = benchArgs(import.meta.url, {
  options: {
    mib: { type: 'string', default: '1024' },
    'record-bytes': { type: 'string', default: '1024' },
    partitions: { type: 'string', default: '12' },
    rounds: { type: 'string', default: '2' },
    'batch-bytes': { type: 'string', default: '16384' },
    'keep-nodes': { type: 'boolean', default: false },
  },
});
const recordBytes = Number(values['record-bytes']);
const records = Math.floor((Number(values.mib) * 2 ** 20) / recordBytes);
const partitionCount = Number(values.partitions);
const rounds = Number(values.rounds);

/** `stack down --only dest`, then `stack up --quiet --dest-nodes n` (the stack refuses to change
 *  the node count of a running cluster); exits on failure. */
function stackWithDestNodes(n: number): void {
  for (const args of [['down', '--only', 'dest'], ['up', '--quiet', '--dest-nodes', String(n)]]) {
    const step = spawnSync(process.execPath, ['--import', 'tsx', join(projectRoot, 'scripts', 'stack.ts'), ...args], { stdio: 'inherit' });
    if (step.status !== 0) process.exit(step.status ?? 1);
  }
}

stackWithDestNodes(2);
const clusters = await openClusters();
const { destConnection, destAdmin } = clusters;
const destProps = clientProperties('dest', destConnection);
const run = `bench.replication-${Date.now().toString(36)}`;

/** True when every partition of `topic` has `follower` in its ISR and no reassignment is left. */
async function caughtUp(topic: string, follower: number): Promise<boolean> {
  const pending = await destAdmin.listPartitionReassignments({ topics: [{ topic, partitions: range(partitionCount) }] });
  if (pending.topics.some((t) => t.partitions.length > 0)) return false;
  const metadata = await destAdmin.fetchTopicMetadata({ topics: [topic] });
  return metadata.topics[0]!.partitions.every((p) => p.isr.includes(follower));
}

try {
  note(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${Math.round(totalmem() / 2 ** 30)} GiB; Node ${process.version}; Kafka ${KAFKA_VERSION}`);
  const brokers = (await destAdmin.describeCluster()).brokers.map((b) => b.nodeId).sort((a, b) => a - b);
  if (brokers.length < 2) throw new Error(`the destination has ${brokers.length} node(s); 2 are needed`);
  const [leader, follower] = brokers as [number, number];
  note(`volume: ${records} records × ${recordBytes} B over ${partitionCount} partitions, producer batch.size ${values['batch-bytes']}; node ${leader} → node ${follower}; ${rounds} rounds`);
  const rates: number[] = [];
  const cpuPerGiB: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const topic = `${run}-${r}`;
    await destAdmin.createTopics({ waitForLeaders: true, topics: [{ topic, replicaAssignment: range(partitionCount).map((partition) => ({ partition, replicas: [leader] })) }] });
    const fill = await producerPerformance({ propertiesFile: destProps, topic, records, recordSize: recordBytes, extra: { 'batch.size': values['batch-bytes']! } });
    const pids = brokerPids('dest');
    const cpu = (): number => pids.reduce((n, pid) => n + cpuSeconds(pid), 0);
    const cpu0 = cpu();
    const t0 = performance.now();
    await destAdmin.alterPartitionReassignments({ topics: [{ topic, partitionAssignment: range(partitionCount).map((partition) => ({ partition, replicas: [leader, follower] })) }] });
    while (!(await caughtUp(topic, follower))) await sleep(50);
    const ms = performance.now() - t0;
    const gib = (records * recordBytes) / 2 ** 30;
    rates.push(mibPerS(records * recordBytes, ms));
    cpuPerGiB.push(round2((cpu() - cpu0) / gib));
    note(`round ${r + 1}: filled at ${fill.mbPerSec} MiB/s; follower in sync after ${Math.round(ms)} ms = ${rates.at(-1)} MiB/s; both brokers ${cpuPerGiB.at(-1)} CPU-s/GiB`);
    await clusters.deleteTopic(destAdmin, topic);
  }
  result('replica_catch_up', median(rates), 'MiB/s');
  result('replica_catch_up_range', `${Math.min(...rates)}-${Math.max(...rates)}`, 'MiB/s');
  result('replica_catch_up_brokers_cpu_per_gib', round2(median(cpuPerGiB)), 'CPU-s/GiB');
} finally {
  await clusters.close();
  if (!values['keep-nodes']) stackWithDestNodes(1);
}
