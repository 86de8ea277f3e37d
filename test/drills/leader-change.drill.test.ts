// Drill (a 3-broker destination): the destination leader of a partition being copied goes away
// (controlled shutdown) and comes back while the source is written. Leadership moves to another
// replica; the copier re-reads the leaders, resyncs from the destination end and goes on: offsets
// equal, no duplicate, no loss, no partition failed.
import { afterAll, describe, it } from 'vitest';
import { startCluster } from '../../scripts/stack/kafka.ts';
import { copyThroughLeaderChange, keepWriting } from '../support/leader-change.ts';
import { messages, sendAll, useMirrorFixture } from '../support/mirror-fixture.ts';

const fixture = useMirrorFixture();
afterAll(async () => {
  await startCluster('dest', 3, () => undefined);
});

describe('a destination leader change mid-copy', () => {
  it('the copier follows the new leader: the destination verifies equal, nothing failed', async () => {
    const f = fixture();
    const partitions = 2;
    const topic = await f.topicPair({ partitions, destReplicationFactor: 3 });
    const producer = await f.producer();
    const writer = keepWriting(async (sent) => {
      await sendAll(producer, topic, messages(200, partitions, { from: sent }));
      return 200;
    });
    await copyThroughLeaderChange(f, 'dest', topic, partitions, writer);
  });
});
