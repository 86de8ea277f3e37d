// One kysely instance over a pg pool. int8 is parsed as bigint (offsets, positions, versions and
// epochs are int8 and bigint end to end); pg's process-wide parsers are left alone.
import { Kysely, PostgresDialect, type LogConfig, type PostgresPool } from 'kysely';
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
  /** An idle pooled connection failed (server restart, terminated backend). The pool has already
   *  dropped it and the next query opens a new one; default: a process warning. */
  readonly onIdleError?: (err: Error) => void;
}

export function createDatabase(url: string, options: DatabaseOptions = {}): Db {
  const pool = new pg.Pool({ connectionString: url, max: options.maxConnections ?? 10, types });
  pool.on('error', options.onIdleError ?? ((err) => process.emitWarning(`postgres: idle connection closed: ${err.message}`)));
  // pg's pool.end() resolves before its connections have closed; destroy() must not return while
  // the server still has them (a following DROP DATABASE … WITH (FORCE) would kill them mid-close).
  const open = new Set<pg.Client>();
  pool.on('connect', (client) => {
    open.add(client);
    client.once('end', () => open.delete(client));
  });
  const closing: PostgresPool = {
    options: pool.options,
    connect: () => pool.connect(),
    async end() {
      const ended = [...open].map((client) => new Promise<void>((resolve) => client.once('end', () => resolve())));
      await pool.end();
      await Promise.all(ended);
    },
  };
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: closing }), ...(options.log ? { log: options.log } : {}) });
}
