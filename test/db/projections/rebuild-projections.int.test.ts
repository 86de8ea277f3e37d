import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { sql } from 'kysely';
import { changeClusterConnection, registerCluster } from '../../../db/cluster-store.ts';
import { executeMirrorCommand } from '../../../db/mirror-store.ts';
import { rebuildProjections } from '../../../db/projections/rebuild-projections.ts';
import { verifyChain } from '../../../db/event-store/verify-chain.ts';
import { isKmirrorError } from '../../../domain/errors.ts';
import type { MirrorCommand } from '../../../domain/commands.ts';
import type { Db } from '../../../db/database.ts';
import { mirrorCommands } from '../../domain/arbitraries.ts';
import { migratedDatabase, type TestDatabase } from '../fixture.ts';

let t: TestDatabase;
const key = randomBytes(32);
const who = { actor: 'rebuild-test' };
const SEED = 1279;

async function projections(db: Db) {
  return {
    clusters: await db.selectFrom('clusters').selectAll().orderBy('name').execute(),
    mirrors: await db.selectFrom('mirrors').selectAll().orderBy('name').execute(),
    topics: await db.selectFrom('mirror_topics').selectAll().orderBy('mirror').orderBy('topic').execute(),
    partitions: await db.selectFrom('mirror_partitions').selectAll().orderBy('mirror').orderBy('topic').orderBy('partition').execute(),
    syncedAcls: await db.selectFrom('mirror_synced_acls').selectAll().orderBy('mirror').orderBy('topic').orderBy('principal').orderBy('operation').execute(),
  };
}

beforeAll(async () => {
  t = await migratedDatabase('rebuild');
  for (const cluster of ['east', 'west', 'south']) {
    await registerCluster(t.db, key, { cluster, connection: { bootstrap: [`${cluster}:9092`], securityProtocol: 'PLAINTEXT' } }, who);
  }
});
afterAll(async () => t?.close());

describe('rebuildProjections', () => {
  it('reproduces the live projections exactly after a long random history', async () => {
    const perMirror = (m: string, clusters: [string, string]) => mirrorCommands(m, ['orders', 'payments', 'audit'], clusters);
    const history = fc.sample(
      fc.array(
        fc.oneof(
          { weight: 10, arbitrary: perMirror('alpha', ['east', 'west']) },
          { weight: 10, arbitrary: perMirror('beta', ['west', 'east']) },
          { weight: 5, arbitrary: perMirror('gamma', ['south', 'west']) },
          { weight: 1, arbitrary: fc.constant('rotate-west' as const) },
        ),
        { minLength: 2400, maxLength: 2400 },
      ),
      { seed: SEED, numRuns: 1 },
    )[0]!;
    let accepted = 0;
    for (const step of history) {
      try {
        if (step === 'rotate-west') {
          await changeClusterConnection(t.db, key, { cluster: 'west', connection: { bootstrap: [`west-${accepted}:9092`], securityProtocol: 'PLAINTEXT' } }, who);
        } else {
          await executeMirrorCommand(t.db, step as MirrorCommand, who);
        }
        accepted++;
      } catch (err) {
        if (!isKmirrorError(err)) throw err;
      }
    }
    const live = await projections(t.db);
    // The history must actually be long and varied, or the comparison proves little.
    const { rows } = await sql<{ n: number; types: number }>`select count(*)::int4 as n, count(distinct type)::int4 as types from events`.execute(t.db);
    expect(accepted, `seed ${SEED}`).toBeGreaterThan(300);
    expect(rows[0]!.n).toBeGreaterThan(1_000);
    expect(rows[0]!.types).toBeGreaterThanOrEqual(14);
    expect(live.partitions.length).toBeGreaterThan(0);
    expect(live.syncedAcls.length).toBeGreaterThan(0);

    const report = await rebuildProjections(t.db, { pageSize: 97 });
    expect(report).toMatchObject({ clusters: 3, mirrors: 3 });
    expect(await projections(t.db)).toEqual(live);
    expect((await verifyChain(t.db)).ok).toBe(true);
  });

  it('repairs damaged projection rows and leaves leases and sealed connections alone', async () => {
    const mirror = 'delta';
    const commands: MirrorCommand[] = [
      { type: 'CreateMirror', mirror, sourceCluster: 'east', destinationCluster: 'south' },
      { type: 'StartTopics', mirror, topics: [{ topic: 'orders', partitionCount: 4 }] },
      { type: 'CompleteTruncation', mirror, partitions: 'all' },
    ];
    for (const c of commands) await executeMirrorCommand(t.db, c, who);
    const before = await projections(t.db);
    await t.db
      .insertInto('partition_leases')
      .values({ mirror, topic: 'orders', partition: 0, owner: 'worker-1', epoch: 41n, expires_at: new Date(Date.now() + 60_000), updated_at: new Date() })
      .execute();
    const leases = await t.db.selectFrom('partition_leases').selectAll().execute();
    const sealed = await t.db.selectFrom('cluster_connections').selectAll().orderBy('cluster').execute();

    await t.db.updateTable('mirror_partitions').set({ state: 'STOPPED', retry_attempt: 9 }).where('mirror', '=', mirror).where('partition', '=', 2).execute();
    await t.db.deleteFrom('mirror_topics').where('mirror', '=', 'alpha').execute();
    await t.db.updateTable('clusters').set({ connection: JSON.stringify({ bootstrap: ['forged:1'], securityProtocol: 'PLAINTEXT' }) }).where('name', '=', 'east').execute();
    expect(await projections(t.db)).not.toEqual(before);

    await rebuildProjections(t.db);
    expect(await projections(t.db)).toEqual(before);
    expect(await t.db.selectFrom('partition_leases').selectAll().execute()).toEqual(leases);
    expect(await t.db.selectFrom('cluster_connections').selectAll().orderBy('cluster').execute()).toEqual(sealed);
  });
});
