// One kysely instance over a pg pool. int8 is parsed as bigint (offsets, positions, versions and
// epochs are int8 and bigint end to end); pg's process-wide parsers are left alone.
import { Kysely, PostgresDialect, type LogConfig } from 'kysely';
import pg from 'pg';
import type { Database, Db } from './database.ts';

const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === pg.types.builtins.INT8) return (value: string) => BigInt(value);
    return pg.types.getTypeParser(oid, format as 'text');
  },
};

export interface DatabaseOptions {
  readonly maxConnections?: number;
  /** kysely's query log hook (tests count statements with it). */
  readonly log?: LogConfig;
}

export function createDatabase(url: string, options: DatabaseOptions = {}): Db {
  const pool = new pg.Pool({ connectionString: url, max: options.maxConnections ?? 10, types });
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }), ...(options.log ? { log: options.log } : {}) });
}
