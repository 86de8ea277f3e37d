// Recompute the hash chain over the whole log and report the first broken link: a changed event
// (its hash no longer matches its content), a missing position, a stream version out of sequence,
// or a head row that disagrees with the last event (the tail was cut off). Reads in pages, so memory
// stays flat however long the log is.
import { KmirrorError } from '../../domain/errors.ts';
import type { Db } from '../database.ts';
import { GENESIS_HASH, canonicalJson, eventHash } from './hash.ts';

export type ChainBreak =
  | 'hash_mismatch' // content or order changed: recomputed hash ≠ stored hash
  | 'position_gap' // an event is missing (or an extra one was inserted out of band)
  | 'stream_version_gap' // a stream's versions are not 1, 2, 3, …
  | 'head_mismatch'; // event_chain's last position/hash ≠ the last event

export type ChainReport =
  | { readonly ok: true; readonly events: bigint; readonly headHash: string }
  | {
      readonly ok: false;
      /** Events that verified before the break. */
      readonly events: bigint;
      readonly reason: ChainBreak;
      /** Where the chain breaks: the first position that does not verify. */
      readonly position: bigint;
      readonly streamId?: string;
      readonly streamVersion?: bigint;
      readonly message: string;
    };

export async function verifyChain(db: Db, options: { readonly pageSize?: number } = {}): Promise<ChainReport> {
  const pageSize = options.pageSize ?? 5_000;
  const versions = new Map<string, bigint>();
  let previous = GENESIS_HASH;
  let expected = 1n;
  for (;;) {
    const rows = await db.selectFrom('events').selectAll().where('position', '>=', expected).orderBy('position').limit(pageSize).execute();
    for (const row of rows) {
      const at = { position: row.position, streamId: row.stream_id, streamVersion: row.stream_version };
      const verified = expected - 1n;
      if (row.position !== expected) {
        return { ok: false, events: verified, reason: 'position_gap', ...at, position: expected, message: `position ${expected} is missing (next is ${row.position})` };
      }
      const streamVersion = (versions.get(row.stream_id) ?? 0n) + 1n;
      if (row.stream_version !== streamVersion) {
        return { ok: false, events: verified, reason: 'stream_version_gap', ...at, message: `${row.stream_id} jumps to version ${row.stream_version}, expected ${streamVersion}` };
      }
      const hash = eventHash(previous, {
        position: row.position,
        streamId: row.stream_id,
        streamVersion: row.stream_version,
        type: row.type,
        dataJson: canonicalJson(row.data),
        metadataJson: canonicalJson(row.metadata),
        recordedAt: row.recorded_at,
      });
      if (!hash.equals(row.hash)) {
        return { ok: false, events: verified, reason: 'hash_mismatch', ...at, message: `event ${row.position} (${row.stream_id} v${row.stream_version}) does not match its hash` };
      }
      versions.set(row.stream_id, streamVersion);
      previous = hash;
      expected++;
    }
    if (rows.length < pageSize) break;
  }
  const head = await db.selectFrom('event_chain').select(['last_position', 'last_hash']).where('id', '=', 1).executeTakeFirstOrThrow();
  const events = expected - 1n;
  if (head.last_position !== events || !head.last_hash.equals(previous)) {
    return {
      ok: false,
      events,
      reason: 'head_mismatch',
      position: expected,
      message: `the head says ${head.last_position} events, the log holds ${events} (or the last hash differs): events were removed from the end`,
    };
  }
  return { ok: true, events, headHash: previous.toString('hex') };
}

/** verifyChain, throwing EVENT_CHAIN_BROKEN on the first broken link. */
export async function assertChainIntact(db: Db): Promise<bigint> {
  const report = await verifyChain(db);
  if (!report.ok) {
    throw new KmirrorError('EVENT_CHAIN_BROKEN', `event log broken at position ${report.position}: ${report.message}`, {
      position: report.position.toString(),
      reason: report.reason,
    });
  }
  return report.events;
}
