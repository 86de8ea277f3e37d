// TLS for the local source cluster's SSL and SASL_SSL listeners: a CA of this stack and a broker
// certificate for 127.0.0.1/localhost that it signed, made once with openssl under .stack/tls (the
// private keys mode 0600, never committed). Clients trust the CA file (`kmirror cluster add
// --ssl-ca-file`); the broker reads one PEM file holding its key and certificate chain.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDir, requireCommand, run } from './proc.ts';
import { stackDir } from './topology.ts';

export interface TlsFiles {
  /** The CA certificate (PEM): what clients trust. */
  readonly caFile: string;
  /** The broker's private key (unencrypted PKCS#8) followed by its certificate and the CA's. */
  readonly brokerKeystore: string;
}

export const tlsDir = join(stackDir, 'tls');

/** The stack's CA and broker certificate in `dir`, made the first time (valid for ten years). */
export function ensureStackTls(dir = tlsDir): TlsFiles {
  const files: TlsFiles = { caFile: join(dir, 'ca.pem'), brokerKeystore: join(dir, 'broker-keystore.pem') };
  if (existsSync(files.caFile) && existsSync(files.brokerKeystore)) return files;
  const openssl = requireCommand('openssl', 'install OpenSSL (Debian: openssl); it makes the local stack\'s TLS certificates');
  ensureDir(dir, 0o700);
  const path = (name: string) => join(dir, name);
  const days = '3650';
  run(openssl, ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', path('ca.key'), '-out', path('ca.pem'), '-days', days, '-subj', '/CN=kmirror local stack CA']);
  run(openssl, ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', path('broker.key'), '-out', path('broker.csr'), '-subj', '/CN=localhost']);
  writeFileSync(path('broker.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  run(openssl, ['x509', '-req', '-in', path('broker.csr'), '-CA', path('ca.pem'), '-CAkey', path('ca.key'), '-CAcreateserial', '-out', path('broker.pem'), '-days', days, '-extfile', path('broker.ext')]);
  const keystore = [path('broker.key'), path('broker.pem'), path('ca.pem')].map((f) => readFileSync(f, 'utf8').trimEnd()).join('\n');
  writeFileSync(files.brokerKeystore, `${keystore}\n`, { mode: 0o600 });
  for (const name of ['broker.csr', 'broker.ext', 'ca.srl', 'broker.key', 'broker.pem']) rmSync(path(name), { force: true });
  return files;
}
