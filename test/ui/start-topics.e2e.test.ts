// An operator starts mirroring a topic from the Temporal Web UI: a headless Chromium fills the Start
// Workflow form with `startTopics` and the JSON input documented in workflows/start-topics.ts, the
// control plane's worker runs it, the partitions reach MIRRORING, the data arrives at the same
// offsets, and the event log records the UI's request with who asked and why.
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitOperation, startOperation } from '../../client/index.ts';
import { readStream } from '../../db/event-store/read-stream.ts';
import { mirrorStreamId } from '../../domain/events.ts';
import { verifyPartition } from '../../kafka/verify.ts';
import type { startTopics, StartTopicsInput } from '../../workflows/start-topics.ts';
import { MirrorName, MirrorOperation, MirrorTopic } from '../../workflows/search-attributes.ts';
import { closeBrowser, launchBrowser, startWorkflowInUi } from '../support/browser.ts';
import { controlPlane, type ControlPlane } from '../support/control-plane.ts';
import { messages, sendAll } from '../support/mirror-fixture.ts';
import { randomName, stackEnv } from '../support/stack.ts';

const PARTITIONS = [0, 1];
const RECORDS = 400;

let t: ControlPlane | undefined;
let browser: Browser | undefined;
let page: Page;

beforeAll(async () => {
  t = await controlPlane();
  browser = await launchBrowser();
  page = await browser.newPage();
});

afterAll(async () => {
  await closeBrowser(browser);
  // Terminates the workflows left on the task queue (the runner, a start that never finished).
  await t?.close();
});

describe('startTopics from the Temporal Web UI', () => {
  it('mirrors the topic: partitions MIRRORING, the same records at the same offsets, the request in the log', async () => {
    const cp = t!;
    const ends = async (cluster: 'source' | 'dest', topic: string) => [...(await cp[cluster].listOffsets(topic, PARTITIONS, 'latest')).values()];

    const topic = await cp.sourceTopic({ partitions: PARTITIONS.length });
    const producer = cp.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    try {
      await sendAll(producer, topic, messages(RECORDS, PARTITIONS.length));
    } finally {
      await producer.disconnect();
    }
    const mirror = randomName('ui-m');
    await awaitOperation<'createMirror'>(await startOperation(cp.temporal, 'createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst', actor: 'test-setup' }));

    const workflowId = `start:${mirror}:ui`;
    const handle = cp.temporal.client.workflow.getHandle<typeof startTopics>(workflowId);
    // Nothing but the form starts this id: if it were not submitted, the result below would fail.
    await expect(handle.describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);

    const input = { mirror, topics: [topic], actor: 'ui-test', reason: 'started from the Temporal UI' } satisfies StartTopicsInput;
    await startWorkflowInUi(page, {
      uiUrl: stackEnv().TEMPORAL_UI_URL!,
      namespace: cp.config.temporal.namespace,
      workflowId,
      workflowType: 'startTopics',
      taskQueue: cp.taskQueue,
      input,
    });

    const result = await awaitOperation<'startTopics'>(handle);
    expect(result).toMatchObject({ mirror, partitions: PARTITIONS.length, states: { MIRRORING: PARTITIONS.length }, failed: [] });
    expect(result.topics).toEqual([expect.objectContaining({ topic, partitionCount: PARTITIONS.length, created: true })]);
    const described = await handle.describe();
    expect({ type: described.type, taskQueue: described.taskQueue, status: described.status.name }).toEqual({ type: 'startTopics', taskQueue: cp.taskQueue, status: 'COMPLETED' });
    // Started without search attributes, the workflow sets its own (workflows/search-attributes.ts).
    expect([MirrorName, MirrorOperation, MirrorTopic].map((key) => described.typedSearchAttributes.get(key))).toEqual([mirror, 'startTopics', topic]);

    const sourceEnds = await ends('source', topic);
    expect(sourceEnds.reduce((a, b) => a + b, 0n)).toBe(BigInt(RECORDS));
    await expect.poll(() => ends('dest', topic), { timeout: 60_000 }).toEqual(sourceEnds);
    for (const partition of PARTITIONS) {
      expect(await verifyPartition(cp.source, cp.dest, topic, partition)).toMatchObject({ equal: true, recordsCompared: RECORDS / PARTITIONS.length });
    }

    const events = await readStream(cp.db, mirrorStreamId(mirror));
    const added = events.filter((e) => e.type === 'MirrorTopicAdded');
    expect(added).toHaveLength(1);
    expect(added[0]!.data).toEqual({ topic, partitionCount: PARTITIONS.length });
    expect(added[0]!.metadata).toMatchObject({ actor: 'ui-test', reason: 'started from the Temporal UI', workflowId, runId: described.runId });
  });
});
