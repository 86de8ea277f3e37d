// `deleteMirror`: remove a mirror whose every partition is STOPPED (refused with
// CLUSTER_MIRROR_NOT_EMPTY otherwise, naming the partitions), stop its runner, and record the
// deletion. The topics stay on both clusters; the event log keeps the mirror's history, and the
// name can be used again.
// Input (Temporal UI: type `deleteMirror`, task queue `kmirror`, id `delete:<mirror>`):
//   {"mirror": "dr-east", "actor": "alice", "reason": "migration finished"}
import { getExternalWorkflowHandle, setHandler } from '@temporalio/workflow';
import { asFailure, authorizeRequest, checkRequester, invalid, metadataOf, setSearchAttributes, short } from './common.ts';
import { progressQuery, runnerWorkflowId, type Requester } from './messages.ts';

export interface DeleteMirrorInput extends Requester {
  readonly mirror: string;
}

export interface DeleteMirrorResult {
  readonly mirror: string;
  readonly deleted: true;
}

export async function deleteMirror(input: DeleteMirrorInput): Promise<DeleteMirrorResult> {
  const shape = '{"mirror": string, "actor"?: string, "reason"?: string}';
  if (typeof input?.mirror !== 'string') throw invalid('deleteMirror', '"mirror" must be a string', shape);
  checkRequester('deleteMirror', input, shape);
  const { mirror } = input;
  setSearchAttributes({ mirror, workflow: 'deleteMirror' });
  let step = 'checking that every partition is STOPPED';
  setHandler(progressQuery, () => ({ workflow: 'deleteMirror', mirror, step, done: step === 'done', total: 0, states: {} }));
  const metadata = metadataOf(input);
  try {
    await authorizeRequest('deleteMirror', { mirror }, input);
    await short.applyMirrorCommand({ command: { type: 'DeleteMirror', mirror }, metadata });
    step = 'stopping the runner';
    // Its partitions are all STOPPED, so it runs no copy; a runner that is gone already is fine.
    await getExternalWorkflowHandle(runnerWorkflowId(mirror))
      .cancel()
      .catch(() => undefined);
    step = 'recording the deletion';
    await short.applyMirrorCommand({ command: { type: 'CompleteMirrorDeletion', mirror }, metadata });
    step = 'done';
    return { mirror, deleted: true };
  } catch (err) {
    throw asFailure(err);
  }
}
