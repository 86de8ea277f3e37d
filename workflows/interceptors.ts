// Workflow interceptors bundled with the workflows (workflow-bundle.ts): every operation workflow
// reports how long it ran and how it ended to the worker's metrics, through the `operations` sink
// (worker.ts). The mirror runner (long-lived) and ping are not operations. Sinks are not called
// during replay, so a workflow is counted once, when it ends; its duration is workflow time from
// the first run's start, so a workflow that outlived a worker is measured whole.
import { isCancellation, proxySinks, workflowInfo, type Sinks, type WorkflowInterceptorsFactory } from '@temporalio/workflow';

export interface OperationSinks extends Sinks {
  operations: {
    finished(outcome: 'completed' | 'failed' | 'cancelled', seconds: number): void;
  };
}

const NOT_OPERATIONS = new Set(['mirrorRunner', 'ping']);

const { operations } = proxySinks<OperationSinks>();

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [
    {
      async execute(input, next) {
        const { workflowType, startTime } = workflowInfo();
        if (NOT_OPERATIONS.has(workflowType)) return next(input);
        const seconds = (): number => (Date.now() - startTime.getTime()) / 1000;
        try {
          const result: unknown = await next(input);
          operations.finished('completed', seconds());
          return result;
        } catch (err) {
          operations.finished(isCancellation(err) ? 'cancelled' : 'failed', seconds());
          throw err;
        }
      },
    },
  ],
});
