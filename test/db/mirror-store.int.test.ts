import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { executeMirrorCommand } from '../../db/mirror-store.ts';
import { registerCluster } from '../../db/cluster-store.ts';
import { describeMirror } from '../../db/projections/describe-mirror.ts';
import { loadMirror } from '../../db/projections/load-mirror.ts';
import { readStream } from '../../db/event-store/read-stream.ts';
import { verifyChain } from '../../db/event-store/verify-chain.ts';
import type { MirrorCommand } from '../../domain/commands.ts';
import { randomName } from '../support/stack.ts';
import { migratedDatabase, type TestDatabase } from './fixture.ts';

let t: TestDatabase;
const key = randomBytes(32);
const who = { actor: 'operator@example', reason: 'int test' };

beforeAll(async () => {
  t = await migratedDatabase('mirrorstore');
  for (const cluster of ['east', 'west']) {
    await registerCluster(t.db, key, { cluster, connection: { bootstrap: [`${cluster}:9092`], securityProtocol: 'PLAINTEXT' } }, who);
  }
});
afterAll(async () => t?.close());

async function newMirror(topics: { topic: string; partitionCount: number }[], mirroring = true): Promise<string> {
  const mirror = randomName('m');
  await executeMirrorCommand(t.db, { type: 'CreateMirror', mirror, sourceCluster: 'east', destinationCluster: 'west' }, who);
  await executeMirrorCommand(t.db, { type: 'StartTopics', mirror, topics }, who);
  if (mirroring) await executeMirrorCommand(t.db, { type: 'CompleteTruncation', mirror, partitions: 'all' }, who);
  return mirror;
}

async function states(mirror: string): Promise<Record<string, number>> {
  const rows = await t.db.selectFrom('mirror_partitions').select(['state']).where('mirror', '=', mirror).execute();
  const out: Record<string, number> = {};
  for (const r of rows) out[r.state] = (out[r.state] ?? 0) + 1;
  return out;
}

