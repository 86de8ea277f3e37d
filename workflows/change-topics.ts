// What pauseTopics and resumeTopics share: the input, its checks, and the request to the runner.
import { setHandler } from '@temporalio/workflow';
import type { RunnerUpdateName } from '../activities/runner.ts';
import type { PartitionSelection } from '../domain/commands.ts';
import { asFailure, authorizeRequest, checkRequester, invalid, isStringArray, metadataOf, setSearchAttributes, short, updates } from './common.ts';
import { progressQuery, type Operation, type PartitionProgress, type Requester, type RunnerChange } from './messages.ts';
import { partitionsOf, progressOver, withStatesOf } from './progress.ts';

export interface TopicsChangeInput extends Requester {
  readonly mirror: string;
  readonly topics?: readonly string[];
  readonly allTopics?: boolean;
}

export interface TopicsChangeResult extends RunnerChange {
  readonly mirror: string;
}

export async function changeTopics(workflow: Operation, update: RunnerUpdateName, input: TopicsChangeInput): Promise<TopicsChangeResult> {
  const shape = '{"mirror": string, "topics": string[] | "allTopics": true, "actor"?: string, "reason"?: string}';
  if (typeof input?.mirror !== 'string') throw invalid(workflow, '"mirror" must be a string', shape);
  if (input.topics !== undefined && !isStringArray(input.topics)) throw invalid(workflow, '"topics" must be a list of strings', shape);
  if (input.allTopics !== undefined && typeof input.allTopics !== 'boolean') throw invalid(workflow, '"allTopics" must be true or false', shape);
  if ((input.allTopics === true) === (input.topics !== undefined && input.topics.length > 0)) throw invalid(workflow, 'name topics or set "allTopics" (one of them)', shape);
  checkRequester(workflow, input, shape);
  const { mirror } = input;
  setSearchAttributes({ mirror, workflow, ...(input.topics ? { topics: input.topics } : {}) });
  let step = 'checking the request';
  // The request's partitions: their states before the change while the runner works, after it once done.
  let listed: PartitionProgress[] = [];
  setHandler(progressQuery, (options) => ({ workflow, mirror, step, done: step === 'done', ...progressOver(listed, options) }));
  try {
    await authorizeRequest(workflow, { mirror, ...(input.topics ? { topics: input.topics } : {}), wholeMirror: input.allTopics === true }, input);
    const view = await short.requireMirror({ mirror });
    const named = new Set(input.topics ?? []);
    listed = partitionsOf(input.allTopics === true ? view.topics : view.topics.filter((t) => named.has(t.topic)));
    const partitions: PartitionSelection = input.allTopics === true ? 'all' : [...new Set(input.topics)].map((topic) => ({ topic }));
    const metadata = metadataOf(input);
    step = update === 'pause' ? 'stopping the copies of these partitions' : 'resuming';
    const result = await updates.updateRunner({
      mirror,
      update,
      request: { partitions, actor: metadata.actor, ...(input.reason ? { reason: input.reason } : {}), workflowId: metadata.workflowId, runId: metadata.runId },
    });
    listed = withStatesOf(listed, result);
    step = 'done';
    return { mirror, ...result };
  } catch (err) {
    throw asFailure(err);
  }
}
