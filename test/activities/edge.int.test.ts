// The activity boundary's error mapping (activities/edge.ts) against a real Postgres: a server
// that is away, or that ends the session, is DATABASE_UNAVAILABLE (retryable); a bad statement is
// INTERNAL (final: repeating a bug does not fix it). Temporal's gRPC "unavailable" is
// TEMPORAL_UNREACHABLE. Every failure crosses the boundary with its code and the retry flag the
// code's table gives.
import { WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { sql } from 'kysely';
import pRetry from 'p-retry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asKmirrorError, toApplicationFailure } from '../../activities/edge.ts';
import { createDatabase } from '../../db/connect.ts';
import type { Db } from '../../db/database.ts';
import { closedPort, createTestDatabase } from '../support/stack.ts';

let database: { url: string; drop: () => Promise<void> };
let db: Db;
beforeAll(async () => {
  database = await createTestDatabase('edge');
  db = createDatabase(database.url, { maxConnections: 2, onConnectionError: () => undefined });
});
afterAll(async () => {
  await db?.destroy();
  await database?.drop();
});

const thrown = (p: Promise<unknown>): Promise<unknown> => p.then(() => expect.unreachable('it should have failed'), (err: unknown) => err);

describe('activity errors', () => {
  it('Postgres refusing connections is DATABASE_UNAVAILABLE, retried', async () => {
    const url = new URL(database.url);
    url.port = String(await closedPort());
    const away = createDatabase(url.toString(), { maxConnections: 1 });
    try {
      const err = await thrown(sql`select 1`.execute(away));
      expect(asKmirrorError(err)).toMatchObject({ code: 'DATABASE_UNAVAILABLE', retryable: true, details: { cause: 'ECONNREFUSED' } });
      expect(toApplicationFailure(err)).toMatchObject({ type: 'DATABASE_UNAVAILABLE', nonRetryable: false });
    } finally {
      await away.destroy();
    }
  });

  it('a session the server terminates (SQLSTATE 57P01) is DATABASE_UNAVAILABLE; the next query works', async () => {
    const err = await thrown(sql`select pg_terminate_backend(pg_backend_pid())`.execute(db));
    expect(asKmirrorError(err)).toMatchObject({ code: 'DATABASE_UNAVAILABLE', retryable: true });
    // The dead connection may go back to the pool before its end is noticed, so one more query can
    // fail the same way; retried as Temporal retries an activity (only while retryable), it works.
    // No 'error' event escapes meanwhile (vitest fails the run on one).
    const again = await pRetry(() => sql<{ one: number }>`select 1 as one`.execute(db), {
      retries: 3,
      minTimeout: 50,
      shouldRetry: ({ error }) => asKmirrorError(error).code === 'DATABASE_UNAVAILABLE',
    });
    expect(again.rows).toEqual([{ one: 1 }]);
  });

  it('a bad statement is INTERNAL, not retried', async () => {
    const err = await thrown(sql`select * from no_such_table`.execute(db));
    expect(asKmirrorError(err)).toMatchObject({ code: 'INTERNAL', retryable: false });
    const failure = toApplicationFailure(err) as ApplicationFailure;
    expect(failure).toMatchObject({ type: 'INTERNAL', nonRetryable: true });
    expect(failure.message).toContain('no_such_table');
  });

  it('Temporal unavailable (gRPC 14) is TEMPORAL_UNREACHABLE, retried, as is an Update RPC that timed out; other gRPC answers are not mapped', () => {
    const grpc = (code: number) => Object.assign(new Error(`${code} status`), { code, details: 'status', metadata: {} });
    expect(asKmirrorError(grpc(14))).toMatchObject({ code: 'TEMPORAL_UNREACHABLE', retryable: true });
    expect(asKmirrorError(grpc(5))).toMatchObject({ code: 'INTERNAL', retryable: false });
    // An Update whose RPC timed out before the runner answered: sent again (same update id), it joins.
    expect(asKmirrorError(new WorkflowUpdateRPCTimeoutOrCancelledError('Timeout or cancellation waiting for update'))).toMatchObject({ code: 'TEMPORAL_UNREACHABLE', retryable: true });
  });
});
