// `ping`: the smallest real workflow — one activity round trip — so an operator (or a test) can
// check that a worker is polling the task queue and can run workflows and activities.
// Input (Temporal UI: workflow type `ping`, task queue `kmirror`): {"message": "hello"}.
import { ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { createPingActivities } from '../activities/ping.ts';

const activities = proxyActivities<ReturnType<typeof createPingActivities>>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

export interface PingInput {
  readonly message: string;
}
export interface PingResult {
  readonly message: string;
  /** Task queue of the worker that ran the activity. */
  readonly activityTaskQueue: string;
}

export async function ping(input: PingInput): Promise<PingResult> {
  if (typeof input?.message !== 'string') {
    throw ApplicationFailure.nonRetryable('ping expects {"message": string}', 'INVALID_ARGUMENT');
  }
  const result = await activities.ping({ message: input.message });
  return { message: result.message, activityTaskQueue: result.taskQueue };
}
