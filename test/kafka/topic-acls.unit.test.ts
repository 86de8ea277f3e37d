// aclPlan (kafka/topic-acls.ts): which ACLs one mirror topic gets on the destination — synced from
// the source for the filtered principals, revoked when the source no longer has them, and a DENY
// WRITE for every other writer (the read-only guard kept current).
import { describe, expect, it } from 'vitest';
import { aclPlan, bindingsByTopic, principalFilter, type TopicAclBinding } from '../../kafka/topic-acls.ts';

const binding = (principal: string, operation: TopicAclBinding['operation'], extra: Partial<TopicAclBinding> = {}): TopicAclBinding => ({
  pattern: 'LITERAL',
  name: 'orders',
  principal,
  host: '*',
  operation,
  permission: 'ALLOW',
  ...extra,
});
const apps = principalFilter({ include: ['User:app-.*'], exclude: ['User:app-admin'] });
const own = 'User:kmirror';

describe('principalFilter', () => {
  it('matches whole names: include minus exclude; no include matches nobody', () => {
    expect(['User:app-a', 'User:app-admin', 'User:xapp-a', 'User:app'].filter(apps)).toEqual(['User:app-a']);
    expect(principalFilter({ include: [], exclude: [] })('User:app-a')).toBe(false);
    expect(() => principalFilter({ include: ['User:('], exclude: [] })).toThrow(/principal pattern/);
  });
});

