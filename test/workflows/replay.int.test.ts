// Determinism of the workflows against what they really did (STYLE 16): a scenario on the stack
// (create, start, pause, resume, a refused start), then every execution of this file's task queue,
// the still-running runner included, replayed against workflows/ as the worker bundles them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlPlane, type ControlPlane } from '../support/control-plane.ts';
import { recordExecutions, replayFailures, replayHistories, runReplayScenario, SCENARIO_WORKFLOW_TYPES } from '../support/replay-scenario.ts';

let t: ControlPlane;
beforeAll(async () => {
  t = await controlPlane();
});
afterAll(async () => t?.close());

describe('replaying the histories of a real scenario', () => {
  it('every execution of the task queue replays without a nondeterminism error, each workflow type among them', async () => {
    const run = await runReplayScenario(t);
    const executions = await recordExecutions(t, run.workflowIds);
    expect(new Set(executions.map((e) => e.workflowType))).toEqual(new Set(SCENARIO_WORKFLOW_TYPES));
    // The scenario ends by deleting the mirror, which cancels its runner.
    expect(executions.filter((e) => e.workflowType === 'mirrorRunner').map((e) => [e.workflowId, e.status])).toEqual([
      [`mirror:${run.mirror}`, 'CANCELLED'],
      [`mirror:${run.mirror}-reverse`, 'CANCELLED'],
    ]);
    // The failback's child starts the reverse mirror's topics.
    expect(executions.filter((e) => e.workflowType === 'startTopics').map((e) => e.status)).toEqual(['COMPLETED', 'FAILED', 'COMPLETED']);

    const results = await replayHistories(executions.map((e) => ({ workflowId: e.workflowId, history: e.history })));
    expect(results.map((r) => r.runId)).toEqual(executions.map((e) => e.runId));
    expect(replayFailures(results)).toEqual([]);
  });
});
