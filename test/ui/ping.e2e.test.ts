// The operator's health check through the Temporal Web UI of the local stack: a headless Chromium
// starts `ping` with the Start Workflow form, an in-process worker runs it, and the result read
// back through @temporalio/client proves the form's input reached the workflow.
import { Client, Connection, WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { WORKFLOWS_PATH } from '../../workflow-bundle.ts';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPingActivities } from '../../activities/ping.ts';
import { loadConfig, type Config } from '../../config.ts';
import type { ping, PingResult } from '../../workflows/ping.ts';
import { closeBrowser, launchBrowser, startWorkflowInUi } from '../support/browser.ts';
import { randomName, stackConfigEnv, stackEnv } from '../support/stack.ts';

let temporal: Config['temporal'];
let connection: Connection;
let client: Client;
let browser: Browser | undefined;
let page: Page;
const begun: WorkflowHandle[] = [];

beforeAll(async () => {
  // The SDK's INFO lines (bundle built, worker state changes) would bury vitest's report.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  // The worker's own config, on a task queue of this file's: the stack's `kmirror` queue may have
  // the demo's worker polling it, which would run the workflow in our place.
  temporal = loadConfig(stackConfigEnv({ TEMPORAL_TASK_QUEUE: randomName('ui-ping') })).temporal;
  connection = await Connection.connect({ address: temporal.address });
  client = new Client({ connection, namespace: temporal.namespace });
  browser = await launchBrowser();
  page = await browser.newPage();
});

afterEach(async () => {
  // A failed test must not leave a workflow running forever on a queue nobody polls.
  for (const handle of begun.splice(0)) {
    const { status } = await handle.describe().catch((err: unknown) => {
      if (err instanceof WorkflowNotFoundError) return { status: { name: 'NOT_STARTED' } };
      throw err;
    });
    if (status.name === 'RUNNING') await handle.terminate('test cleanup');
  }
});

afterAll(async () => {
  await closeBrowser(browser);
  await connection?.close();
});

/** A worker like worker.ts composes it, limited to what `ping` needs. */
async function pingWorker(workerConnection: NativeConnection): Promise<Worker> {
  return Worker.create({
    connection: workerConnection,
    namespace: temporal.namespace,
    taskQueue: temporal.taskQueue,
    workflowsPath: WORKFLOWS_PATH,
    activities: { ...createPingActivities() },
  });
}

describe('Temporal Web UI', () => {
  it('starts ping from the Start Workflow form with a JSON input, and the worker runs it', async () => {
    const workflowId = randomName('ui-ping');
    const handle = client.workflow.getHandle<typeof ping>(workflowId);
    begun.push(handle);
    // Nothing but the form starts this id: if it were not submitted, result() below would fail.
    await expect(handle.describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);

    const workerConnection = await NativeConnection.connect({ address: temporal.address });
    try {
      const worker = await pingWorker(workerConnection);
      const result = await worker.runUntil(async () => {
        await startWorkflowInUi(page, {
          uiUrl: stackEnv().TEMPORAL_UI_URL!,
          namespace: temporal.namespace,
          workflowId,
          workflowType: 'ping',
          taskQueue: temporal.taskQueue,
          input: { message: 'hello' },
        });
        return handle.result();
      });
      expect(result).toEqual({ message: 'hello', activityTaskQueue: temporal.taskQueue } satisfies PingResult);
    } finally {
      await workerConnection.close();
    }
    const { type, taskQueue, status } = await handle.describe();
    expect({ type, taskQueue, status: status.name }).toEqual({ type: 'ping', taskQueue: temporal.taskQueue, status: 'COMPLETED' });
  });
});
