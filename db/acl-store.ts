// ClusterMirror grants (domain/authorization.ts): granted and revoked as events of the `acl:grants`
// stream with the acl_grants projection written in the same transaction, and checked against it.
// A refusal is appended to the same stream (OperationRefused), so who was refused what is in the
// audit log beside who was granted what.
import {
  AUTHORIZATION_STREAM,
  decideAcl,
  missingGrants,
  refusalMessage,
  type AclGrant,
  type AclOperation,
  type AclRequirement,
  type AclResourceType,
  type AuthorizationEvent,
} from '../domain/authorization.ts';
import { KmirrorError } from '../domain/errors.ts';
import type { Db, Trx } from './database.ts';
import { handleCommand, type CommandResult } from './command-handler.ts';
import { appendToStream } from './event-store/append-to-stream.ts';
import type { EventMetadata } from './event-store/types.ts';

export async function loadGrants(db: Db | Trx): Promise<{ readonly state: AclGrant[]; readonly version: bigint }> {
  // Version first, as in load-mirror.ts.
  const stream = await db.selectFrom('streams').select('version').where('stream_id', '=', AUTHORIZATION_STREAM).executeTakeFirst();
  const rows = await db.selectFrom('acl_grants').selectAll().orderBy('principal').orderBy('resource_type').orderBy('resource').orderBy('operation').execute();
  return {
    state: rows.map((r) => ({ principal: r.principal, operation: r.operation as AclOperation, resourceType: r.resource_type as AclResourceType, resource: r.resource })),
    version: stream?.version ?? 0n,
  };
}

/** Write the projection for `events` (the live path and the rebuild share it). */
export async function writeGrantChanges(trx: Trx, events: readonly AuthorizationEvent[], at: Date): Promise<void> {
  for (const event of events) {
    if (event.type === 'OperationRefused') continue;
    const g = event.data;
    const key = { principal: g.principal, operation: g.operation, resource_type: g.resourceType, resource: g.resource };
    if (event.type === 'AclGranted') await trx.insertInto('acl_grants').values({ ...key, granted_at: at }).onConflict((oc) => oc.doNothing()).execute();
    else await trx.deleteFrom('acl_grants').where('principal', '=', key.principal).where('operation', '=', key.operation).where('resource_type', '=', key.resource_type).where('resource', '=', key.resource).execute();
  }
}

/** Grant or revoke; a command that changes nothing appends nothing (result.events 0). */
export function changeGrant(db: Db, type: 'GrantAcl' | 'RevokeAcl', grant: AclGrant, metadata: EventMetadata): Promise<CommandResult> {
  return handleCommand(
    db,
    {
      streamId: AUTHORIZATION_STREAM,
      load: (trx) => loadGrants(trx),
      decide: (loaded) => decideAcl({ type, grant }, loaded.state),
      project: (trx, _loaded, appended) => writeGrantChanges(trx, appended.events, appended.recordedAt),
    },
    metadata,
  );
}

/**
 * Check `principal` may run `workflow` (needing `required`); on a refusal append OperationRefused
 * and throw CLUSTER_MIRROR_AUTHORIZATION_FAILED naming what is missing.
 */
export async function authorize(db: Db, request: { readonly principal: string; readonly workflow: string; readonly mirror: string; readonly required: readonly AclRequirement[] }, metadata: EventMetadata): Promise<void> {
  const { state } = await loadGrants(db);
  const missing = missingGrants(state, request.principal, request.required);
  if (missing.length === 0) return;
  const refused: AuthorizationEvent = { type: 'OperationRefused', data: { principal: request.principal, workflow: request.workflow, mirror: request.mirror, missing } };
  await db.transaction().execute((trx) => appendToStream(trx, AUTHORIZATION_STREAM, [refused], { expectedVersion: 'any', metadata }));
  throw new KmirrorError('CLUSTER_MIRROR_AUTHORIZATION_FAILED', refusalMessage(request.principal, request.workflow, missing), {
    principal: request.principal,
    workflow: request.workflow,
    mirror: request.mirror,
    missing: missing.map((m) => `${m.operation} ${m.resourceType} ${m.resource}`).join(', '),
  });
}

