import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorize, changeGrant, loadGrants } from '../../db/acl-store.ts';
import { readStream } from '../../db/event-store/read-stream.ts';
import { rebuildProjections } from '../../db/projections/rebuild-projections.ts';
import { AUTHORIZATION_STREAM, requirementsOf, type AclGrant } from '../../domain/authorization.ts';
import { isKmirrorError } from '../../domain/errors.ts';
import { migratedDatabase, type TestDatabase } from './fixture.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await migratedDatabase('acl');
});
afterAll(async () => t?.close());

const admin = { actor: 'admin', reason: 'setup' };
const alter: AclGrant = { principal: 'alice', operation: 'ALTER', resourceType: 'CLUSTER_MIRROR', resource: 'm1' };
const readAll: AclGrant = { principal: 'alice', operation: 'READ', resourceType: 'TOPIC', resource: '*' };

describe('acl store', () => {
  it('grants and revokes as events with the projection in step; repeats change nothing', async () => {
    expect((await changeGrant(t.db, 'GrantAcl', alter, admin)).events).toBe(1);
    expect((await changeGrant(t.db, 'GrantAcl', alter, admin)).events).toBe(0);
    expect((await changeGrant(t.db, 'GrantAcl', readAll, admin)).events).toBe(1);
    expect((await loadGrants(t.db)).state).toEqual([alter, readAll]);
    expect((await changeGrant(t.db, 'RevokeAcl', readAll, admin)).events).toBe(1);
    expect((await changeGrant(t.db, 'RevokeAcl', readAll, admin)).events).toBe(0);
    expect((await loadGrants(t.db)).state).toEqual([alter]);
    expect((await readStream(t.db, AUTHORIZATION_STREAM)).map((e) => [e.type, e.metadata.actor])).toEqual([
      ['AclGranted', 'admin'],
      ['AclGranted', 'admin'],
      ['AclRevoked', 'admin'],
    ]);
  });

  it('authorizes what the grants allow, and records a refusal with what is missing', async () => {
    await authorize(t.db, { principal: 'alice', workflow: 'pauseTopics', mirror: 'm1', required: requirementsOf('pauseTopics', 'm1') }, { actor: 'alice' });
    let caught: unknown;
    try {
      await authorize(t.db, { principal: 'alice', workflow: 'pauseTopics', mirror: 'm1', required: requirementsOf('pauseTopics', 'm1', ['orders']) }, { actor: 'alice', reason: 'maintenance' });
    } catch (err) {
      caught = err;
    }
    expect(isKmirrorError(caught, 'CLUSTER_MIRROR_AUTHORIZATION_FAILED')).toBe(true);
    expect((caught as Error).message).toContain('alice may not run pauseTopics: missing READ on TOPIC orders');
    const last = (await readStream(t.db, AUTHORIZATION_STREAM)).at(-1)!;
    expect(last.type).toBe('OperationRefused');
    expect(last.data).toEqual({ principal: 'alice', workflow: 'pauseTopics', mirror: 'm1', missing: [{ operation: 'READ', resourceType: 'TOPIC', resource: 'orders' }] });
    expect(last.metadata).toMatchObject({ actor: 'alice', reason: 'maintenance' });
  });

  it('a projection rebuild restores the grants from the log', async () => {
    await t.db.deleteFrom('acl_grants').execute();
    await rebuildProjections(t.db);
    expect((await loadGrants(t.db)).state).toEqual([alter]);
  });
});
