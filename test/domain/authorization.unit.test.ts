import { describe, expect, it } from 'vitest';
import { decideAcl, evolveGrants, missingGrants, requirementsOf, type AclGrant } from '../../domain/authorization.ts';
import { isKmirrorError } from '../../domain/errors.ts';

const grant = (principal: string, operation: AclGrant['operation'], resourceType: AclGrant['resourceType'], resource: string): AclGrant => ({ principal, operation, resourceType, resource });

describe('ClusterMirror authorization', () => {
  it('a topic operation needs ALTER on the mirror and READ on each topic: ALTER alone cannot add a topic', () => {
    const required = requirementsOf('startTopics', 'm', ['b', 'a', 'a']);
    expect(required).toEqual([
      { operation: 'ALTER', resourceType: 'CLUSTER_MIRROR', resource: 'm' },
      { operation: 'READ', resourceType: 'TOPIC', resource: 'a' },
      { operation: 'READ', resourceType: 'TOPIC', resource: 'b' },
    ]);
    const grants = [grant('alice', 'ALTER', 'CLUSTER_MIRROR', 'm'), grant('alice', 'READ', 'TOPIC', 'a')];
    expect(missingGrants(grants, 'alice', required)).toEqual([{ operation: 'READ', resourceType: 'TOPIC', resource: 'b' }]);
    expect(missingGrants([...grants, grant('alice', 'READ', 'TOPIC', '*')], 'alice', required)).toEqual([]);
    expect(missingGrants(grants, 'bob', required)).toHaveLength(3);
  });

  it('`*` matches every resource and every principal; the other operations do not stand in for one another', () => {
    expect(missingGrants([grant('*', 'CREATE', 'CLUSTER_MIRROR', '*')], 'anyone', requirementsOf('createMirror', 'x'))).toEqual([]);
    expect(missingGrants([grant('alice', 'ALTER', 'CLUSTER_MIRROR', '*')], 'alice', requirementsOf('deleteMirror', 'x'))).toEqual([{ operation: 'DELETE', resourceType: 'CLUSTER_MIRROR', resource: 'x' }]);
    expect(missingGrants([grant('alice', 'ALTER', 'CLUSTER_MIRROR', 'other')], 'alice', requirementsOf('retryPartitions', 'x'))).toHaveLength(1);
  });

  it('maps every operation workflow, and refuses an unknown one', () => {
    for (const w of ['startTopics', 'pauseTopics', 'resumeTopics', 'failover', 'promote', 'failback', 'retryPartitions']) expect(requirementsOf(w, 'm')[0]!.operation).toBe('ALTER');
    expect(requirementsOf('createMirror', 'm')).toEqual([{ operation: 'CREATE', resourceType: 'CLUSTER_MIRROR', resource: 'm' }]);
    expect(() => requirementsOf('ping', 'm')).toThrow(/no authorization rule/);
  });

  it('a dry run and the reading commands need DESCRIBE on the mirror, not ALTER (and READ on the topics they read)', () => {
    for (const w of ['failover', 'promote', 'failback']) {
      expect(requirementsOf(w, 'm', ['t'], { dryRun: true })).toEqual([
        { operation: 'DESCRIBE', resourceType: 'CLUSTER_MIRROR', resource: 'm' },
        { operation: 'READ', resourceType: 'TOPIC', resource: 't' },
      ]);
    }
    expect(() => requirementsOf('startTopics', 'm', [], { dryRun: true })).toThrow(/startTopics has no dry run/);
    for (const c of ['describe', 'history', 'groups']) expect(requirementsOf(c, 'm')).toEqual([{ operation: 'DESCRIBE', resourceType: 'CLUSTER_MIRROR', resource: 'm' }]);
    expect(requirementsOf('verify', 'm', ['b', 'a'])).toHaveLength(3);
    // DESCRIBE does not stand in for ALTER, nor ALTER for DESCRIBE.
    const describer = [grant('dana', 'DESCRIBE', 'CLUSTER_MIRROR', 'm'), grant('dana', 'READ', 'TOPIC', '*')];
    expect(missingGrants(describer, 'dana', requirementsOf('failover', 'm', ['t'], { dryRun: true }))).toEqual([]);
    expect(missingGrants(describer, 'dana', requirementsOf('failover', 'm', ['t']))).toEqual([{ operation: 'ALTER', resourceType: 'CLUSTER_MIRROR', resource: 'm' }]);
    expect(missingGrants([grant('dana', 'ALTER', 'CLUSTER_MIRROR', 'm')], 'dana', requirementsOf('describe', 'm'))).toHaveLength(1);
  });

  it('grants and revokes idempotently, and refuses malformed grants with INVALID_ARGUMENT', () => {
    const g = grant('alice', 'ALTER', 'CLUSTER_MIRROR', 'm');
    const granted = decideAcl({ type: 'GrantAcl', grant: g }, []);
    expect(granted).toEqual([{ type: 'AclGranted', data: g }]);
    const state = evolveGrants([], granted[0]!);
    expect(decideAcl({ type: 'GrantAcl', grant: g }, state)).toEqual([]);
    expect(decideAcl({ type: 'RevokeAcl', grant: g }, state)).toEqual([{ type: 'AclRevoked', data: g }]);
    expect(decideAcl({ type: 'RevokeAcl', grant: g }, [])).toEqual([]);
    expect(evolveGrants(state, { type: 'AclRevoked', data: g })).toEqual([]);
    for (const bad of [grant('alice', 'READ', 'CLUSTER_MIRROR', 'm'), grant('alice', 'ALTER', 'TOPIC', 't'), grant(' ', 'ALTER', 'CLUSTER_MIRROR', 'm'), grant('alice', 'ALTER', 'CLUSTER_MIRROR', '')]) {
      let caught: unknown;
      try {
        decideAcl({ type: 'GrantAcl', grant: bad }, []);
      } catch (err) {
        caught = err;
      }
      expect(isKmirrorError(caught, 'INVALID_ARGUMENT')).toBe(true);
    }
  });
});
