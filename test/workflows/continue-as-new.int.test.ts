// The runner continues as new before its history grows large (DESIGN §4), and the next run picks
// up where the last one was: copies restart from the destination end, nothing is lost or doubled,
// and operations still reach it. The history limit is set low here so it happens within seconds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitOperation, startOperation } from '../../client/index.ts';
import { verifyPartition } from '../../kafka/verify.ts';
import { runnerWorkflowId } from '../../workflows/messages.ts';
import { controlPlane, type ControlPlane } from '../support/control-plane.ts';
import { messages, sendAll } from '../support/mirror-fixture.ts';
import { randomName } from '../support/stack.ts';

let t: ControlPlane;
beforeAll(async () => {
  t = await controlPlane({ env: { KMIRROR_RUNNER_HISTORY_LIMIT: '80', KMIRROR_GROUP_SYNC_INTERVAL_MS: '300' } });
});
afterAll(async () => t?.close());

describe('the mirror runner', () => {
  it('continues as new and keeps mirroring: offsets equal, pause and resume still work', async () => {
    const mirror = randomName('m');
    const topic = await t.sourceTopic({ partitions: 2 });
    const producer = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await sendAll(producer, topic, messages(200, 2));
    await awaitOperation(await startOperation(t.temporal, 'createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst' }));
    await awaitOperation(await startOperation(t.temporal, 'startTopics', { mirror, topics: [topic] }));
    const runs = async () => {
      let n = 0;
      for await (const _ of t.temporal.client.workflow.list({ query: `WorkflowId = '${runnerWorkflowId(mirror)}'` })) n++;
      return n;
    };
    // Group-sync rounds fill the history; past the limit the runner starts a new run.
    await expect.poll(runs, { timeout: 60_000, interval: 1_000 }).toBeGreaterThanOrEqual(2);
    const described = await t.temporal.client.workflow.getHandle(runnerWorkflowId(mirror)).describe();
    expect(described.status.name).toBe('RUNNING');
    await sendAll(producer, topic, messages(200, 2, { from: 1_000 }));
    await expect.poll(async () => [...(await t.dest.listOffsets(topic, [0, 1], 'latest')).values()].sort(), { timeout: 30_000 }).toEqual([200n, 200n]);
    expect(await awaitOperation(await startOperation(t.temporal, 'pauseTopics', { mirror, allTopics: true }))).toMatchObject({ states: { PAUSED: 2 } });
    expect(await awaitOperation(await startOperation(t.temporal, 'resumeTopics', { mirror, allTopics: true }))).toMatchObject({ states: { MIRRORING: 2 } });
    for (const p of [0, 1]) expect(await verifyPartition(t.source, t.dest, topic, p)).toMatchObject({ equal: true, recordsCompared: 200 });
    await producer.disconnect();
  });
});