describe('aclPlan', () => {
  it('grants the source ACLs that apply to the topic (literal, `*` and prefixed) as literal ACLs, for filtered principals only', () => {
    const source = [
      binding('User:app-a', 'READ'),
      binding('User:app-b', 'DESCRIBE', { name: '*' }),
      binding('User:app-c', 'READ', { pattern: 'PREFIXED', name: 'ord' }),
      binding('User:app-d', 'READ', { pattern: 'PREFIXED', name: 'pay' }), // another topic
      binding('User:app-e', 'READ', { name: 'payments' }), // another topic
      binding('User:app-admin', 'ALL'), // excluded principal
      binding('User:other', 'READ'), // not included
    ];
    const plan = aclPlan('orders', source, [], apps, own);
    expect(plan.grant).toEqual([
      { principal: 'User:app-a', host: '*', operation: 'READ', permission: 'ALLOW' },
      { principal: 'User:app-b', host: '*', operation: 'DESCRIBE', permission: 'ALLOW' },
      { principal: 'User:app-c', host: '*', operation: 'READ', permission: 'ALLOW' },
    ]);
    expect(plan.revoke).toEqual([]);
    expect(plan.deny).toEqual([]);
  });

  it('an ALLOW WRITE synced from the source is denied in the same plan (the guard goes first); a source DENY other than WRITE is synced', () => {
    const plan = aclPlan('orders', [binding('User:app-w', 'WRITE'), binding('User:app-x', 'READ', { permission: 'DENY' })], [], apps, own);
    expect(plan.grant).toEqual([
      { principal: 'User:app-w', host: '*', operation: 'WRITE', permission: 'ALLOW' },
      { principal: 'User:app-x', host: '*', operation: 'READ', permission: 'DENY' },
    ]);
    expect(plan.deny).toEqual(['User:app-w']);
  });

  it('never syncs a DENY WRITE (the guard\'s kind, lifted at failover) nor an ALLOW WRITE for User:*', () => {
    const plan = aclPlan('orders', [binding('User:app-w', 'WRITE', { permission: 'DENY' }), binding('User:*', 'ALL')], [], principalFilter({ include: ['.*'], exclude: [] }), own);
    expect(plan).toEqual({ topic: 'orders', grant: [], revoke: [], deny: [] });
  });

  it('revokes an ACL it granted that the source no longer has; never one someone else made, another principal\'s, a prefixed one or the guard', () => {
    const destination = [
      binding('User:app-a', 'READ'), // granted by ACL sync, gone from the source
      binding('User:app-b', 'READ'), // granted by ACL sync, still there
      binding('User:app-d', 'DESCRIBE'), // made by an operator on the destination
      binding('User:other', 'READ'), // not filtered
      binding('User:app-c', 'READ', { pattern: 'PREFIXED', name: 'ord' }), // the destination's own pattern
      binding('User:app-w', 'WRITE', { permission: 'DENY' }), // the guard
    ];
    const acl = (principal: string, operation: TopicAclBinding['operation']) => ({ principal, host: '*', operation, permission: 'ALLOW' as const });
    const before = [acl('User:app-a', 'READ'), acl('User:app-b', 'READ'), acl('User:app-gone', 'READ')];
    const plan = aclPlan('orders', [binding('User:app-b', 'READ')], destination, apps, own, before);
    expect(plan.grant).toEqual([]);
    expect(plan.revoke).toEqual([acl('User:app-a', 'READ')]);
    // Without a record of what it granted, nothing is revoked.
    expect(aclPlan('orders', [binding('User:app-b', 'READ')], destination, apps, own).revoke).toEqual([]);
  });

  it('without the source\'s ACLs (sync off or unreadable) nothing is granted or revoked, and the guard is still kept', () => {
    const destination = [binding('User:app-a', 'READ'), binding('User:late-writer', 'WRITE', { pattern: 'PREFIXED', name: 'o' }), binding(own, 'ALL'), binding('User:old', 'WRITE'), binding('User:old', 'WRITE', { permission: 'DENY' })];
    expect(aclPlan('orders', undefined, destination, apps, own)).toEqual({ topic: 'orders', grant: [], revoke: [], deny: ['User:late-writer'] });
  });

  it("never touches kmirror's own principal, even when the filter selects every principal", () => {
    const everyone = principalFilter({ include: ['.*'], exclude: [] });
    const mine = [{ principal: own, host: '*', operation: 'WRITE' as const, permission: 'ALLOW' as const }];
    const plan = aclPlan('orders', [binding(own, 'ALL', { permission: 'DENY' })], [binding(own, 'WRITE'), binding(own, 'READ')], everyone, own, mine);
    expect(plan).toEqual({ topic: 'orders', grant: [], revoke: [], deny: [] });
  });

  it('never syncs a DENY for every principal (it would refuse kmirror too)', () => {
    const everyone = principalFilter({ include: ['.*'], exclude: [] });
    const source = [binding('User:*', 'ALL', { permission: 'DENY' }), binding('User:*', 'DELETE', { permission: 'DENY' }), binding('User:*', 'READ')];
    expect(aclPlan('orders', source, [], everyone, own).grant).toEqual([{ principal: 'User:*', host: '*', operation: 'READ', permission: 'ALLOW' }]);
  });

  it('revokes its own grants once sync is off or their principal left the filter, never anyone else\'s', () => {
    const granted = { principal: 'User:app-a', host: '*', operation: 'READ' as const, permission: 'ALLOW' as const };
    const destination = [binding('User:app-a', 'READ'), binding('User:app-b', 'READ')];
    const none = principalFilter({ include: [], exclude: [] });
    expect(aclPlan('orders', [], destination, none, own, [granted]).revoke).toEqual([granted]);
    const narrowed = principalFilter({ include: ['User:app-b'], exclude: [] });
    expect(aclPlan('orders', [binding('User:app-a', 'READ'), binding('User:app-b', 'READ')], destination, narrowed, own, [granted]).revoke).toEqual([granted]);
    // Unknown source (not readable): nothing revoked.
    expect(aclPlan('orders', undefined, destination, none, own, [granted]).revoke).toEqual([]);
  });

  it('a DENY WRITE for some hosts does not count as the guard: the principal is still denied for every host', () => {
    const destination = [binding('User:app-w', 'WRITE'), binding('User:app-w', 'WRITE', { permission: 'DENY', host: '10.0.0.5' }), binding('User:app-x', 'WRITE'), binding('User:app-x', 'ALL', { permission: 'DENY' })];
    expect(aclPlan('orders', undefined, destination, apps, own).deny).toEqual(['User:app-w']);
  });

  it('bindingsByTopic finds literal, `*` and prefixed bindings of a topic', () => {
    const all = [binding('User:a', 'READ'), binding('User:b', 'READ', { name: 'other' }), binding('User:c', 'READ', { name: '*' }), binding('User:d', 'READ', { pattern: 'PREFIXED', name: 'ord' }), binding('User:e', 'READ', { pattern: 'PREFIXED', name: 'x' })];
    expect(bindingsByTopic(all)('orders').map((b) => b.principal)).toEqual(['User:a', 'User:c', 'User:d']);
    expect(bindingsByTopic(all)('nothing').map((b) => b.principal)).toEqual(['User:c']);
  });

  it('a topic every principal may write cannot be guarded: no DENY, no synced write grant, and it says why', () => {
    const plan = aclPlan('orders', [binding('User:app-w', 'WRITE')], [binding('User:*', 'WRITE', { name: '*' })], apps, own);
    expect(plan).toMatchObject({ grant: [], deny: [], unguarded: expect.stringMatching(/User:\*/) });
  });
});
