// Security (DESIGN §8, KIP review RS7): credentials are sealed, never in events or describe output.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { changeClusterConnection, describeCluster, listClusters, readClusterConnection, registerCluster, removeCluster } from '../../db/cluster-store.ts';
import { rebuildProjections } from '../../db/projections/rebuild-projections.ts';
import { executeMirrorCommand } from '../../db/mirror-store.ts';
import { describeMirror } from '../../db/projections/describe-mirror.ts';
import { parseSecretKey } from '../../config.ts';
import type { ClusterConnection } from '../../domain/connection.ts';
import { migratedDatabase, type TestDatabase } from './fixture.ts';

let t: TestDatabase;
const keyText = randomBytes(32).toString('base64');
const key = parseSecretKey({ KMIRROR_SECRET_KEY: keyText });
const oldPassword = `old-${randomBytes(12).toString('hex')}`;
const newPassword = `new-${randomBytes(12).toString('hex')}`;
const sourcePassword = `src-${randomBytes(12).toString('hex')}`;
const secrets = [oldPassword, newPassword, sourcePassword, keyText];
const who = { actor: 'security-test', reason: 'rotate credentials' };

const sasl = (username: string, password: string): ClusterConnection => ({
  bootstrap: ['10.0.0.1:9093', '10.0.0.2:9093'],
  securityProtocol: 'SASL_SSL',
  sasl: { mechanism: 'scram-sha-512', username, password },
});

beforeAll(async () => {
  t = await migratedDatabase('security');
  await registerCluster(t.db, key, { cluster: 'east', connection: sasl('mirror-reader', sourcePassword) }, who);
  await registerCluster(t.db, key, { cluster: 'west', connection: sasl('mirror-writer', oldPassword) }, who);
  await changeClusterConnection(t.db, key, { cluster: 'west', connection: sasl('mirror-writer', newPassword) }, who);
  await executeMirrorCommand(t.db, { type: 'CreateMirror', mirror: 'dr', sourceCluster: 'east', destinationCluster: 'west' }, who);
  await executeMirrorCommand(t.db, { type: 'StartTopics', mirror: 'dr', topics: [{ topic: 'orders', partitionCount: 2 }] }, who);
  await executeMirrorCommand(
    t.db,
    { type: 'FailPartitions', mirror: 'dr', partitions: 'all', error: { code: 'CLUSTER_UNREACHABLE', message: 'SASL authentication failed' }, retryable: true },
    who,
  );
});
afterAll(async () => t?.close());

async function tableText(table: string): Promise<string> {
  const { rows } = await sql<{ text: string | null }>`select string_agg(t::text, E'\n') as text from ${sql.table(table)} t`.execute(t.db);
  return rows[0]!.text ?? '';
}

