// The hash chain. Each event's hash is
//   sha256(UTF-8 of: hex of the previous event's hash ‖ canonical JSON of [position, stream id,
//          stream version, type, data, metadata, recorded at])
// with position and version as decimal strings and recorded at as ISO-8601 (milliseconds). The first
// event's previous hash is 32 zero bytes. (Hex text rather than raw bytes because one-shot string
// hashing is several times cheaper in Node, and an append hashes every event it writes.) Canonical JSON = JSON with object keys sorted and no
// whitespace, so the hash can be recomputed from what jsonb hands back (jsonb reorders keys).
import { hash } from 'node:crypto';
import { KmirrorError } from '../../domain/errors.ts';

export const GENESIS_HASH: Buffer = Buffer.alloc(32);

export function canonicalJson(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new KmirrorError('INVALID_ARGUMENT', `event data holds a non-finite number (${value})`);
      return JSON.stringify(value);
    case 'object': {
      // Plain loops: this runs once per event on every append (50,000 times for a mass failover).
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) {
          const item: unknown = value[i];
          out += (i === 0 ? '' : ',') + (item === undefined ? 'null' : canonicalJson(item));
        }
        return `${out}]`;
      }
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record).sort();
      let out = '{';
      let first = true;
      for (const key of keys) {
        const item = record[key];
        if (item === undefined) continue;
        out += `${first ? '' : ','}${JSON.stringify(key)}:${canonicalJson(item)}`;
        first = false;
      }
      return `${out}}`;
    }
    default:
      // bigint, functions, symbols: events are plain JSON (offsets travel as decimal strings).
      throw new KmirrorError('INVALID_ARGUMENT', `event data holds a ${typeof value}, which is not JSON`);
  }
}

export interface HashedFields {
  readonly position: bigint;
  readonly streamId: string;
  readonly streamVersion: bigint;
  readonly type: string;
  /** canonicalJson(data) */
  readonly dataJson: string;
  /** canonicalJson(metadata) */
  readonly metadataJson: string;
  readonly recordedAt: Date;
}

/** The content hashed for an event: canonicalJson of the array [position, stream id, stream
 *  version, type, data, metadata, recorded at], built without re-serialising data and metadata. */
export function hashedContent(fields: HashedFields): string {
  return (
    `[${JSON.stringify(fields.position.toString())},${JSON.stringify(fields.streamId)},${JSON.stringify(fields.streamVersion.toString())},` +
    `${JSON.stringify(fields.type)},${fields.dataJson},${fields.metadataJson},${JSON.stringify(fields.recordedAt.toISOString())}]`
  );
}

export function eventHash(previous: Buffer, fields: HashedFields): Buffer {
  return hash('sha256', previous.toString('hex') + hashedContent(fields), 'buffer');
}

/** eventHash for a run of events of one stream, one append: the parts every event shares are
 *  serialised once. Returns each event's hash as hex; the last one is the new chain head. */
export function chainHashes(
  previous: Buffer,
  run: { readonly firstPosition: bigint; readonly streamId: string; readonly firstVersion: bigint; readonly metadataJson: string; readonly recordedAt: Date },
  events: readonly { readonly type: string; readonly dataJson: string }[],
): string[] {
  const stream = JSON.stringify(run.streamId);
  const tail = `,${run.metadataJson},${JSON.stringify(run.recordedAt.toISOString())}]`;
  const hashes = new Array<string>(events.length);
  let last = previous.toString('hex');
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    const position = run.firstPosition + BigInt(i);
    const version = run.firstVersion + BigInt(i);
    last = hash('sha256', `${last}["${position}",${stream},"${version}",${JSON.stringify(e.type)},${e.dataJson}${tail}`, 'hex');
    hashes[i] = last;
  }
  return hashes;
}
