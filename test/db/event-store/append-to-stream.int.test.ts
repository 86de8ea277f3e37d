import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { appendToStream } from '../../../db/event-store/append-to-stream.ts';
import { readStream } from '../../../db/event-store/read-stream.ts';
import { verifyChain } from '../../../db/event-store/verify-chain.ts';
import { ExpectedVersionConflictError } from '../../../domain/errors.ts';
import type { MirrorEvent } from '../../../domain/events.ts';
import { migratedDatabase, type TestDatabase } from '../fixture.ts';
import { randomName } from '../../support/stack.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await migratedDatabase('append');
});
afterAll(async () => t?.close());

const metadata = { actor: 'alice', reason: 'test', workflowId: 'wf-1', runId: 'run-1' };
const paused = (partition: number): MirrorEvent => ({ type: 'PartitionPaused', data: { topic: 'orders', partition } });

describe('appendToStream', () => {
  it('appends with versions and global positions, stores type, data, metadata and recorded time', async () => {
    const stream = `mirror:${randomName('m')}`;
    const result = await t.db.transaction().execute((trx) => appendToStream(trx, stream, [paused(0), paused(1)], { expectedVersion: 0n, metadata }));
    expect(result.nextVersion).toBe(2n);
    expect(result.lastPosition - result.firstPosition).toBe(1n);
    const events = await readStream(t.db, stream);
    expect(events.map((e) => [e.type, e.data, e.streamVersion, e.position])).toEqual([
      ['PartitionPaused', { topic: 'orders', partition: 0 }, 1n, result.firstPosition],
      ['PartitionPaused', { topic: 'orders', partition: 1 }, 2n, result.lastPosition],
    ]);
    expect(events[0]!.metadata).toEqual(metadata);
    expect(events[0]!.recordedAt).toEqual(result.recordedAt);
    expect(Math.abs(result.recordedAt.getTime() - Date.now())).toBeLessThan(60_000);
  });

  it('rejects a stale expected version with ExpectedVersionConflictError and writes nothing', async () => {
    const stream = `mirror:${randomName('m')}`;
    await t.db.transaction().execute((trx) => appendToStream(trx, stream, [paused(0)], { expectedVersion: 0n, metadata }));
    const attempt = t.db.transaction().execute((trx) => appendToStream(trx, stream, [paused(1)], { expectedVersion: 0n, metadata }));
    await expect(attempt).rejects.toBeInstanceOf(ExpectedVersionConflictError);
    await expect(attempt).rejects.toMatchObject({ code: 'EXPECTED_VERSION_CONFLICT', expected: 0n, actual: 1n });
    expect(await readStream(t.db, stream)).toHaveLength(1);
  });

  it('lets exactly one of two concurrent appends with the same expected version win', async () => {
    const stream = `mirror:${randomName('m')}`;
    const other = t.connect();
    const results = await Promise.allSettled(
      [t.db, other].map((db, i) => db.transaction().execute((trx) => appendToStream(trx, stream, [paused(i)], { expectedVersion: 0n, metadata }))),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.find((r) => r.status === 'rejected');
    expect(rejected?.reason).toBeInstanceOf(ExpectedVersionConflictError);
    expect(await readStream(t.db, stream)).toHaveLength(1);
  });

  it('refuses metadata without an actor and events that are not plain JSON', async () => {
    const stream = `mirror:${randomName('m')}`;
    await expect(t.db.transaction().execute((trx) => appendToStream(trx, stream, [paused(0)], { expectedVersion: 'any', metadata: { actor: ' ' } }))).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    const bad = { type: 'PartitionPositionRecorded', data: { topic: 't', partition: 0, offset: 5n } } as unknown as MirrorEvent;
    await expect(t.db.transaction().execute((trx) => appendToStream(trx, stream, [bad], { expectedVersion: 'any', metadata }))).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });

  it('refuses UPDATE, DELETE and TRUNCATE on events (trigger)', async () => {
    await t.db.transaction().execute((trx) => appendToStream(trx, `mirror:${randomName('m')}`, [paused(0)], { expectedVersion: 0n, metadata }));
    await expect(sql`update events set type = 'X'`.execute(t.db)).rejects.toThrow(/events is append-only: UPDATE refused/);
    await expect(sql`delete from events`.execute(t.db)).rejects.toThrow(/events is append-only: DELETE refused/);
    await expect(sql`truncate events`.execute(t.db)).rejects.toThrow(/events is append-only: TRUNCATE refused/);
    expect((await verifyChain(t.db)).ok).toBe(true);
  });

  it('appends 20,000 events in one transaction with three statements', async () => {
    const statements: string[] = [];
    const counted = t.connect({ log: (e) => void (e.level === 'query' && statements.push(e.query.sql)) });
    const stream = `mirror:${randomName('m')}`;
    const events = Array.from({ length: 20_000 }, (_, i) => paused(i));
    await counted.transaction().execute((trx) => appendToStream(trx, stream, events, { expectedVersion: 0n, metadata }));
    expect(statements.filter((q) => !/^(begin|commit)$/i.test(q))).toHaveLength(3);
    expect((await readStream(t.db, stream, { fromVersion: 19_999n })).map((e) => e.data)).toEqual([{ topic: 'orders', partition: 19_998 }, { topic: 'orders', partition: 19_999 }]);
  });
});