describe('credentials at rest', () => {
  it('appear in no table but the sealed one, and there only as ciphertext', async () => {
    const { rows } = await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = 'public'`.execute(t.db);
    const tables = rows.map((r) => r.name);
    expect(tables).toEqual(expect.arrayContaining(['events', 'clusters', 'cluster_connections', 'mirrors', 'mirror_partitions']));
    for (const table of tables) {
      const text = await tableText(table);
      for (const secret of secrets) expect(text.includes(secret), `${secret.slice(0, 4)}… found in ${table}`).toBe(false);
    }
    const events = await tableText('events');
    expect(events).toContain('mirror-writer'); // the description is there, so the scan looked at real content
    for (const row of await t.db.selectFrom('cluster_connections').selectAll().execute()) {
      for (const secret of secrets) expect(row.ciphertext.includes(Buffer.from(secret))).toBe(false);
    }
  });

  it('appear in no describe-style read', async () => {
    const described = JSON.stringify([await describeCluster(t.db, 'west'), await listClusters(t.db), await describeMirror(t.db, 'dr')]);
    expect(described).toContain('mirror-writer');
    for (const secret of secrets) expect(described.includes(secret)).toBe(false);
    expect(await describeCluster(t.db, 'west')).toMatchObject({
      connection: { bootstrap: ['10.0.0.1:9093', '10.0.0.2:9093'], securityProtocol: 'SASL_SSL', saslMechanism: 'scram-sha-512', saslUsername: 'mirror-writer' },
    });
  });

  it('open with the right key, as the latest connection', async () => {
    expect(await readClusterConnection(t.db, key, 'west')).toEqual(sasl('mirror-writer', newPassword));
    expect(await readClusterConnection(t.db, key, 'east')).toEqual(sasl('mirror-reader', sourcePassword));
  });

  it('fail loudly under a wrong key, naming the variable and not the secret', async () => {
    const wrong = randomBytes(32);
    const attempt = readClusterConnection(t.db, wrong, 'west');
    await expect(attempt).rejects.toMatchObject({ code: 'SECRET_KEY_INVALID', message: expect.stringMatching(/KMIRROR_SECRET_KEY/) });
    const message: string = await attempt.then(
      () => 'opened',
      (err: Error) => JSON.stringify({ message: err.message, details: (err as { details?: unknown }).details }),
    );
    for (const secret of secrets) expect(message.includes(secret)).toBe(false);
    expect(() => parseSecretKey({ KMIRROR_SECRET_KEY: Buffer.alloc(16).toString('base64') })).toThrowError(
      expect.objectContaining({ code: 'SECRET_KEY_INVALID', message: expect.stringMatching(/KMIRROR_SECRET_KEY/) }),
    );
  });

  it('fail when the sealed row is altered or moved to another cluster', async () => {
    const rolledBack = async (change: string, expected: RegExp) => {
      const outcome = await t.db
        .transaction()
        .execute(async (trx) => {
          await sql.raw(change).execute(trx);
          await expect(readClusterConnection(trx, key, 'west')).rejects.toMatchObject({ code: 'SECRET_KEY_INVALID', message: expect.stringMatching(expected) });
          throw new Error('rollback');
        })
        .catch((err: Error) => err.message);
      expect(outcome).toBe('rollback');
    };
    await rolledBack(`update cluster_connections set ciphertext = set_byte(ciphertext, 4, get_byte(ciphertext, 4) # 1) where cluster = 'west'`, /altered/);
    await rolledBack(
      `update cluster_connections d set iv = s.iv, ciphertext = s.ciphertext, auth_tag = s.auth_tag from cluster_connections s where d.cluster = 'west' and s.cluster = 'east'`,
      /another cluster/,
    );
    expect(await readClusterConnection(t.db, key, 'west')).toEqual(sasl('mirror-writer', newPassword));
  });
});

describe('cluster remove', () => {
  it('is refused while a mirror uses the cluster, appending nothing; removes the row and the sealed credentials; the cluster may be registered again; a rebuild agrees', async () => {
    const events = async () => Number((await t.db.selectFrom('events').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    const before = await events();
    await expect(removeCluster(t.db, 'east', who)).rejects.toMatchObject({ code: 'CLUSTER_IN_USE', message: expect.stringContaining('mirror dr') });
    await expect(removeCluster(t.db, 'nowhere', who)).rejects.toMatchObject({ code: 'UNKNOWN_CLUSTER' });
    expect(await events()).toBe(before);

    await registerCluster(t.db, key, { cluster: 'spare', connection: sasl('spare-user', newPassword) }, who);
    await removeCluster(t.db, 'spare', { actor: 'security-test', reason: 'decommissioned' });
    await expect(describeCluster(t.db, 'spare')).rejects.toMatchObject({ code: 'UNKNOWN_CLUSTER' });
    await expect(readClusterConnection(t.db, key, 'spare')).rejects.toMatchObject({ code: 'UNKNOWN_CLUSTER' });
    expect(await t.db.selectFrom('cluster_connections').select('cluster').where('cluster', '=', 'spare').execute()).toEqual([]);
    expect((await listClusters(t.db)).map((c) => c.name)).not.toContain('spare');
    // A mirror cannot be created with it any more.
    await expect(executeMirrorCommand(t.db, { type: 'CreateMirror', mirror: 'dr-spare', sourceCluster: 'east', destinationCluster: 'spare' }, who)).rejects.toMatchObject({ code: 'UNKNOWN_CLUSTER' });

    await registerCluster(t.db, key, { cluster: 'spare', connection: sasl('spare-user-2', oldPassword) }, who);
    const again = await describeCluster(t.db, 'spare');
    expect(again.connection).toMatchObject({ saslUsername: 'spare-user-2' });
    const rows = async () => t.db.selectFrom('clusters').selectAll().orderBy('name').execute();
    const live = await rows();
    await rebuildProjections(t.db);
    expect(await rows()).toEqual(live);
  });
});
