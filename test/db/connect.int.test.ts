import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { migratedDatabase, type TestDatabase } from './fixture.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await migratedDatabase('connect');
});
afterAll(async () => t?.close());

describe('createDatabase', () => {
  it('reads int8 as bigint, beyond 2^53', async () => {
    const { rows } = await sql<{ n: bigint; small: number }>`select 9223372036854775807::int8 as n, 7::int4 as small`.execute(t.db);
    expect(rows[0]).toEqual({ n: 9_223_372_036_854_775_807n, small: 7 });
  });
});
