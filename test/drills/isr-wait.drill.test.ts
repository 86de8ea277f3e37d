// Drill (a 3-broker destination, `npm run test:drill`): a destination broker down during failover.
// The failover's ISR wait holds and names the missing broker (in the activity's heartbeat, which the
// CLI's progress line and the Temporal UI show); when the broker is back the failover completes.
// Then the override path: with the broker still down, `retry --override-isr-wait --reason` lets the
// waiting failover complete, and the override is in the audit log with its reason. A start's ISR
// wait holds the same way, and the CLI's `retry --override-isr-wait --reason` ends it. A failover
// ended mid-way and started again skips the stop it already made.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pendingActivities, startOperation } from '../../client/index.ts';
import { createTopicsAndWait } from '../../kafka/admin.ts';
import { isrStatus } from '../../kafka/mirror-topics.ts';
import { formattedNodes, startCluster, stopNode } from '../../scripts/stack/kafka.ts';
import { progressQuery, runnerWorkflowId } from '../../workflows/messages.ts';
import { start } from '../support/child.ts';
import { cliEnv, controlPlane, kmirrorOn, operationsOn, type ControlPlane } from '../support/control-plane.ts';
import { messages, sendAll } from '../support/mirror-fixture.ts';
import { randomName } from '../support/stack.ts';

let t: ControlPlane;
beforeAll(async () => {
  // The drill needs replicas to lose: the tier starts the destination with 3 brokers.
  expect(formattedNodes('dest'), 'the drill tier runs on a 3-broker destination (npm run test:drill)').toBe(3);
  t = await controlPlane();
});
afterAll(async () => {
  await startCluster('dest', 3, () => undefined);
  await t?.close();
});

const { run, mirrored, ends } = operationsOn(() => t);
const BROKER = 3;

/** A mirror of a 2-partition topic whose destination topic has 3 replicas, caught up. The source
 *  (1 broker) has replication factor 1; the destination topic made beforehand with 3 replicas is
 *  adopted by the start (it is empty), so the ISR has a broker to lose. */
const mirroredWithReplicas = () =>
  mirrored(2, 200, { prefix: 'isr', beforeStart: (topic) => createTopicsAndWait(t.destAdmin, [{ topic, partitions: 2, replicationFactor: 3 }]).then(() => undefined) });

/** Take broker 3 away and wait until the destination's ISRs no longer hold it. */
async function brokerDown(topic: string): Promise<void> {
  expect(await stopNode('dest', BROKER)).toBe(true);
  await expect.poll(async () => (await isrStatus(t.dest, t.destAdmin, [topic])).missingBrokers, { timeout: 60_000, interval: 500 }).toEqual([BROKER]);
}

/** Start a failover and wait until its ISR wait heartbeats the missing broker. */
async function failoverHeldByIsr(mirror: string) {
  const handle = await startOperation(t.temporal, 'failover', { mirror, allTopics: true, actor: 'drill' });
  await expect
    .poll(async () => (await pendingActivities(handle)).find((a) => a.activity === 'waitForIsr')?.details, { timeout: 60_000, interval: 500 })
    .toMatchObject({ waiting: 2, missingBrokers: [BROKER] });
  expect(await handle.query(progressQuery)).toMatchObject({ step: 'waiting for the ISR', done: false });
  // It holds: still waiting a few seconds later.
  await new Promise((r) => setTimeout(r, 3_000));
  expect((await pendingActivities(handle)).map((a) => a.activity)).toContain('waitForIsr');
  return handle;
}

