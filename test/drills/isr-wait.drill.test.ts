// Drill (a 3-broker destination, `npm run test:drill`): a destination broker down during failover.
// The failover's ISR wait holds and names the missing broker (in the activity's heartbeat, which the
// CLI's progress line and the Temporal UI show); when the broker is back the failover completes.
// Then the override path: with the broker still down, `retry --override-isr-wait --reason` lets the
// waiting failover complete, and the override is in the audit log with its reason.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pendingActivities, startOperation } from '../../client/index.ts';
import { createTopicsAndWait } from '../../kafka/admin.ts';
import { isrStatus } from '../../kafka/mirror-topics.ts';
import { formattedNodes, startCluster, stopNode } from '../../scripts/stack/kafka.ts';
import { progressQuery } from '../../workflows/messages.ts';
import { controlPlane, operationsOn, type ControlPlane } from '../support/control-plane.ts';

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

const { run, mirrored } = operationsOn(() => t);
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
});
