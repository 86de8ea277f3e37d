import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { appendToStream } from '../../../db/event-store/append-to-stream.ts';
import { readAll } from '../../../db/event-store/read-all.ts';
import type { RecordedEvent } from '../../../db/event-store/types.ts';
import type { Db } from '../../../db/database.ts';
import type { MirrorEvent } from '../../../domain/events.ts';
import { migratedDatabase, type TestDatabase } from '../fixture.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await migratedDatabase('readall');
});
afterAll(async () => t?.close());

const metadata = { actor: 'test' };
const event = (topic: string, partition: number): MirrorEvent => ({ type: 'PartitionPaused', data: { topic, partition } });

async function drain(db: Db, after: bigint, into: RecordedEvent[]): Promise<bigint> {
  for (;;) {
    const page = await readAll(db, { after, limit: 100 });
    into.push(...page.events);
    if (page.events.length === 0) return after;
    after = page.last;
  }
}

async function waitUntilBlockedOnLock(db: Db, applicationName: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int4 as n from pg_stat_activity where application_name = ${applicationName} and wait_event_type = 'Lock'`.execute(db);
    if (rows[0]!.n > 0) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${applicationName} never blocked`);
}

describe('readAll (a follower of the log)', () => {
  it('never skips an event committed later by a slower concurrent transaction', async () => {
    const follower = t.connect();
    const slow = t.connect();
    const fast = t.connect();
    const seen: RecordedEvent[] = [];
    let checkpoint = await drain(follower, 0n, seen);
    expect(seen).toEqual([]);

    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let slowAppended!: () => void;
    const appended = new Promise<void>((r) => (slowAppended = r));
    const slowWriter = slow.transaction().execute(async (trx) => {
      await appendToStream(trx, 'mirror:slow', [event('slow', 0), event('slow', 1)], { expectedVersion: 'any', metadata });
      slowAppended();
      await held; // commits only when released
    });
    await appended;

    // The fast writer starts after the slow one took its positions and would commit first if it could.
    const fastWriter = fast.transaction().execute(async (trx) => {
      await sql`set local application_name = 'fast-writer'`.execute(trx);
      await appendToStream(trx, 'mirror:fast', [event('fast', 0)], { expectedVersion: 'any', metadata });
    });
    await waitUntilBlockedOnLock(follower, 'fast-writer');

    checkpoint = await drain(follower, checkpoint, seen);
    expect(seen).toEqual([]); // nothing is visible while the slow transaction is open

    release();
    await Promise.all([slowWriter, fastWriter]);
    checkpoint = await drain(follower, checkpoint, seen);
    expect(seen.map((e) => [e.streamId, e.data])).toEqual([
      ['mirror:slow', { topic: 'slow', partition: 0 }],
      ['mirror:slow', { topic: 'slow', partition: 1 }],
      ['mirror:fast', { topic: 'fast', partition: 0 }],
    ]);
    expect(seen.map((e) => e.position)).toEqual([1n, 2n, 3n]);
    expect(checkpoint).toBe(3n);
  });

  it('sees every event exactly once, in position order, while four writers race', async () => {
    const writers = Array.from({ length: 4 }, () => t.connect());
    const follower = t.connect();
    const { rows } = await sql<{ n: bigint }>`select last_position as n from event_chain`.execute(t.db);
    const start = rows[0]!.n;
    const seen: RecordedEvent[] = [];
    let done = false;
    const following = (async () => {
      let checkpoint = start;
      while (!done) {
        checkpoint = await drain(follower, checkpoint, seen);
        await new Promise((r) => setTimeout(r, 1));
      }
      await drain(follower, checkpoint, seen);
    })();
    await Promise.all(
      writers.map(async (db, w) => {
        for (let batch = 0; batch < 25; batch++) {
          const size = 1 + ((batch * 7 + w) % 5);
          await db.transaction().execute(async (trx) => {
            await appendToStream(trx, `mirror:w${w}`, Array.from({ length: size }, (_, i) => event(`w${w}`, batch * 10 + i)), { expectedVersion: 'any', metadata });
            if (batch % 3 === w % 3) await new Promise((r) => setTimeout(r, 5)); // some transactions are slow to commit
          });
        }
      }),
    );
    done = true;
    await following;
    const all = await readAll(t.db, { after: start, limit: 100_000 });
    expect(seen.map((e) => e.position)).toEqual(all.events.map((e) => e.position));
    expect(all.events.map((e) => e.position)).toEqual(all.events.map((_, i) => start + BigInt(i) + 1n));
  });
});
