// The leader-change drills' common course (test/drills/*leader-change*): copy a topic while a writer
// keeps producing to its source, stop the leader of partition 0 on one cluster (a controlled
// shutdown), wait for leadership to move, restart the node, stop the writer — then the destination
// must reach the source's ends and verify equal record by record, every record sent there once,
// no partition failed and the copier resynced.
import { expect } from 'vitest';
import { startCluster, stopNode, type ClusterName } from '../../scripts/stack/kafka.ts';
import type { CopyResult } from '../../kafka/copier.ts';
import { allPartitions, type MirrorFixture } from './mirror-fixture.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `writeBatch(sentSoFar)` (which returns how many records it wrote) in a loop until stopped;
 *  stop() resolves with the number of records written. */
export function keepWriting(writeBatch: (sent: number) => Promise<number>): { stop(): Promise<number> } {
  let sent = 0;
  let writing = true;
  const loop = (async () => {
    while (writing) {
      sent += await writeBatch(sent);
      await sleep(20);
    }
  })();
  return {
    async stop() {
      writing = false;
      await loop;
      return sent;
    },
  };
}

export async function copyThroughLeaderChange(f: MirrorFixture, cluster: ClusterName, topic: string, partitions: number, writer: { stop(): Promise<number> }): Promise<void> {
  const all = allPartitions(partitions);
  const stop = new AbortController();
  const copying = f.copy({ topic, partitions: all, signal: stop.signal, options: { unreachableAfterMs: 120_000 } });
  await sleep(2_000);
  const raw = cluster === 'source' ? f.source : f.dest;
  const leader = await raw.leaderOf(topic, 0, true);
  expect(await stopNode(cluster, leader)).toBe(true);
  await expect.poll(async () => raw.leaderOf(topic, 0, true), { timeout: 60_000, interval: 500 }).not.toBe(leader);
  await sleep(3_000);
  await startCluster(cluster, 3, () => undefined);
  await sleep(2_000);
  await finishAndVerify(f, topic, partitions, writer, { stop, copying });
}

/**
 * The end of every drill that copies through a failure: stop the writer, wait until the destination
 * reaches the source's ends, stop the copy, then check that no partition failed, that the copier
 * resynced, that every partition verifies equal and that every record sent is there once (no loss
 * or duplicate on the source, none on the destination). Returns the copy's result.
 */
export async function finishAndVerify(
  f: MirrorFixture,
  topic: string,
  partitions: number,
  writer: { stop(): Promise<number> },
  copy: { readonly stop: AbortController; readonly copying: Promise<CopyResult> },
): Promise<CopyResult> {
  const all = allPartitions(partitions);
  const sent = await writer.stop();
  const sourceEnds = await f.source.listOffsets(topic, all, 'latest');
  await expect.poll(async () => f.dest.listOffsets(topic, all, 'latest'), { timeout: 90_000, interval: 500 }).toEqual(sourceEnds);
  copy.stop.abort();
  const result = await copy.copying;
  expect(result.partitions.map((p) => [p.status, p.error?.code])).toEqual(all.map(() => ['stopped', undefined]));
  expect(result.stats.resyncs).toBeGreaterThan(1);
  const verified = await f.verifyAll(topic, all);
  for (const v of verified) expect(v).toMatchObject({ equal: true });
  expect(verified.reduce((n, v) => n + v.recordsCompared, 0)).toBe(sent);
  return result;
}
