// Topic ACLs of mirror topics (DESIGN §4): the read-only guard (a DENY WRITE on each mirror topic
// for every principal allowed to write it but kmirror — applied at start, kept current by the
// runner, lifted at failover) and ACL sync (the source's ACLs on a mirror topic, for the principals
// the mirror's ACL filter names, granted on the destination, so that after a failover the same
// principals may do there what they did on the source).
import kafkajs, { type AclEntry, type Admin } from 'kafkajs';
import { filterMatcher, type PatternFilter } from '../domain/names.ts';
import { TOPIC_ACL_OPERATIONS, type TopicAcl, type TopicAclOperation } from '../domain/events.ts';
import { kafkaFailure } from './errors.ts';

// kafkajs is CommonJS; Node's named-export detection misses its enums, so take them from the default export.
const { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes } = kafkajs;


/** A topic ACL binding as a cluster keeps it: the ACL and the resource pattern it applies to
 *  (LITERAL: that topic, or every topic when the name is `*`; PREFIXED: topics starting with it). */
export interface TopicAclBinding extends TopicAcl {
  readonly pattern: 'LITERAL' | 'PREFIXED';
  readonly name: string;
}

/** Whose topic ACLs a mirror syncs: principals (e.g. `User:orders-.*`) whose whole name matches an
 *  include pattern and no exclude pattern. No include pattern: ACL sync is off. */
export type AclFilter = PatternFilter;

const operationName = new Map<number, TopicAclOperation>(TOPIC_ACL_OPERATIONS.map((name) => [AclOperationTypes[name], name]));

export function appliesTo(binding: TopicAclBinding, topic: string): boolean {
  return binding.pattern === 'LITERAL' ? binding.name === '*' || binding.name === topic : topic.startsWith(binding.name);
}

const writes = (acl: TopicAcl): boolean => acl.operation === 'WRITE' || acl.operation === 'ALL';
/** The read-only guard's own kind of ACL: never synced, never revoked by ACL sync (failover lifts it). */
const isGuard = (acl: TopicAcl): boolean => acl.permission === 'DENY' && acl.operation === 'WRITE';
const aclKey = (acl: TopicAcl): string => [acl.principal, acl.host, acl.operation, acl.permission].join('\u0000');

/** A principal test for an ACL filter (whole-name patterns). */
export function principalFilter(filter: AclFilter): (principal: string) => boolean {
  return filterMatcher(filter, 'principal');
}

/** Why kmirror cannot manage a cluster's ACLs, when describing them failed for a reason that means
 *  so (no authorizer; no Describe on the cluster: docs/security.md makes that grant optional); any
 *  other failure is thrown. */
export function aclsUnmanageable(err: unknown, side: 'source' | 'destination'): string {
  const failure = kafkaFailure(err, `describe the ${side} ACLs`);
  if (failure.details.kafkaError === 'SECURITY_DISABLED') return `the ${side} has no authorizer`;
  if (failure.code === 'CLUSTER_AUTHORIZATION_FAILED') return `kmirror may not ${side === 'source' ? 'describe' : 'manage'} ACLs on the ${side}`;
  throw failure;
}

/** Every topic ACL binding of a cluster (LITERAL and PREFIXED), one DescribeAcls. */
export async function describeTopicAcls(admin: Admin): Promise<TopicAclBinding[]> {
  const described = await admin.describeAcls({
    resourceType: AclResourceTypes.TOPIC,
    resourcePatternType: ResourcePatternTypes.ANY,
    operation: AclOperationTypes.ANY,
    permissionType: AclPermissionTypes.ANY,
  });
  const bindings: TopicAclBinding[] = [];
  for (const resource of described.resources) {
    const pattern = resource.resourcePatternType === ResourcePatternTypes.LITERAL ? 'LITERAL' : resource.resourcePatternType === ResourcePatternTypes.PREFIXED ? 'PREFIXED' : undefined;
    if (pattern === undefined) continue;
    for (const acl of resource.acls) {
      const operation = operationName.get(acl.operation);
      const permission = acl.permissionType === AclPermissionTypes.ALLOW ? 'ALLOW' : acl.permissionType === AclPermissionTypes.DENY ? 'DENY' : undefined;
      if (operation === undefined || permission === undefined) continue;
      bindings.push({ pattern, name: resource.resourceName, principal: acl.principal, host: acl.host, operation, permission });
    }
  }
  return bindings;
}

