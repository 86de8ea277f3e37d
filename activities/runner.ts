// Activities that reach the mirror runner through the worker's Temporal client: workflow code can
// signal another workflow but not send it an Update, so operations call these. Update-with-start
// makes the runner self-healing: if it is not running (terminated by hand, say), the next operation
// starts it.
import { Context } from '@temporalio/activity';
import { WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure, TypedSearchAttributes } from '@temporalio/common';
import type { RunnerConfig } from '../config.ts';
import { pauseUpdate, refreshUpdate, resumeUpdate, retryUpdate, runnerWorkflowId, stopUpdate, truncateUpdate, type RunnerChange, type RunnerRequest } from '../workflows/messages.ts';
import { searchAttributePairs } from '../workflows/search-attributes.ts';

const updates = { pause: pauseUpdate, resume: resumeUpdate, truncate: truncateUpdate, stop: stopUpdate, refresh: refreshUpdate, retry: retryUpdate } as const;
export type RunnerUpdateName = keyof typeof updates;

function startRunner(mirror: string, taskQueue: string) {
  return new WithStartWorkflowOperation('mirrorRunner', {
    workflowId: runnerWorkflowId(mirror),
    taskQueue,
    args: [{ mirror }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    typedSearchAttributes: new TypedSearchAttributes(searchAttributePairs({ mirror, workflow: 'mirrorRunner' })),
  });
}

export function createRunnerActivities(deps: { readonly runner: RunnerConfig }) {
  return {
    /** The runner's settings, read from the worker's configuration into the runner's history. */
    async runnerSettings(): Promise<RunnerConfig> {
      return deps.runner;
    },

    /** Start the mirror's runner unless it runs already. */
    async ensureRunner(input: { readonly mirror: string }): Promise<{ readonly workflowId: string }> {
      const ctx = Context.current();
      const handle = await ctx.client.workflow.start('mirrorRunner', {
        workflowId: runnerWorkflowId(input.mirror),
        taskQueue: ctx.info.taskQueue,
        args: [{ mirror: input.mirror }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: new TypedSearchAttributes(searchAttributePairs({ mirror: input.mirror, workflow: 'mirrorRunner' })),
      });
      return { workflowId: handle.workflowId };
    },

    /** Send an Update to the mirror's runner (starting it if needed) and wait for its answer. A
     *  refusal keeps its code and message. */
    async updateRunner(input: { readonly mirror: string; readonly update: RunnerUpdateName; readonly request: RunnerRequest & { readonly mode?: 'failover' | 'promote' } }): Promise<RunnerChange> {
      const ctx = Context.current();
      const beat = setInterval(() => ctx.heartbeat(), 5_000);
      try {
        return await ctx.client.workflow.executeUpdateWithStart(updates[input.update] as typeof stopUpdate, {
          // One id per activity: a retry of this activity (Temporal did not answer in time) joins
          // the update it sent before instead of sending a second one to the same runner run.
          ...(ctx.info.workflowExecution ? { updateId: `${ctx.info.workflowExecution.workflowId}/${ctx.info.workflowExecution.runId}/${ctx.info.activityId}` } : {}),
          args: [{ mode: 'failover', ...input.request }],
          startWorkflowOperation: startRunner(input.mirror, ctx.info.taskQueue),
        });
      } catch (err) {
        if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) {
          throw ApplicationFailure.create({ type: err.cause.type ?? 'INTERNAL', message: err.cause.message, nonRetryable: err.cause.nonRetryable ?? true, details: err.cause.details ?? [] });
        }
        throw err;
      } finally {
        clearInterval(beat);
      }
    },
  };
}
