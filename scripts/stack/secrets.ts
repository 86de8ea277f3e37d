// Credentials the stack generates on first `up`: one file per secret under .stack/secrets (0600),
// never printed, never committed. Consumers get the file path (the *_FILE variables).
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDir } from './proc.ts';
import { stackDir } from './topology.ts';

export const secretsDir = join(stackDir, 'secrets');

export const secretFiles = {
  destKmirrorPassword: join(secretsDir, 'dest-kmirror.password'),
  destAppPassword: join(secretsDir, 'dest-app.password'),
  /** The `mirror` user's, on both clusters. */
  mirrorPassword: join(secretsDir, 'mirror.password'),
  /** AES-256-GCM key (base64 of 32 random bytes) that encrypts stored cluster credentials. */
  kmirrorSecretKey: join(secretsDir, 'kmirror-secret-key'),
} as const;

/** Read a secret, generating it first if this stack has none yet. */
export function ensureSecret(file: string, bytes = 24): string {
  ensureDir(secretsDir, 0o700);
  if (!existsSync(file)) writeFileSync(file, randomBytes(bytes).toString('base64url'), { mode: 0o600 });
  return readFileSync(file, 'utf8').trim();
}

export function ensureStackSecrets(): { destKmirrorPassword: string; destAppPassword: string; mirrorPassword: string } {
  ensureSecret(secretFiles.kmirrorSecretKey, 32);
  return {
    destKmirrorPassword: ensureSecret(secretFiles.destKmirrorPassword),
    destAppPassword: ensureSecret(secretFiles.destAppPassword),
    mirrorPassword: ensureSecret(secretFiles.mirrorPassword),
  };
}
