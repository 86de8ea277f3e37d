// The ping activity: proves that a worker polls the task queue and runs activities. It touches no
// external system; the worker's health check (the `ping` workflow) is its only caller.
import { Context } from '@temporalio/activity';

export interface PingActivityInput {
  readonly message: string;
}
export interface PingActivityResult {
  readonly message: string;
  /** The task queue of the worker that ran the activity. */
  readonly taskQueue: string;
}

export function createPingActivities() {
  return {
    async ping(input: PingActivityInput): Promise<PingActivityResult> {
      return { message: input.message, taskQueue: Context.current().info.taskQueue };
    },
  };
}