describe('executeMirrorCommand', () => {
  it('refuses a mirror between clusters that are not registered', async () => {
    await expect(executeMirrorCommand(t.db, { type: 'CreateMirror', mirror: randomName('m'), sourceCluster: 'east', destinationCluster: 'nowhere' }, who)).rejects.toMatchObject({
      code: 'UNKNOWN_CLUSTER',
      message: expect.stringMatching(/cluster nowhere is not registered/),
    });
  });

  it('projects every partition of started topics and moves them through the lifecycle', async () => {
    const mirror = await newMirror([{ topic: 'orders', partitionCount: 6 }, { topic: 'payments', partitionCount: 2 }]);
    expect(await states(mirror)).toEqual({ MIRRORING: 8 });
    await executeMirrorCommand(t.db, { type: 'PauseTopics', mirror, partitions: [{ topic: 'orders', partitions: [0, 1] }] }, who);
    await executeMirrorCommand(t.db, { type: 'CompletePause', mirror, partitions: [{ topic: 'orders', partitions: [0] }] }, who);
    expect(await states(mirror)).toEqual({ MIRRORING: 6, PAUSING: 1, PAUSED: 1 });
    const described = await describeMirror(t.db, mirror);
    expect(described).toMatchObject({ name: mirror, state: 'active', sourceCluster: 'east', destinationCluster: 'west' });
    expect(described.topics.map((x) => [x.topic, x.partitionCount, x.partitions.length])).toEqual([
      ['orders', 6, 6],
      ['payments', 2, 2],
    ]);
    expect(described.topics[0]!.partitions.slice(0, 2).map((p) => p.state)).toEqual(['PAUSED', 'PAUSING']);
  });

  it('keeps a failure in the projection: previous state, attempt, retryable, error', async () => {
    const mirror = await newMirror([{ topic: 'orders', partitionCount: 1 }]);
    await executeMirrorCommand(
      t.db,
      { type: 'FailPartitions', mirror, partitions: 'all', error: { code: 'CLUSTER_UNREACHABLE', message: 'source east unreachable' }, retryable: true },
      who,
    );
    await executeMirrorCommand(t.db, { type: 'RetryPartitions', mirror, partitions: 'all', trigger: 'automatic' }, who);
    await executeMirrorCommand(
      t.db,
      { type: 'FailPartitions', mirror, partitions: 'all', error: { code: 'OFFSET_DIVERGENCE', message: 'base offset 12, expected 10' }, retryable: false },
      who,
    );
    const row = await t.db.selectFrom('mirror_partitions').selectAll().where('mirror', '=', mirror).executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      state: 'FAILED',
      previous_state: 'MIRRORING',
      retry_attempt: 1,
      retryable: false,
      error_code: 'OFFSET_DIVERGENCE',
      error_message: 'base offset 12, expected 10',
    });
    const failed = await describeMirror(t.db, mirror, { failedOnly: true });
    expect(failed.topics[0]!.partitions).toHaveLength(1);
  });

  it('stores offsets as int8 and returns them as bigint, beyond 2^53', async () => {
    const mirror = await newMirror([{ topic: 'orders', partitionCount: 1 }]);
    const offset = (1n << 62n) + 12_345n;
    await executeMirrorCommand(t.db, { type: 'RecordLastMirrored', mirror, positions: [{ topic: 'orders', partition: 0, offset, leaderEpoch: 7, checksum: 'crc32c:00ff00ff' }] }, who);
    const row = await t.db.selectFrom('mirror_partitions').select(['last_mirrored_offset', 'last_mirrored_epoch', 'last_mirrored_checksum']).where('mirror', '=', mirror).executeTakeFirstOrThrow();
    expect(row).toEqual({ last_mirrored_offset: offset, last_mirrored_epoch: 7, last_mirrored_checksum: 'crc32c:00ff00ff' });
    const loaded = await loadMirror(t.db, mirror, 'all');
    expect(loaded.state.topics.get('orders')!.partitions[0]!.lastMirrored?.offset).toBe(offset);
    expect((await describeMirror(t.db, mirror)).topics[0]!.partitions[0]!.lastMirrored?.offset).toBe(offset.toString());
  });

  it('moves N partitions with one transaction of a few statements, however large N is', async () => {
    const counts: number[] = [];
    for (const n of [20, 2_000]) {
      const mirror = await newMirror([{ topic: 'wide', partitionCount: n }]);
      const statements: string[] = [];
      const counted = t.connect({ log: (e) => void (e.level === 'query' && statements.push(e.query.sql.trim().split(/\s+/)[0]!.toLowerCase())) });
      const result = await executeMirrorCommand(counted, { type: 'StopTopics', mirror, partitions: 'all', mode: 'failover' }, who);
      expect(result.events).toBe(n);
      expect(statements.filter((s) => s === 'begin')).toHaveLength(1);
      counts.push(statements.filter((s) => s !== 'begin' && s !== 'commit').length);
      expect(await states(mirror)).toEqual({ STOPPING: n });
    }
    expect(counts[0]).toBe(counts[1]);
    expect(counts[1]).toBeLessThanOrEqual(7);
  });

  it('appends nothing when the chart refuses', async () => {
    const mirror = await newMirror([{ topic: 'orders', partitionCount: 3 }]);
    await executeMirrorCommand(t.db, { type: 'StopTopics', mirror, partitions: [{ topic: 'orders', partitions: [2] }], mode: 'promote' }, who);
    const before = (await readStream(t.db, `mirror:${mirror}`)).length;
    // Named (a whole-mirror pause would pass over the stopping partition and pause the others).
    await expect(executeMirrorCommand(t.db, { type: 'PauseTopics', mirror, partitions: [{ topic: 'orders' }] }, who)).rejects.toMatchObject({
      code: 'MIRROR_TOPIC_BEING_STOPPED',
      message: expect.stringMatching(/partition orders-2 is STOPPING/),
    });
    expect((await readStream(t.db, `mirror:${mirror}`)).length).toBe(before);
    expect(await states(mirror)).toEqual({ MIRRORING: 2, STOPPING: 1 });
  });

  it('decides again when a concurrent command on the same mirror wins the append', async () => {
    const mirror = await newMirror([{ topic: 'a', partitionCount: 50 }, { topic: 'b', partitionCount: 50 }, { topic: 'c', partitionCount: 50 }]);
    const pools = [t.db, t.connect(), t.connect()];
    const commands: MirrorCommand[] = ['a', 'b', 'c'].map((topic) => ({ type: 'PauseTopics', mirror, partitions: [{ topic }] }));
    await Promise.all(commands.map((c, i) => executeMirrorCommand(pools[i]!, c, who)));
    expect(await states(mirror)).toEqual({ PAUSING: 150 });
    const versions = (await readStream(t.db, `mirror:${mirror}`)).map((e) => e.streamVersion);
    expect(versions).toEqual(versions.map((_, i) => BigInt(i + 1)));
    expect((await verifyChain(t.db)).ok).toBe(true);
  });
});
