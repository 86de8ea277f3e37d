// A migrated database of its own for one test file (STYLE 16): call close() in afterAll.
import type { LogConfig } from 'kysely';
import { createTestDatabase } from '../support/stack.ts';
import { createDatabase } from '../../db/connect.ts';
import { migrateToLatest } from '../../db/migrate.ts';
import type { Db } from '../../db/database.ts';

export interface TestDatabase {
  readonly db: Db;
  readonly url: string;
  /** Another pool on the same database (a second writer, a follower). */
  connect(options?: { log?: LogConfig }): Db;
  close(): Promise<void>;
}

export async function migratedDatabase(prefix: string): Promise<TestDatabase> {
  const { url, drop } = await createTestDatabase(prefix);
  const db = createDatabase(url);
  await migrateToLatest(db);
  const extra: Db[] = [];
  return {
    db,
    url,
    connect(options = {}) {
      const other = createDatabase(url, options);
      extra.push(other);
      return other;
    },
    async close() {
      await Promise.all([db, ...extra].map((d) => d.destroy()));
      await drop();
    },
  };
}
