// Benchmark "takeover": how long mirroring stalls when the worker that copies is killed with
// SIGKILL and another worker takes its partitions over (issue 8; DESIGN §9: Temporal reschedules
// the copy activity once its heartbeat times out, the lease keeps one writer).
//
// Per profile, two worker processes (started as `npm start` starts them) poll one task queue
// (bench/support/control-plane.ts). Per round: a new mirror of a new source topic of P partitions
// (createMirror, startTopics), a kafkajs producer writing steadily (--records-per-sec, in steps of
// 50 ms); once the destination follows, the worker holding the topic's copy leases is killed with
// SIGKILL. Measured from the kill, while the producer keeps writing:
//   - takeover: until the other worker holds the leases (partition_leases);
//   - stall: the longest time the destination's end offsets did not move (polled every 100 ms),
//     until the survivor has caught up — what a consumer of the mirror sees.
// The killed worker is started again for the next round (so the lease holder is either one). After
// each round the producer stops, the destination's ends must equal the source's, and every
// partition is compared record by record (kafka/verify.ts).
//
// Profiles: `default` (the worker's defaults: copy heartbeat timeout 10 s, lease ttl 6 s, produce
// timeout 5 s, lease grace 6 s) and `fast` (heartbeat timeout 4 s, lease ttl 3 s, produce timeout
// 2 s, grace 3 s: what an operator who wants a shorter stall sets; more heartbeats and lease
// renewals in exchange). A stall is timer-bound, so profiles run one after the other.
//
//   npm run bench -- takeover [--rounds 4] [--partitions 4] [--records-per-sec 400] [--profiles default,fast]
//
// Prints RESULT takeover_<profile>_stall_ms_median/min/max and takeover_<profile>_lease_ms_median.
import { cpus, loadavg, totalmem } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { benchArgs, usageError } from './support/args.ts';
import { awaitOperation, startOperation } from '../client/index.ts';
import { verifyPartition } from '../kafka/verify.ts';
import type { Child } from '../test/support/child.ts';
import { steadyWriter } from '../test/support/mirror-fixture.ts';
import { randomName } from '../test/support/stack.ts';
import { startControlPlane, type BenchControlPlane } from './support/control-plane.ts';
import { median, note, openClusters, range, result, stackUp, sum, type BenchClusters } from './support/mirroring.ts';

const PROFILES: Readonly<Record<string, Record<string, string>>> = {
  default: {},
  fast: { KMIRROR_COPY_HEARTBEAT_TIMEOUT_MS: '4000', KMIRROR_LEASE_TTL_MS: '3000', KMIRROR_PRODUCE_TIMEOUT_MS: '2000', KMIRROR_LEASE_GRACE_MS: '3000' },
};

const { values } = benchArgs(import.meta.url, {
  options: {
    rounds: { type: 'string', default: '4' },
    partitions: { type: 'string', default: '4' },
    'records-per-sec': { type: 'string', default: '400' },
    profiles: { type: 'string', default: 'default,fast' },
  },
});
const rounds = Number(values.rounds);
const partitionCount = Number(values.partitions);
const perStep = Math.max(1, Math.round(Number(values['records-per-sec']) / 20));
const profiles = values.profiles.split(',').map((p) => {
  if (PROFILES[p] === undefined) usageError(import.meta.url, `--profiles: unknown profile '${p}' (one of ${Object.keys(PROFILES).join(', ')})`);
  return p;
});
if (!Number.isInteger(rounds) || rounds < 1) usageError(import.meta.url, `--rounds must be a positive integer, got ${values.rounds}`);

