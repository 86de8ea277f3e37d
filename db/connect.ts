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
  /** A pooled connection failed (server restart, terminated backend), idle or in use (its query has
   *  failed then). The pool drops it and the next query opens a new one; default: a process warning. */
  readonly onConnectionError?: (err: Error) => void;
}

export function createDatabase(url: string, options: DatabaseOptions = {}): Db {
  const pool = new pg.Pool({ connectionString: url, max: options.maxConnections ?? 10, types });
  const onConnectionError = options.onConnectionError ?? ((err: Error) => process.emitWarning(`postgres: connection closed: ${err.message}`));
  pool.on('error', onConnectionError);
  // pg's pool.end() resolves before its connections have closed; destroy() must not return while
  // the server still has them (a following DROP DATABASE … WITH (FORCE) would kill them mid-close).
  const open = new Set<pg.Client>();
  pool.on('connect', (client) => {
    open.add(client);
    // A checked-out client whose connection ends (terminated backend, server restart) emits 'error'
    // after its query has already failed; the pool listens only to idle clients, and an 'error'
    // nobody listens to would end the process. The query's own failure reports it; the pool drops
    // the dead client on release and the next query opens a new one.
    client.on('error', onConnectionError);
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
