import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { keyId, openConnection, sealConnection } from '../../db/sealed-connection.ts';
import type { ClusterConnection } from '../../domain/connection.ts';

const connection: ClusterConnection = {
  bootstrap: ['b1:9093'],
  securityProtocol: 'SASL_SSL',
  sasl: { mechanism: 'plain', username: 'u', password: 'correct horse battery staple' },
};

describe('sealed connections (AES-256-GCM)', () => {
  it('round-trips, with a fresh IV each time and no plaintext in the ciphertext', () => {
    const key = randomBytes(32);
    const a = sealConnection(key, 'east', connection);
    const b = sealConnection(key, 'east', connection);
    expect(a.iv.equals(b.iv)).toBe(false);
    expect(a.ciphertext.includes(Buffer.from('correct horse'))).toBe(false);
    expect(openConnection(key, 'east', a)).toEqual(connection);
    expect(a.keyId).toBe(keyId(key));
    expect(a.keyId).toMatch(/^[0-9a-f]{16}$/);
    expect(key.toString('hex')).not.toContain(a.keyId);
  });

  it('refuses another key, naming KMIRROR_SECRET_KEY and both key ids', () => {
    const sealed = sealConnection(randomBytes(32), 'east', connection);
    const other = randomBytes(32);
    expect(() => openConnection(other, 'east', sealed)).toThrowError(
      expect.objectContaining({ code: 'SECRET_KEY_INVALID', message: expect.stringContaining(`sealed with key ${sealed.keyId}, but KMIRROR_SECRET_KEY`) }),
    );
  });

  it('refuses a row moved to another cluster, a flipped bit, and a key of the wrong size', () => {
    const key = randomBytes(32);
    const sealed = sealConnection(key, 'east', connection);
    expect(() => openConnection(key, 'west', sealed)).toThrowError(expect.objectContaining({ code: 'SECRET_KEY_INVALID' }));
    const flipped = Buffer.from(sealed.ciphertext);
    flipped[0]! ^= 1;
    expect(() => openConnection(key, 'east', { ...sealed, ciphertext: flipped })).toThrowError(expect.objectContaining({ code: 'SECRET_KEY_INVALID' }));
    expect(() => sealConnection(randomBytes(16), 'east', connection)).toThrowError(expect.objectContaining({ code: 'SECRET_KEY_INVALID' }));
  });
});
