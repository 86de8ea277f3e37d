// Schema migrations with kysely's Migrator, from db/migrations/ (YYYY_MM_DD_HHMM_<verb>_<thing>.ts,
// each exporting up/down). Names sort by time, which is the order they run in.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FileMigrationProvider, Migrator } from 'kysely/migration';
import { KmirrorError } from '../domain/errors.ts';
import type { Db } from './database.ts';
import { databaseFailure } from './errors.ts';

const migrationFolder = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

export function createMigrator(db: Db): Migrator {
  return new Migrator({
    db,
    provider: new FileMigrationProvider({ fs, path, migrationFolder }),
  });
}

/** Bring the schema to the newest migration; throws naming the migration that failed. */
export async function migrateToLatest(db: Db): Promise<readonly string[]> {
  const { error, results } = await createMigrator(db).migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error !== undefined) {
    // Postgres away (refused, reset, name not resolved) is that, not a bad migration.
    const away = databaseFailure(error);
    if (away !== undefined) throw away;
    throw new KmirrorError('INVALID_CONFIG', `database migration ${failed?.migrationName ?? '(none)'} failed: ${(error as Error).message ?? String(error)}`, {}, { cause: error });
  }
  return (results ?? []).map((r) => r.migrationName);
}
