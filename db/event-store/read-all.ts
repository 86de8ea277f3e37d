// Read the whole log in global position order, for followers (projections, exports) that keep a
// checkpoint. Safe against concurrent writers without snapshot tricks: appends serialise on the
// event_chain head and take their positions under that lock (append-to-stream.ts), so when
// position p is visible every position below p is committed and visible too, and positions have
// no gaps. A follower that stores the last position it handled and asks for `after` it again never
// skips an event and never sees one twice.
import type { Db, Trx } from '../database.ts';
import { toRecordedEvent, type RecordedEvent } from './types.ts';

export interface ReadAllResult {
  readonly events: readonly RecordedEvent[];
  /** The checkpoint to pass as `after` next time (unchanged when nothing was read). */
  readonly last: bigint;
}

export async function readAll(db: Db | Trx, options: { readonly after: bigint; readonly limit: number }): Promise<ReadAllResult> {
  const rows = await db.selectFrom('events').selectAll().where('position', '>', options.after).orderBy('position').limit(options.limit).execute();
  const events = rows.map((row) => toRecordedEvent(row));
  return { events, last: events.at(-1)?.position ?? options.after };
}
