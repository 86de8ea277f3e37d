// Drill (a 3-broker source and destination, `npm run test:drill`): a destination with fewer brokers
// than a source topic has replicas. With destination broker 3 stopped, two brokers answer; `kmirror
// start` of a source topic with 3 replicas creates its destination twin with 2, says so in its
// output, and the mirror runs. (The integration tier's clusters have one broker each, so a source
// replication factor above the destination's broker count can only be made here.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTopicsAndWait } from '../../kafka/admin.ts';
import { formattedNodes, startCluster, stopNode } from '../../scripts/stack/kafka.ts';
import { controlPlane, kmirrorOn, operationsOn, type ControlPlane } from '../support/control-plane.ts';
import { messages, sendAll } from '../support/mirror-fixture.ts';
import { randomName } from '../support/stack.ts';

let t: ControlPlane;
beforeAll(async () => {
  expect([formattedNodes('source'), formattedNodes('dest')], 'the drill tier runs 3-broker clusters (npm run test:drill)').toEqual([3, 3]);
  t = await controlPlane();
});
afterAll(async () => {
  await startCluster('dest', 3, () => undefined);
  await t?.close();
});

const { run, ends } = operationsOn(() => t);

describe('a destination with fewer brokers than the source topic has replicas', () => {
  it('start creates the destination topic with the brokers there are, says so, and mirrors', async () => {
    expect(await stopNode('dest', 3)).toBe(true);
    await expect.poll(async () => (await t.destAdmin.describeCluster()).brokers.length, { timeout: 60_000, interval: 500 }).toBe(2);

    const topic = randomName('rf');
    t.track(topic);
    await createTopicsAndWait(t.sourceAdmin, [{ topic, partitions: 2, replicationFactor: 3 }]);
    const producer = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await sendAll(producer, topic, messages(100, 2));
    await producer.disconnect();

    const mirror = randomName('rf');
    await run('createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst' });
    const started = await kmirrorOn(t, ['start', mirror, '--topic', topic]);
    expect(started.code, started.stderr).toBe(0);
    expect(started.stdout).toMatch(new RegExp(`^${topic}\\s+2\\s+2 \\(source 3, capped by the destination's brokers\\)\\s+created$`, 'm'));

    const [metadata] = (await t.destAdmin.fetchTopicMetadata({ topics: [topic] })).topics;
    expect(metadata!.partitions.map((p) => p.replicas.length)).toEqual([2, 2]);
    await expect.poll(() => ends('dest', topic, 2), { timeout: 30_000 }).toEqual(await ends('source', topic, 2));
  });
});
