// Postgres failures retrying may fix, as DATABASE_UNAVAILABLE: the server refused or dropped the
// connection, is starting up or shutting down, or ran out of resources. Every other database
// error (a constraint, a bad statement) is left to the caller: it is not Postgres being away.
import pg from 'pg';
import { KmirrorError } from '../domain/errors.ts';

/** SQLSTATE classes: 08 connection exception, 53 insufficient resources, 57P operator intervention
 *  (admin shutdown, crash shutdown, cannot connect now). */
const TRANSIENT_SQLSTATE = /^(08|53|57P)/;
/** Socket errors of a connection to the server (pg surfaces them as they are). */
const SOCKET_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** What pg and pg-pool throw, without a code, when a connection ends or cannot be had in time. */
const CONNECTION_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

/** `err` as DATABASE_UNAVAILABLE when it is Postgres (or the way to it) being away; else undefined. */
export function databaseFailure(err: unknown): KmirrorError | undefined {
  if (!(err instanceof Error)) return undefined;
  const code = (err as { code?: unknown }).code;
  const transient =
    (err instanceof pg.DatabaseError && typeof code === 'string' && TRANSIENT_SQLSTATE.test(code)) ||
    (typeof code === 'string' && SOCKET_ERRORS.has(code)) ||
    CONNECTION_MESSAGES.test(err.message);
  if (!transient) return undefined;
  return new KmirrorError('DATABASE_UNAVAILABLE', `Postgres is not available: ${err.message}`, typeof code === 'string' ? { cause: code } : {}, { cause: err });
}