describe('a destination broker down during failover', () => {
  it('the ISR wait holds and names the broker; the broker back, the failover completes', async () => {
    const { mirror, topic } = await mirroredWithReplicas();
    await brokerDown(topic);
    const handle = await failoverHeldByIsr(mirror);
    await startCluster('dest', 3, () => undefined);
    const result = await handle.result();
    expect(result).toMatchObject({ mode: 'failover', states: { STOPPED: 2 } });
    expect((await isrStatus(t.dest, t.destAdmin, [topic])).waiting).toEqual([]);
  });

  it('with the broker still down, retry --override-isr-wait lets the failover complete, recorded with its reason', async () => {
    const { mirror, topic } = await mirroredWithReplicas();
    await brokerDown(topic);
    const handle = await failoverHeldByIsr(mirror);
    const reason = 'broker 3 is being replaced';
    await run('retryPartitions', { mirror, overrideIsrWait: true, actor: 'oncall', reason });
    const result = await handle.result();
    expect(result).toMatchObject({ mode: 'failover', states: { STOPPED: 2 } });
    expect((await isrStatus(t.dest, t.destAdmin, [topic])).missingBrokers).toEqual([BROKER]);
    const events = await t.db.selectFrom('events').select(['type', 'metadata']).where('stream_id', '=', `mirror:${mirror}`).where('type', '=', 'IsrWaitOverridden').execute();
    expect(events).toMatchObject([{ metadata: { actor: 'oncall', reason } }]);
  });

  it('a start with a destination broker down holds in its ISR wait; `kmirror retry --override-isr-wait` needs a reason, and with one the start reaches MIRRORING', async () => {
    await startCluster('dest', 3, () => undefined); // the test before leaves broker 3 down
    const mirror = randomName('isr-start');
    const topic = await t.sourceTopic({ partitions: 2 });
    const producer = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await sendAll(producer, topic, messages(100, 2));
    await producer.disconnect();
    await run('createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst' });
    // The (empty) destination topic with 3 replicas, adopted by the start; then a broker goes.
    await createTopicsAndWait(t.destAdmin, [{ topic, partitions: 2, replicationFactor: 3 }]);
    await brokerDown(topic);
    // The operator's `kmirror start` on a terminal (script(1) gives it a pseudo-terminal).
    const command = [process.execPath, '--import', 'tsx', 'cli/main.ts', 'start', mirror, '--topic', topic].map((a) => `'${a}'`).join(' ');
    const terminal = start('script', ['-qfec', command, '/dev/null'], { env: cliEnv(t) });
    // The runner aligns the new partitions and waits for their ISR (its activity); the start waits for the runner.
    const runner = t.temporal.client.workflow.getHandle(runnerWorkflowId(mirror));
    await expect
      .poll(async () => (await pendingActivities(runner)).find((a) => a.activity === 'waitForIsr')?.details, { timeout: 60_000, interval: 500 })
      .toMatchObject({ waiting: 2, missingBrokers: [BROKER] });
    // Its progress line, rewritten in place, names the partitions not done and the broker they lack.
    const line = new RegExp(
      `\\r\\x1b\\[Kstart ${mirror}: aligning the destination and waiting for the ISR — 2 partitions: 2 LOG_TRUNCATION; not yet: ${topic}-0 LOG_TRUNCATION, ${topic}-1 LOG_TRUNCATION; 2 partition\\(s\\) lack an in-sync replica \\(broker ${BROKER} missing\\) — to go on without it: kmirror retry ${mirror} --override-isr-wait`,
    );
    await expect.poll(() => terminal.stdout(), { timeout: 20_000, interval: 500 }).toMatch(line);

    const noReason = await kmirrorOn(t, ['retry', mirror, '--override-isr-wait']);
    expect(noReason.code, noReason.stderr).toBe(2);
    expect(noReason.stderr).toMatch(/^error INVALID_ARGUMENT: --override-isr-wait needs --reason TEXT/m);
    const reason = 'broker 3 is being replaced';
    const overridden = await kmirrorOn(t, ['retry', mirror, '--override-isr-wait', '--reason', reason, '--actor', 'oncall', '--json']);
    expect(overridden.code, overridden.stderr).toBe(0);
    expect((await terminal.exited).code, terminal.stdout()).toBe(0);
    expect(terminal.stdout()).toMatch(/^2 partition\(s\): 2 MIRRORING\r?$/m);
    await expect.poll(() => ends('dest', topic, 2), { timeout: 30_000 }).toEqual(await ends('source', topic, 2));
    const events = await t.db.selectFrom('events').select(['type', 'metadata']).where('stream_id', '=', `mirror:${mirror}`).where('type', '=', 'IsrWaitOverridden').execute();
    expect(events).toMatchObject([{ metadata: { actor: 'oncall', reason } }]);
    await startCluster('dest', 3, () => undefined);
  });

  it('a failover ended while it waits for the ISR (an operation that failed mid-way), started again, skips the stop already made and completes', async () => {
    await startCluster('dest', 3, () => undefined);
    const { mirror, topic } = await mirroredWithReplicas();
    await brokerDown(topic);
    const first = await failoverHeldByIsr(mirror);
    await first.terminate('drill: the operation failed mid-way');
    const positions = () => t.db.selectFrom('mirror_partitions').select(['state', 'last_mirrored_offset']).where('mirror', '=', mirror).orderBy('partition').execute();
    const stopped = await positions();
    expect(stopped.map((r) => r.state)).toEqual(['STOPPING', 'STOPPING']);
    // The stop recorded where each partition ended, then made the topic writable: an application
    // writes to it before the failover is run again.
    expect(stopped.map((r) => r.last_mirrored_offset)).toEqual(await ends('dest', topic, 2));
    const app = t.destKafka.producer();
    await app.connect();
    await sendAll(app, topic, messages(40, 2, { from: 10_000 }));
    await app.disconnect();
    await startCluster('dest', 3, () => undefined);
    // The same request again: a new run, which finds the stop made and goes on from there.
    const result = await run('failover', { mirror, allTopics: true, actor: 'drill' });
    expect(result).toMatchObject({ mode: 'failover', states: { STOPPED: 2 } });
    const events = await t.db.selectFrom('events').select('type').where('stream_id', '=', `mirror:${mirror}`).where('type', '=', 'PartitionStopRequested').execute();
    expect(events).toHaveLength(2);
    // The positions are the stop's, not the application's writes after it.
    expect((await positions()).map((r) => [r.state, r.last_mirrored_offset])).toEqual(stopped.map((r) => ['STOPPED', r.last_mirrored_offset]));
  });
});
