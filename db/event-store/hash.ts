// The hash chain. Each event's hash is
//   sha256(previous event's hash ‖ canonical JSON of [position, stream id, stream version, type,
//          data, metadata, recorded at])
// with position and version as decimal strings and recorded at as ISO-8601 (milliseconds). The first
// event's previous hash is 32 zero bytes. Canonical JSON = JSON with object keys sorted and no
// whitespace, so the hash can be recomputed from what jsonb hands back (jsonb reorders keys).
import { createHash } from 'node:crypto';
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
      if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
      const entries = Object.entries(value as Record<string, unknown>)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
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

export function eventHash(previous: Buffer, fields: HashedFields): Buffer {
  // Equal to canonicalJson([...]) of the same values, built without re-serialising data/metadata.
  const content =
    `[${JSON.stringify(fields.position.toString())},${JSON.stringify(fields.streamId)},${JSON.stringify(fields.streamVersion.toString())},` +
    `${JSON.stringify(fields.type)},${fields.dataJson},${fields.metadataJson},${JSON.stringify(fields.recordedAt.toISOString())}]`;
  return createHash('sha256').update(previous).update(content).digest();
}
