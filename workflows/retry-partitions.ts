// `retryPartitions`: the operator's way out of a stuck mirror (no dead ends, DESIGN §3). FAILED
// partitions of the named topics (default: all) go back to the state they failed in, with their
// attempt count reset, and the runner copies or aligns them again. With overrideIsrWait (a reason
// is required) the ISR waits of these topics end now, even with a replica missing, and the
// operator's decision is recorded (IsrWaitOverridden). Partitions that failed while STOPPING go back
// to STOPPING: run the same failover or promote again, which skips what it had done. With
// acceptRecordsLost (a reason is required) the operator accepts that records the source's retention
// removed are lost to the mirror (RecordsLossAccepted): partitions that failed with RECORDS_LOST
// under the `fail` policy skip that loss (recorded, as under `continue`) when retried.
// Input (Temporal UI: type `retryPartitions`, task queue `kmirror`, id `retry:<mirror>:<anything>`):
//   {"mirror": "dr-east", "topics": ["orders"], "actor": "alice", "reason": "broker back"}
//   {"mirror": "dr-east", "overrideIsrWait": true, "reason": "broker 3 is gone for days; accept RF-1"}
//   {"mirror": "dr-east", "topics": ["orders"], "acceptRecordsLost": true, "reason": "gap agreed with the owners"}
import { setHandler } from '@temporalio/workflow';
import { asFailure, authorizeRequest, checkRequester, invalid, isStringArray, metadataOf, setSearchAttributes, short, updates } from './common.ts';
import { progressQuery, type PartitionProgress, type Requester, type RunnerChange } from './messages.ts';
import { partitionsOf, progressOver, withStatesOf } from './progress.ts';
import type { PartitionSelection } from '../domain/commands.ts';

export interface RetryPartitionsInput extends Requester {
  readonly mirror: string;
  readonly topics?: readonly string[];
  readonly overrideIsrWait?: boolean;
  readonly acceptRecordsLost?: boolean;
}

export interface RetryPartitionsResult extends RunnerChange {
  readonly mirror: string;
  /** Partitions that were FAILED and were retried. */
  readonly retried: number;
  /** Topics whose ISR wait was overridden, if asked. */
  readonly isrWaitOverridden: readonly string[];
  /** Topics whose records lost to retention were accepted, if asked. */
  readonly recordsLostAccepted: readonly string[];
}

const SHAPE = '{"mirror": string, "topics"?: string[], "overrideIsrWait"?: boolean, "acceptRecordsLost"?: boolean, "actor"?: string, "reason"?: string}';

export async function retryPartitions(input: RetryPartitionsInput): Promise<RetryPartitionsResult> {
  if (typeof input?.mirror !== 'string') throw invalid('retryPartitions', '"mirror" must be a string', SHAPE);
  if (input.topics !== undefined && !isStringArray(input.topics)) throw invalid('retryPartitions', '"topics" must be a list of strings', SHAPE);
  if (input.overrideIsrWait !== undefined && typeof input.overrideIsrWait !== 'boolean') throw invalid('retryPartitions', '"overrideIsrWait" must be true or false', SHAPE);
  if (input.overrideIsrWait === true && (input.reason ?? '').trim() === '') throw invalid('retryPartitions', 'overriding the ISR wait needs a "reason" (it is recorded)', SHAPE);
  if (input.acceptRecordsLost !== undefined && typeof input.acceptRecordsLost !== 'boolean') throw invalid('retryPartitions', '"acceptRecordsLost" must be true or false', SHAPE);
  if (input.acceptRecordsLost === true && (input.reason ?? '').trim() === '') throw invalid('retryPartitions', 'accepting records lost needs a "reason" (it is recorded)', SHAPE);
  checkRequester('retryPartitions', input, SHAPE);
  const { mirror } = input;
  setSearchAttributes({ mirror, workflow: 'retryPartitions', ...(input.topics ? { topics: input.topics } : {}) });
  let step = 'checking the request';
  // The partitions of the topics retried: their states before the retry, then after it.
  let listed: PartitionProgress[] = [];
  setHandler(progressQuery, (options) => ({ workflow: 'retryPartitions', mirror, step, done: step === 'done', ...progressOver(listed, options) }));
  try {
    await authorizeRequest('retryPartitions', { mirror, ...(input.topics ? { topics: input.topics } : {}), wholeMirror: true }, input);
    const view = await short.requireMirror({ mirror });
    const topics = input.topics !== undefined && input.topics.length > 0 ? [...new Set(input.topics)] : view.topics.map((t) => t.topic);
    listed = partitionsOf(view.topics.filter((t) => topics.includes(t.topic)));
    const metadata = metadataOf(input);
    let overridden: string[] = [];
    if (input.overrideIsrWait === true) {
      step = 'recording the ISR wait override';
      await short.applyMirrorCommand({ command: { type: 'OverrideIsrWait', mirror, topics }, metadata });
      overridden = topics;
    }
    let accepted: string[] = [];
    if (input.acceptRecordsLost === true) {
      step = 'recording that the records lost are accepted';
      await short.applyMirrorCommand({ command: { type: 'AcceptRecordsLost', mirror, topics }, metadata });
      accepted = topics;
    }
    const partitions: PartitionSelection = topics.map((topic) => ({ topic }));
    const failed = view.topics.filter((t) => topics.includes(t.topic)).reduce((n, t) => n + t.partitions.filter((p) => p.state === 'FAILED').length, 0);
    step = 'retrying FAILED partitions';
    const change = await updates.updateRunner({
      mirror,
      update: 'retry',
      request: { partitions, actor: metadata.actor, ...(input.reason ? { reason: input.reason } : {}), workflowId: metadata.workflowId, runId: metadata.runId },
    });
    listed = withStatesOf(listed, change);
    step = 'done';
    return { mirror, retried: failed, isrWaitOverridden: overridden, recordsLostAccepted: accepted, ...change };
  } catch (err) {
    throw asFailure(err);
  }
}