/** What one mirror topic's ACLs on the destination lack (aclPlan). */
export interface TopicAclPlan {
  readonly topic: string;
  /** Synced ACLs to create (the source has them, the destination does not). */
  readonly grant: readonly TopicAcl[];
  /** Synced ACLs to delete (the destination has them for a filtered principal, the source no longer). */
  readonly revoke: readonly TopicAcl[];
  /** Principals that may write the topic (now, or once `grant` is applied) and are not yet denied. */
  readonly deny: readonly string[];
  /** Set when the topic cannot be kept read-only: an ALLOW lets every principal (User:*) write it
   *  (then no DENY, and no synced ALLOW WRITE/ALL either). */
  readonly unguarded?: string;
}

/**
 * One mirror topic's ACL plan, from the source's and the destination's topic ACL bindings that
 * apply to it (pure). `source` undefined: the source's ACLs are unknown this time (they could not
 * be read), so nothing is granted or revoked — the guard is still kept; `[]` with nothing `wanted`
 * is ACL sync off. Synced: every source ACL that applies to the topic (literal, `*` or prefixed)
 * for a principal `wanted` accepts, as a LITERAL ACL on the topic. Revoked: an ACL sync granted
 * before (`grantedBefore`) that is no longer wanted — the source dropped it, its principal left
 * the filter, or sync was turned off; an ACL someone else made on the destination is never revoked.
 * Never synced: kmirror's own principal (`own`), a DENY for every principal (User:* — it would
 * refuse kmirror too), a DENY WRITE (the guard's kind, lifted at failover), and an ALLOW WRITE/ALL
 * for User:* (it would make the guard impossible). The guard: every principal with ALLOW WRITE/ALL
 * on the topic, but `own`, gets a literal DENY WRITE for every host, unless a DENY WRITE/ALL for
 * every host already refuses it.
 */
export function aclPlan(
  topic: string,
  source: readonly TopicAclBinding[] | undefined,
  destination: readonly TopicAclBinding[],
  wanted: (principal: string) => boolean,
  own: string | undefined,
  grantedBefore: readonly TopicAcl[] = [],
): TopicAclPlan {
  const applying = destination.filter((b) => appliesTo(b, topic));
  const acl = ({ principal, host, operation, permission }: TopicAcl): TopicAcl => ({ principal, host, operation, permission });
  let grant: TopicAcl[] = [];
  let revoke: TopicAcl[] = [];
  if (source !== undefined) {
    const desired = new Map<string, TopicAcl>();
    for (const b of source) {
      if (!appliesTo(b, topic) || b.principal === own || !wanted(b.principal) || isGuard(b)) continue;
      if (b.principal === 'User:*' && (b.permission === 'DENY' || writes(b))) continue;
      desired.set(aclKey(b), acl(b));
    }
    const present = new Map(applying.filter((b) => b.pattern === 'LITERAL' && b.name === topic && b.principal !== own && !isGuard(b)).map((b) => [aclKey(b), acl(b)]));
    const ours = new Set(grantedBefore.map(aclKey));
    // Sorted, so the recorded change does not depend on the order a broker lists ACLs in.
    const sorted = (acls: [string, TopicAcl][]) => acls.sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)).map(([, a]) => a);
    grant = sorted([...desired].filter(([key]) => !present.has(key)));
    revoke = sorted([...present].filter(([key]) => ours.has(key) && !desired.has(key)));
  }
  const revoked = new Set(revoke.map(aclKey));
  const writers = new Set([...applying.filter((b) => !revoked.has(aclKey(b))), ...grant].filter((a) => a.permission === 'ALLOW' && writes(a)).map((a) => a.principal));
  if (own !== undefined) writers.delete(own);
  if (writers.has('User:*')) {
    // Nothing to guard with; at least no synced grant adds a writer.
    return { topic, grant: grant.filter((a) => !(a.permission === 'ALLOW' && writes(a))), revoke, deny: [], unguarded: `an ACL allows every principal (User:*) to write ${topic}; a DENY for User:* would refuse kmirror as well` };
  }
  // Refused already: a DENY WRITE or ALL for every host (one for some hosts leaves the others open).
  const denied = new Set(applying.filter((b) => b.permission === 'DENY' && writes(b) && b.host === '*').map((b) => b.principal));
  return { topic, grant, revoke, deny: [...writers].filter((p) => !denied.has(p)).sort() };
}

/** A cluster's topic ACL bindings by the topics they apply to: literal names looked up, `*` and
 *  prefixed patterns tried (few), so a round over thousands of topics is not topics × bindings. */
