// Cluster connections at rest: the whole ClusterConnection (credentials included) as JSON, sealed
// with AES-256-GCM under the key from KMIRROR_SECRET_KEY (config.ts parseSecretKey). A fresh 96-bit
// IV per seal; the cluster name is the additional authenticated data, so a sealed row moved to
// another cluster does not open. key_id names the key (HMAC of a fixed label, not the key), so
// opening with a different key fails with an error that says so instead of "bad tag".
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { KmirrorError } from '../domain/errors.ts';
import type { ClusterConnection } from '../domain/connection.ts';

export interface SealedConnection {
  readonly keyId: string;
  readonly iv: Buffer;
  readonly ciphertext: Buffer;
  readonly authTag: Buffer;
}

const KEY_VARIABLE = 'KMIRROR_SECRET_KEY';
const aad = (cluster: string): Buffer => Buffer.from(`kmirror cluster connection v1\0${cluster}`, 'utf8');

function assertKey(key: Buffer): void {
  if (key.length !== 32) throw new KmirrorError('SECRET_KEY_INVALID', `${KEY_VARIABLE} must be 32 bytes (got ${key.length})`);
}

export function keyId(key: Buffer): string {
  assertKey(key);
  return createHmac('sha256', key).update('kmirror key id v1').digest('hex').slice(0, 16);
}

export function sealConnection(key: Buffer, cluster: string, connection: ClusterConnection): SealedConnection {
  assertKey(key);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad(cluster));
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(connection), 'utf8'), cipher.final()]);
  return { keyId: keyId(key), iv, ciphertext, authTag: cipher.getAuthTag() };
}

export function openConnection(key: Buffer, cluster: string, sealed: SealedConnection): ClusterConnection {
  const current = keyId(key);
  if (sealed.keyId !== current) {
    throw new KmirrorError(
      'SECRET_KEY_INVALID',
      `the connection of cluster ${cluster} was sealed with key ${sealed.keyId}, but ${KEY_VARIABLE} (or ${KEY_VARIABLE}_FILE) holds key ${current}: set the key it was stored with`,
      { cluster, storedKeyId: sealed.keyId, keyId: current },
    );
  }
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.iv);
    decipher.setAAD(aad(cluster));
    decipher.setAuthTag(sealed.authTag);
    const plain = Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]).toString('utf8');
    return JSON.parse(plain) as ClusterConnection;
  } catch (err) {
    throw new KmirrorError(
      'SECRET_KEY_INVALID',
      `the connection of cluster ${cluster} does not decrypt with ${KEY_VARIABLE}: the stored row was altered or belongs to another cluster`,
      { cluster },
      { cause: err },
    );
  }
}
