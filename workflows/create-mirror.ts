// `createMirror`: register a mirror from a registered source cluster into a registered destination
// cluster, after checking both answer, and start its runner.
// Input (Temporal UI: type `createMirror`, task queue `kmirror`, id `create:<mirror>`):
//   {"mirror": "dr-east", "sourceCluster": "east", "destinationCluster": "west", "actor": "alice", "reason": "…"}
import { ApplicationFailure, setHandler } from '@temporalio/workflow';
import type { ClusterCheck } from '../activities/kafka-admin.ts';
import { asFailure, authorizeRequest, checkFilters, checkRequester, invalid, metadataOf, setSearchAttributes, short, type FilterInput } from './common.ts';
import { progressQuery, runnerWorkflowId, type Requester } from './messages.ts';
import { RECORDS_LOST_POLICIES, type RecordsLostPolicy } from '../domain/commands.ts';

export interface CreateMirrorInput extends Requester {
  readonly mirror: string;
  readonly sourceCluster: string;
  readonly destinationCluster: string;
  /** Consumer groups whose offsets are synced (whole-name patterns; default every group). */
  readonly groups?: FilterInput;
  /** Principals whose topic ACLs are synced to the destination (whole-name patterns such as
   *  `User:orders-.*`; default none: ACL sync off). */
  readonly acls?: FilterInput;
  /** Records the source's retention removed before they were mirrored: record the loss and go on
   *  (`continue`, the default), or fail the partition until an operator accepts it (`fail`). */
  readonly onRecordsLost?: RecordsLostPolicy;
}

export interface CreateMirrorResult {
  readonly mirror: string;
  readonly sourceCluster: ClusterCheck;
  readonly destinationCluster: ClusterCheck;
  readonly runnerWorkflowId: string;
}

const SHAPE = '{"mirror": string, "sourceCluster": string, "destinationCluster": string, "groups"?: {"include"?: string[], "exclude"?: string[]}, "acls"?: {"include"?: string[], "exclude"?: string[]}, "onRecordsLost"?: "continue" | "fail", "actor"?: string, "reason"?: string}';

export async function createMirror(input: CreateMirrorInput): Promise<CreateMirrorResult> {
  for (const field of ['mirror', 'sourceCluster', 'destinationCluster'] as const) {
    if (typeof input?.[field] !== 'string') throw invalid('createMirror', `"${field}" must be a string`, SHAPE);
  }
  checkFilters('createMirror', input, SHAPE);
  if (input.onRecordsLost !== undefined && !RECORDS_LOST_POLICIES.includes(input.onRecordsLost)) {
    throw invalid('createMirror', `"onRecordsLost" must be one of ${RECORDS_LOST_POLICIES.map((p) => `"${p}"`).join(', ')}`, SHAPE);
  }
  checkRequester('createMirror', input, SHAPE);
  const { mirror, sourceCluster, destinationCluster } = input;
  setSearchAttributes({ mirror, workflow: 'createMirror' });
  let step = 'checking the request';
  setHandler(progressQuery, () => ({ workflow: 'createMirror', mirror, step, done: step === 'done', total: 0, states: {} }));
  const command = { type: 'CreateMirror', mirror, sourceCluster, destinationCluster, ...(input.onRecordsLost === undefined ? {} : { onRecordsLost: input.onRecordsLost }) } as const;
  const metadata = metadataOf(input);
  try {
    await authorizeRequest('createMirror', { mirror }, input);
    // Refusals (bad name, mirror exists, cluster not registered) come before any cluster is contacted.
    await short.applyMirrorCommand({ command, metadata, dryRun: true });
    const groupFilter = input.groups === undefined ? undefined : ({ type: 'SetGroupFilter', mirror, include: [...(input.groups.include ?? ['.*'])], exclude: [...(input.groups.exclude ?? [])] } as const);
    step = 'checking that both clusters answer';
    const [source, destination] = await short.checkClusters({ clusters: [sourceCluster, destinationCluster] });
    // Two names for one cluster: the mirror would copy every topic onto itself.
    if (source!.clusterId === destination!.clusterId) {
      throw ApplicationFailure.nonRetryable(
        `mirror ${mirror}: clusters ${sourceCluster} and ${destinationCluster} are the same Kafka cluster (id ${source!.clusterId}); a mirror copies from one cluster to another`,
        'INVALID_ARGUMENT',
      );
    }
    step = 'recording the mirror';
    await short.applyMirrorCommand({ command, metadata });
    if (groupFilter !== undefined) await short.applyMirrorCommand({ command: groupFilter, metadata });
    if (input.acls !== undefined && (input.acls.include ?? []).length > 0) {
      await short.applyMirrorCommand({ command: { type: 'SetAclFilter', mirror, include: [...input.acls.include!], exclude: [...(input.acls.exclude ?? [])] }, metadata });
    }
    step = 'starting the mirror runner';
    const runner = await short.ensureRunner({ mirror });
    step = 'done';
    return { mirror, sourceCluster: source!, destinationCluster: destination!, runnerWorkflowId: runner.workflowId ?? runnerWorkflowId(mirror) };
  } catch (err) {
    throw asFailure(err);
  }
}