export function bindingsByTopic(bindings: readonly TopicAclBinding[]): (topic: string) => TopicAclBinding[] {
  const literal = new Map<string, TopicAclBinding[]>();
  const wide: TopicAclBinding[] = [];
  for (const b of bindings) {
    if (b.pattern === 'LITERAL' && b.name !== '*') literal.set(b.name, [...(literal.get(b.name) ?? []), b]);
    else wide.push(b);
  }
  return (topic) => [...(literal.get(topic) ?? []), ...wide.filter((b) => appliesTo(b, topic))];
}

const entryOf = (topic: string, acl: TopicAcl): AclEntry => ({
  resourceType: AclResourceTypes.TOPIC,
  resourceName: topic,
  resourcePatternType: ResourcePatternTypes.LITERAL,
  principal: acl.principal,
  host: acl.host,
  operation: AclOperationTypes[acl.operation],
  permissionType: acl.permission === 'ALLOW' ? AclPermissionTypes.ALLOW : AclPermissionTypes.DENY,
});
const guardOf = (principal: string): TopicAcl => ({ principal, host: '*', operation: 'WRITE', permission: 'DENY' });

export interface ReadOnlyResult {
  /** DENY WRITE ACLs are in place for every principal allowed to write the topics, but kmirror. */
  readonly enforced: boolean;
  /** Principals denied (on the topics they may write). */
  readonly denied: readonly string[];
  /** Why it is not enforced (foreign writes are then only detected: DESIGN §5). */
  readonly reason?: string;
}

/**
 * Make mirror topics read-only (start): a DENY WRITE ACL on each topic for every principal that an
 * ALLOW (WRITE or ALL) lets write it, except kmirror's own. Kafka evaluates DENY before ALLOW, so
 * those principals are refused; kmirror keeps its own grants. Not enforceable (and reported so)
 * when the destination has no authorizer, or for a topic every principal (User:*) may write, since
 * a DENY for User:* would refuse kmirror too.
 */
export async function applyReadOnly(destAdmin: Admin, topics: readonly string[], ownPrincipal: string | undefined): Promise<ReadOnlyResult> {
  if (topics.length === 0) return { enforced: true, denied: [] };
  let bindings;
  try {
    bindings = await describeTopicAcls(destAdmin);
  } catch (err) {
    return { enforced: false, denied: [], reason: aclsUnmanageable(err, 'destination') };
  }
  const applying = bindingsByTopic(bindings);
  const plans = topics.map((topic) => aclPlan(topic, undefined, applying(topic), () => false, ownPrincipal));
  // All topics' DENYs in requests of up to 1,000 (a start of thousands of topics).
  const entries = plans.flatMap((p) => p.deny.map((principal) => entryOf(p.topic, guardOf(principal))));
  try {
    for (let i = 0; i < entries.length; i += 1_000) await destAdmin.createAcls({ acl: entries.slice(i, i + 1_000) });
  } catch (err) {
    throw kafkaFailure(err, 'create DENY WRITE ACLs on the destination');
  }
  const denied = [...new Set(plans.flatMap((p) => p.deny))].sort();
  const unguarded = plans.find((p) => p.unguarded !== undefined);
  return unguarded === undefined ? { enforced: true, denied } : { enforced: false, denied, reason: unguarded.unguarded! };
}

/** What one round of ACL sync did to a topic (recorded as MirrorTopicAclsSynced). */
export interface TopicAclChange {
  readonly topic: string;
  readonly granted: readonly TopicAcl[];
  readonly revoked: readonly TopicAcl[];
  readonly denied: readonly string[];
}

export interface AclSyncResult {
  readonly changed: readonly TopicAclChange[];
  readonly failed: readonly { readonly topic: string; readonly error: { readonly code: string; readonly message: string } }[];
  /** Why nothing could be done (the destination has no authorizer, or refuses kmirror its ACLs). */
  readonly skipped?: string;
  /** Why the source's ACLs were not read (no authorizer or grant there, not answering, cancelled):
   *  nothing was granted or revoked, the guard was kept. */
  readonly sourceSkipped?: string;
  /** The round did not do all the mirror asks (ACL sync on but not possible, or cancelled). */
  readonly incomplete?: boolean;
}

/**
 * The runner's ACL round over mirror topics still mirrored: for each, aclPlan against the
 * destination's ACLs (one DescribeAcls), applied guard first (DENYs, then grants, then revocations)
 * and `record`ed — topic by topic, so whatever was applied is recorded before the next topic is
 * touched (a step that fails records the steps before it), and one topic's refusal is its own.
 * `source` as in aclPlan. Before a topic is changed, `stillMirrored(topic)` is asked again (a stop
 * may have been recorded since the round began). Between topics the round yields (its heartbeats
 * and other activities run) and ends early once `signal` aborts.
 */
