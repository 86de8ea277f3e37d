// Benchmark "transactions": what gap filling (kafka/gap-filler.ts) costs. Sources are written by
// librdkafka producers (Python confluent-kafka, test/support/second-client.ts), on the local stack:
//   small-txn   T one-record transactions (every other offset a commit marker: T gaps to fill)
//   large-txn   R records of 1 KiB in transactions of 500 records
//   large-plain the same R records, no transactions
// Each round copies every topic once into a fresh destination topic with the copier in its own
// process (untilCaughtUp), transactional and plain alternating which goes first; each copy is timed
// from the first record's arrival on the destination to the last (watchDestination) and verified
// record by record.
//
//   npm run bench -- transactions [--txns 4000] [--records 100000] [--partitions 4] [--rounds 2]
//
// RESULT lines: gap_fill_offsets_per_s (small-txn: offsets/s, every other one a filled gap),
// large_txn_mib_per_s, large_plain_mib_per_s, txn_vs_plain (large, medians).
import { cpus, loadavg, totalmem } from 'node:os';
import { benchArgs } from './support/args.ts';
import { IsolationLevel } from '../kafka/protocol.ts';
import { verifyPartition } from '../kafka/verify.ts';
import { KAFKA_VERSION } from '../scripts/stack/topology.ts';
import { LibrdkafkaProducers } from '../test/support/second-client.ts';
import { finishCopier, median, mibPerS, note, openClusters, range, result, round1, round2, stackUp, startCopier, sum, watchDestination } from './support/mirroring.ts';

const { values } = benchArgs(import.meta.url, {
  options: { txns: { type: 'string', default: '4000' }, records: { type: 'string', default: '100000' }, partitions: { type: 'string', default: '4' }, rounds: { type: 'string', default: '2' } },
});
const txns = Number(values.txns);
const records = Number(values.records);
const partitionCount = Number(values.partitions);
const rounds = Math.max(2, Number(values.rounds) + (Number(values.rounds) % 2));
const partitions = range(partitionCount);
const VALUE = 'x'.repeat(1_000);
const BUDGET = 64 * 1024 * 1024;

stackUp();
const clusters = await openClusters();
const run = `bench.txn-${Date.now().toString(36)}`;
const topics = { smallTxn: `${run}-small-txn`, largeTxn: `${run}-large-txn`, largePlain: `${run}-large-plain` };
let exitCode = 0;

/** Write a topic with librdkafka: producer 0 transactional, producer 1 idempotent. */
async function write(topic: string, count: number, perTxn: number, transactional: boolean, value: string): Promise<void> {
  const producers = await LibrdkafkaProducers.start({ topic, transactional: [true, false], id: `${topic}-w` });
  try {
    for (let n = 0; n < count; ) {
      const size = Math.min(perTxn, count - n);
      if (transactional) producers.send({ op: 'begin', p: 0 });
      for (let i = 0; i < size; i++, n++) producers.send({ op: 'send', p: transactional ? 0 : 1, partition: n % partitionCount, key: `k${n}`, value });
      producers.send(transactional ? { op: 'commit', p: 0 } : { op: 'flush', p: 1 });
      if (n % 2_000 < size) await producers.sync();
    }
    await producers.sync();
  } finally {
    await producers.close();
  }
}

/** Copy `topic` into a fresh destination topic; returns the active time and the offsets copied. */
async function copyOnce(topic: string): Promise<{ activeMs: number; offsets: bigint; bytes: number }> {
  await clusters.deleteTopic(clusters.destAdmin, topic).catch(() => undefined);
  await clusters.createTopic(clusters.destAdmin, topic, partitionCount);
  const end = await clusters.source.listOffsets(topic, partitions, 'latest', IsolationLevel.READ_COMMITTED);
  const child = startCopier([topic], partitions, true, { budgetBytes: BUDGET, copiers: 1 });
  const { activeMs } = await watchDestination(clusters.dest, topic, partitions, sum(end));
  await finishCopier(child, { terminate: false, budgetBytes: BUDGET });
  let compared = 0;
  for (const p of partitions) {
    const v = await verifyPartition(clusters.source, clusters.dest, topic, p);
    if (!v.equal) {
      note(`${topic}-${p} differs: ${JSON.stringify(v.firstMismatch)}`);
      exitCode = 1;
    }
    compared += v.recordsCompared;
  }
  return { activeMs, offsets: sum(end), bytes: compared * (VALUE.length + 10) };
}

try {
  note(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${Math.round(totalmem() / 2 ** 30)} GiB; Node ${process.version}; Kafka ${KAFKA_VERSION}; load average ${loadavg().map(round2).join(' ')}`);
  for (const topic of Object.values(topics)) await clusters.createTopic(clusters.sourceAdmin, topic, partitionCount);
  const w0 = performance.now();
  await write(topics.smallTxn, txns, 1, true, 'v');
  note(`${txns} one-record transactions written in ${round1((performance.now() - w0) / 1000)} s`);
  await write(topics.largeTxn, records, 500, true, VALUE);
  await write(topics.largePlain, records, 500, false, VALUE);
  note(`load: ${txns} one-record transactions, ${records} records of 1 KiB (transactions of 500, and plain), ${partitionCount} partitions`);

  const gapRate: number[] = [];
  const largeTxn: number[] = [];
  const largePlain: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const txnFirst = r % 2 === 0;
    for (const kind of txnFirst ? (['txn', 'plain'] as const) : (['plain', 'txn'] as const)) {
      const large = await copyOnce(kind === 'txn' ? topics.largeTxn : topics.largePlain);
      (kind === 'txn' ? largeTxn : largePlain).push(mibPerS(large.bytes, large.activeMs));
      note(`round ${r + 1} ${kind}: ${mibPerS(large.bytes, large.activeMs)} MiB/s`);
      if (kind === 'txn') {
        const small = await copyOnce(topics.smallTxn);
        gapRate.push(Number(small.offsets) / (small.activeMs / 1000));
        note(`round ${r + 1} one-record transactions: ${small.offsets} offsets in ${round2(small.activeMs / 1000)} s`);
      }
    }
  }
  const show = (xs: number[]): string => `(rounds ${xs.map((x) => round1(x)).join(', ')})`;
  result('gap_fill_offsets_per_s', Math.round(median(gapRate)), show(gapRate));
  result('large_txn_mib_per_s', round1(median(largeTxn)), show(largeTxn));
  result('large_plain_mib_per_s', round1(median(largePlain)), show(largePlain));
  result('txn_vs_plain', round2(median(largeTxn) / median(largePlain)), '(large transactions vs plain, medians)');
} catch (err) {
  note(`failed: ${(err as Error).stack ?? String(err)}`);
  exitCode = 1;
} finally {
  await clusters.close();
}
process.exit(exitCode);
