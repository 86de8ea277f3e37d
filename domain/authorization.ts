// Who may do what: KIP-1279's ClusterMirror resource (AS6, AS7 of its review). Grants are kept as
// events in one stream (`acl:grants`) and checked in the first step of every operation workflow
// (so a start from the Temporal UI is checked too). The principal is the request's actor. Who may
// start workflows at all is Temporal's own authorizer's job (docs/security.md).
//
// Operations: CREATE, ALTER, DESCRIBE, DELETE on CLUSTER_MIRROR (a mirror's name or `*`), and READ
// on TOPIC (a topic's name or `*`). Starting, pausing, resuming or stopping a topic needs ALTER on
// the mirror and READ on the topic: ALTER on a mirror alone cannot add a topic the principal may
// not read. A start by pattern needs READ on `*` (the pattern also matches topics created later).
// Reading without changing — a dry run (failover, promote, failback) and the CLI's describe,
// history, groups and verify — needs DESCRIBE on the mirror (and READ on the topics it reads).
import { KmirrorError } from './errors.ts';
import type { Event } from './events.ts';

export const ACL_OPERATIONS = ['CREATE', 'ALTER', 'DESCRIBE', 'DELETE', 'READ'] as const;
export type AclOperation = (typeof ACL_OPERATIONS)[number];
export const ACL_RESOURCE_TYPES = ['CLUSTER_MIRROR', 'TOPIC'] as const;
export type AclResourceType = (typeof ACL_RESOURCE_TYPES)[number];

/** One permission: `principal` may do `operation` on `resource` (a name, or `*` for all) of a type.
 *  A principal of `*` is every principal. */
export interface AclGrant {
  readonly principal: string;
  readonly operation: AclOperation;
  readonly resourceType: AclResourceType;
  readonly resource: string;
}

/** What a request needs: an operation on one named resource. */
export interface AclRequirement {
  readonly operation: AclOperation;
  readonly resourceType: AclResourceType;
  readonly resource: string;
}

export type AclGranted = Event<'AclGranted', AclGrant>;
export type AclRevoked = Event<'AclRevoked', AclGrant>;
/** A request refused for lack of grants; nothing else of it happened. */
export type OperationRefused = Event<'OperationRefused', { readonly principal: string; readonly workflow: string; readonly mirror: string; readonly missing: readonly AclRequirement[] }>;
export type AuthorizationEvent = AclGranted | AclRevoked | OperationRefused;

/** The stream of every grant, revocation and refusal. */
export const AUTHORIZATION_STREAM = 'acl:grants';

const OPERATIONS_ON: Readonly<Record<AclResourceType, readonly AclOperation[]>> = {
  CLUSTER_MIRROR: ['CREATE', 'ALTER', 'DESCRIBE', 'DELETE'],
  TOPIC: ['READ'],
};

/** INVALID_ARGUMENT unless the grant is well formed (known operation for its resource type, names given). */
export function assertGrant(grant: AclGrant): void {
  if (!(ACL_RESOURCE_TYPES as readonly string[]).includes(grant.resourceType)) {
    throw new KmirrorError('INVALID_ARGUMENT', `resource type must be one of ${ACL_RESOURCE_TYPES.join(', ')}, got ${String(grant.resourceType)}`);
  }
  if (!OPERATIONS_ON[grant.resourceType].includes(grant.operation)) {
    throw new KmirrorError('INVALID_ARGUMENT', `operation ${String(grant.operation)} does not apply to ${grant.resourceType} (one of ${OPERATIONS_ON[grant.resourceType].join(', ')})`);
  }
  for (const [field, value] of [['principal', grant.principal], ['resource', grant.resource]] as const) {
    if (typeof value !== 'string' || value.trim() === '' || value !== value.trim()) throw new KmirrorError('INVALID_ARGUMENT', `${field} must be a non-empty name without surrounding spaces`);
  }
}