export async function syncTopicAcls(
  destAdmin: Admin,
  topics: readonly string[],
  source: readonly TopicAclBinding[] | undefined,
  filter: AclFilter,
  ownPrincipal: string | undefined,
  /** By topic: the ACLs ACL sync granted before and has not revoked (mirror_synced_acls). */
  grantedBefore: ReadonlyMap<string, readonly TopicAcl[]>,
  hooks: { readonly record: (change: TopicAclChange) => Promise<void>; readonly stillMirrored: (topic: string) => Promise<boolean>; readonly signal?: AbortSignal },
): Promise<AclSyncResult> {
  if (topics.length === 0) return { changed: [], failed: [] };
  let bindings;
  try {
    bindings = await describeTopicAcls(destAdmin);
  } catch (err) {
    return { changed: [], failed: [], skipped: aclsUnmanageable(err, 'destination') };
  }
  const wanted = principalFilter(filter);
  const onDestination = bindingsByTopic(bindings);
  const fromSource = source === undefined ? undefined : bindingsByTopic(source);
  const changed: TopicAclChange[] = [];
  const failed: { topic: string; error: { code: string; message: string } }[] = [];
  for (const topic of topics) {
    await new Promise((resolve) => setImmediate(resolve));
    // Cancelled (a stop is waiting): end between topics; what was applied is recorded.
    if (hooks.signal?.aborted) break;
    const plan = aclPlan(topic, fromSource?.(topic), onDestination(topic), wanted, ownPrincipal, grantedBefore.get(topic));
    if (plan.deny.length === 0 && plan.grant.length === 0 && plan.revoke.length === 0) continue;
    if (!(await hooks.stillMirrored(topic))) continue;
    const applied: { denied: readonly string[]; granted: readonly TopicAcl[]; revoked: readonly TopicAcl[] } = { denied: [], granted: [], revoked: [] };
    const create = async (acls: readonly TopicAcl[]) => {
      for (let i = 0; i < acls.length; i += 1_000) await destAdmin.createAcls({ acl: acls.slice(i, i + 1_000).map((a) => entryOf(topic, a)) });
    };
    try {
      await create(plan.deny.map(guardOf));
      applied.denied = plan.deny;
      await create(plan.grant);
      applied.granted = plan.grant;
      if (plan.revoke.length > 0) await destAdmin.deleteAcls({ filters: plan.revoke.map((a) => entryOf(topic, a)) });
      applied.revoked = plan.revoke;
    } catch (err) {
      const failure = kafkaFailure(err, `apply the ACLs of ${topic} on the destination`);
      failed.push({ topic, error: { code: failure.code, message: failure.message } });
    }
    if (applied.denied.length === 0 && applied.granted.length === 0 && applied.revoked.length === 0) continue;
    const change = { topic, ...applied };
    await hooks.record(change);
    changed.push(change);
  }
  return { changed, failed };
}

/**
 * Make mirror topics writable again (failover, promote): delete the DENY WRITE ACLs on them. A
 * mirror topic belongs to its mirror, so every literal DENY WRITE for every host on it is taken as
 * the read-only guard kmirror put there. Returns the principals that may write again.
 */
export async function liftReadOnly(destAdmin: Admin, topics: readonly string[]): Promise<{ readonly lifted: readonly string[]; readonly reason?: string }> {
  if (topics.length === 0) return { lifted: [] };
  const wanted = new Set(topics);
  let described;
  try {
    described = await destAdmin.describeAcls({
      resourceType: AclResourceTypes.TOPIC,
      resourcePatternType: ResourcePatternTypes.LITERAL,
      operation: AclOperationTypes.WRITE,
      permissionType: AclPermissionTypes.DENY,
    });
  } catch (err) {
    return { lifted: [], reason: aclsUnmanageable(err, 'destination') };
  }
  // The guard's DENYs are for every host; one for some hosts was made by someone else and stays.
  const filters = described.resources
    .filter((r) => wanted.has(r.resourceName))
    .flatMap((r) => r.acls.filter((a) => a.host === '*').map((a) => entryOf(r.resourceName, { principal: a.principal, host: a.host, operation: 'WRITE', permission: 'DENY' })));
  try {
    for (let i = 0; i < filters.length; i += 1_000) await destAdmin.deleteAcls({ filters: filters.slice(i, i + 1_000) });
  } catch (err) {
    throw kafkaFailure(err, 'delete the DENY WRITE ACLs on the destination');
  }
  return { lifted: [...new Set(filters.map((f) => f.principal))].sort() };
}
