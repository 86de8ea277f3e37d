import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { appendToStream } from '../../../db/event-store/append-to-stream.ts';
import { assertChainIntact, verifyChain, type ChainReport } from '../../../db/event-store/verify-chain.ts';
import type { Trx } from '../../../db/database.ts';
import type { MirrorEvent } from '../../../domain/events.ts';
import { migratedDatabase, type TestDatabase } from '../fixture.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await migratedDatabase('chain');
  const event = (partition: number): MirrorEvent => ({ type: 'PartitionStopped', data: { topic: 'orders', partition } });
  for (const stream of ['mirror:a', 'mirror:b', 'mirror:a', 'mirror:c', 'mirror:b']) {
    await t.db.transaction().execute((trx) => appendToStream(trx, stream, [event(0), event(1), event(2)], { expectedVersion: 'any', metadata: { actor: 'bob' } }));
  }
});
afterAll(async () => t?.close());

/** Tamper inside a transaction that is rolled back, so each case starts from the intact log. */
async function tampered(change: (trx: Trx) => Promise<unknown>): Promise<ChainReport> {
  let report: ChainReport | undefined;
  await t.db
    .transaction()
    .execute(async (trx) => {
      await sql`alter table events disable trigger events_append_only`.execute(trx);
      await change(trx);
      report = await verifyChain(trx, { pageSize: 4 });
      throw new Error('rollback');
    })
    .catch((err: Error) => {
      if (err.message !== 'rollback') throw err;
    });
  return report!;
}

describe('verifyChain', () => {
  it('verifies an intact log across pages', async () => {
    expect(await verifyChain(t.db, { pageSize: 4 })).toMatchObject({ ok: true, events: 15n });
    expect(await assertChainIntact(t.db)).toBe(15n);
  });

  it('reports a changed event at its position', async () => {
    const report = await tampered((trx) => sql`update events set data = jsonb_set(data, '{partition}', '9') where position = 7`.execute(trx));
    expect(report).toMatchObject({ ok: false, reason: 'hash_mismatch', position: 7n, streamId: 'mirror:a', streamVersion: 4n, events: 6n });
  });

  it('reports changed metadata and a changed recorded time', async () => {
    expect(await tampered((trx) => sql`update events set metadata = '{"actor":"mallory"}' where position = 3`.execute(trx))).toMatchObject({ reason: 'hash_mismatch', position: 3n });
    expect(await tampered((trx) => sql`update events set recorded_at = recorded_at - interval '1 day' where position = 12`.execute(trx))).toMatchObject({
      reason: 'hash_mismatch',
      position: 12n,
    });
  });

  it('reports a rewritten event whose own hash was recomputed: the next link breaks', async () => {
    // Copy event 5's content and hash over event 4 (same stream, consistent-looking row): 4 now fails.
    const report = await tampered(async (trx) => {
      await sql`update events e set data = s.data, hash = s.hash from events s where e.position = 4 and s.position = 5`.execute(trx);
    });
    expect(report).toMatchObject({ ok: false, reason: 'hash_mismatch', position: 4n });
  });

  it('reports a deleted event as a gap, and a cut-off tail as a head mismatch', async () => {
    expect(await tampered((trx) => sql`delete from events where position = 9`.execute(trx))).toMatchObject({ ok: false, reason: 'position_gap', position: 9n, events: 8n });
    expect(await tampered((trx) => sql`delete from events where position > 13`.execute(trx))).toMatchObject({ ok: false, reason: 'head_mismatch', events: 13n });
  });

  it('reports a stream version out of sequence', async () => {
    expect(await tampered((trx) => sql`update events set stream_version = 99 where position = 2`.execute(trx))).toMatchObject({
      ok: false,
      reason: 'stream_version_gap',
      position: 2n,
    });
  });

  it('assertChainIntact throws EVENT_CHAIN_BROKEN naming the position', async () => {
    await expect(
      t.db.transaction().execute(async (trx) => {
        await sql`alter table events disable trigger events_append_only`.execute(trx);
        await sql`update events set type = 'PartitionPaused' where position = 11`.execute(trx);
        await assertChainIntact(trx);
      }),
    ).rejects.toMatchObject({ code: 'EVENT_CHAIN_BROKEN', message: expect.stringMatching(/position 11/) });
    expect((await verifyChain(t.db)).ok).toBe(true);
  });
});