const sameGrant = (a: AclGrant, b: AclGrant): boolean => a.principal === b.principal && a.operation === b.operation && a.resourceType === b.resourceType && a.resource === b.resource;

/** The events a grant or revocation appends: none when it changes nothing (already granted, or
 *  not granted), so repeating a command is harmless. */
export function decideAcl(command: { readonly type: 'GrantAcl' | 'RevokeAcl'; readonly grant: AclGrant }, grants: readonly AclGrant[]): AuthorizationEvent[] {
  assertGrant(command.grant);
  const exists = grants.some((g) => sameGrant(g, command.grant));
  if (command.type === 'GrantAcl') return exists ? [] : [{ type: 'AclGranted', data: command.grant }];
  return exists ? [{ type: 'AclRevoked', data: command.grant }] : [];
}

export function evolveGrants(grants: readonly AclGrant[], event: AuthorizationEvent): AclGrant[] {
  if (event.type === 'AclGranted') return [...grants, event.data];
  if (event.type === 'AclRevoked') return grants.filter((g) => !sameGrant(g, event.data));
  return [...grants];
}

/** The requirements `principal` lacks (empty: allowed). */
export function missingGrants(grants: readonly AclGrant[], principal: string, required: readonly AclRequirement[]): AclRequirement[] {
  return required.filter(
    (r) => !grants.some((g) => (g.principal === principal || g.principal === '*') && g.operation === r.operation && g.resourceType === r.resourceType && (g.resource === r.resource || g.resource === '*')),
  );
}

/** Workflows with a dry run, and the CLI's reading commands: DESCRIBE is what they need to read. */
const DRY_RUNS = new Set(['failover', 'promote', 'failback']);
export const READING_COMMANDS = ['list', 'describe', 'history', 'groups', 'verify', 'offsets-for-time'] as const;

/** What an operation workflow or a reading command needs (DESIGN §8). `topics`: the topics it
 *  names, resolved (a pattern start passes `*`); absent for operations on the mirror as a whole.
 *  `dryRun`: the workflow only reports what it would do (DESCRIBE instead of ALTER). */
export function requirementsOf(workflow: string, mirror: string, topics: readonly string[] = [], options: { readonly dryRun?: boolean } = {}): AclRequirement[] {
  const onMirror = (operation: AclOperation): AclRequirement => ({ operation, resourceType: 'CLUSTER_MIRROR', resource: mirror });
  const reads = [...new Set(topics)].sort().map((topic): AclRequirement => ({ operation: 'READ', resourceType: 'TOPIC', resource: topic }));
  if (options.dryRun === true) {
    if (!DRY_RUNS.has(workflow)) throw new KmirrorError('INVALID_ARGUMENT', `${workflow} has no dry run`);
    return [onMirror('DESCRIBE'), ...reads];
  }
  if ((READING_COMMANDS as readonly string[]).includes(workflow)) return [onMirror('DESCRIBE'), ...reads];
  switch (workflow) {
    case 'createMirror':
      return [onMirror('CREATE')];
    case 'deleteMirror':
      return [onMirror('DELETE')];
    case 'alterMirror':
      return [onMirror('ALTER')];
    case 'startTopics':
    case 'pauseTopics':
    case 'resumeTopics':
    case 'failover':
    case 'promote':
    case 'failback':
    case 'retryPartitions':
      return [onMirror('ALTER'), ...reads];
    default:
      throw new KmirrorError('INVALID_ARGUMENT', `no authorization rule for workflow ${workflow}`);
  }
}

/** The refusal's message: who lacks what, each grant an operator could add. */
export function refusalMessage(principal: string, workflow: string, missing: readonly AclRequirement[]): string {
  const what = missing.map((m) => `${m.operation} on ${m.resourceType} ${m.resource}`).join(', ');
  return `${principal} may not run ${workflow}: missing ${what} (kmirror acl add --principal ${principal} --operation … --${missing[0]?.resourceType === 'TOPIC' ? 'topic' : 'mirror'} …)`;
}