stackUp();
const clusters = await openClusters();
note(`machine: ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
note(`load: ${partitionCount} partitions, ${perStep * 20} records/s of ~100 B (kafkajs, idempotent), ${rounds} rounds per profile`);

/** Per partition of `topic`, the pid of the worker holding its live copy lease (owners start with `<pid>@<host>`). */
async function leaseHolders(plane: BenchControlPlane, topic: string): Promise<Map<number, number>> {
  const rows = await plane.db.selectFrom('partition_leases').select(['partition', 'owner', 'expires_at']).where('topic', '=', topic).execute();
  const live = rows.filter((r) => r.owner !== null && r.expires_at !== null && r.expires_at.getTime() > Date.now());
  return new Map(live.map((r) => [r.partition, Number(r.owner!.split('@')[0])]));
}

/** Records on the destination in `partitions` of `topic`. */
const destRecords = async (c: BenchClusters, topic: string, partitions: readonly number[]): Promise<bigint> => sum(await c.dest.listOffsets(topic, partitions, 'latest').catch(() => new Map<number, bigint>()));

async function round(plane: BenchControlPlane, workers: Child[], profile: string, n: number): Promise<{ stallMs: number; leaseMs: number }> {
  const mirror = randomName(`takeover-${profile}`);
  const topic = randomName('takeover');
  await clusters.createTopic(clusters.sourceAdmin, topic, partitionCount);
  clusters.track(clusters.destAdmin, topic);
  await awaitOperation(await startOperation(plane.temporal, 'createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst', actor: 'bench' }));
  await awaitOperation(await startOperation(plane.temporal, 'startTopics', { mirror, topics: [topic], actor: 'bench' }));
  const writer = steadyWriter(clusters.sourceKafka, topic, partitionCount, perStep);
  const all = range(partitionCount);
  // The destination follows, and every partition's lease is held. (The runner may spread the
  // partitions over copy activities on both workers: the victim is the holder of partition 0, and
  // the stall is measured on the partitions it held.)
  const deadline = Date.now() + 60_000;
  let holders = new Map<number, number>();
  while ((await destRecords(clusters, topic, all)) < 200n || (holders = await leaseHolders(plane, topic)).size < partitionCount) {
    if (Date.now() > deadline) throw new Error(`round ${n}: the mirror did not start copying within 60 s`);
    await sleep(100);
  }
  const victim = workers.find((w) => w.process.pid === holders.get(0));
  if (victim === undefined) throw new Error(`round ${n}: the lease holder ${holders.get(0)} is not one of the workers`);
  const survivor = workers.find((w) => w !== victim)!;
  const held = all.filter((p) => holders.get(p) === victim.process.pid);
  await sleep(1_000);

  const killedAt = Date.now();
  victim.process.kill('SIGKILL');
  let last = await destRecords(clusters, topic, held);
  let lastMoved = killedAt;
  let stallMs = 0;
  let leaseMs: number | undefined;
  // Until the survivor holds the victim's leases and the destination has moved since.
  while (leaseMs === undefined || lastMoved <= killedAt + leaseMs || Date.now() - killedAt - leaseMs < 3_000) {
    if (Date.now() - killedAt > 180_000) throw new Error(`round ${n}: no takeover within 180 s`);
    await sleep(100);
    if (leaseMs === undefined) {
      const now = await leaseHolders(plane, topic);
      if (held.every((p) => now.get(p) === survivor.process.pid)) leaseMs = Date.now() - killedAt;
    }
    const now = await destRecords(clusters, topic, held);
    if (now > last) {
      stallMs = Math.max(stallMs, Date.now() - lastMoved);
      lastMoved = Date.now();
      last = now;
    }
  }
  const sent = await writer.stop();
  await victim.exited;
  workers.splice(workers.indexOf(victim), 1, await plane.startWorker());

  const caughtUp = Date.now() + 60_000;
  while ((await destRecords(clusters, topic, all)) !== BigInt(sent)) {
    if (Date.now() > caughtUp) throw new Error(`round ${n}: the destination did not reach the ${sent} records written within 60 s`);
    await sleep(200);
  }
  for (const p of all) {
    const v = await verifyPartition(clusters.source, clusters.dest, topic, p);
    if (!v.equal) throw new Error(`round ${n}: ${topic}-${p} differs: ${JSON.stringify(v)}`);
  }
  note(`${profile} round ${n}: stall ${stallMs} ms on the ${held.length} partition(s) the killed worker copied, leases taken over after ${leaseMs} ms; ${sent} records written, verified record by record`);
  await awaitOperation(await startOperation(plane.temporal, 'pauseTopics', { mirror, allTopics: true, actor: 'bench' }));
  await clusters.deleteTopic(clusters.sourceAdmin, topic);
  await clusters.deleteTopic(clusters.destAdmin, topic);
  return { stallMs, leaseMs: leaseMs! };
}

try {
  for (const profile of profiles) {
    const plane = await startControlPlane({ prefix: 'takeover', source: clusters.sourceConnection, destination: clusters.destConnection, env: PROFILES[profile]! });
    try {
      const workers = [plane.worker, await plane.startWorker()];
      const runs = [];
      for (let n = 1; n <= rounds; n++) runs.push(await round(plane, workers, profile, n));
      const stalls = runs.map((r) => r.stallMs);
      result(`takeover_${profile}_stall_ms_median`, median(stalls), 'ms');
      result(`takeover_${profile}_stall_ms_min`, Math.min(...stalls), 'ms');
      result(`takeover_${profile}_stall_ms_max`, Math.max(...stalls), 'ms');
      result(`takeover_${profile}_lease_ms_median`, median(runs.map((r) => r.leaseMs)), 'ms');
    } finally {
      await plane.close();
    }
  }
} finally {
  await clusters.close();
}
