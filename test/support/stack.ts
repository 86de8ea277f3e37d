// Integration tests run against the local stack (`npm run stack -- up`, which test:int/test:e2e
// call first). This reads the endpoints it wrote to .stack/env and gives each test file its own
// resources: random names, its own database (dropped afterwards).
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { DEST_APP_USER, stackDir } from '../../scripts/stack/topology.ts';
import { readVar } from '../../config.ts';
import type { ClusterConnection } from '../../domain/connection.ts';

export type StackEnv = Readonly<Record<string, string>>;

let cached: StackEnv | undefined;

export function stackEnv(): StackEnv {
  if (cached) return cached;
  const file = join(stackDir, 'env');
  if (!existsSync(file)) throw new Error(`${file} missing: run \`npm run stack -- up\` first`);
  const env: Record<string, string> = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) env[line.slice(0, eq)] = line.slice(eq + 1);
  }
  cached = Object.freeze(env);
  return cached;
}

/** Environment for loadConfig(): the stack's endpoints plus the secret key file. No metrics
 *  endpoint unless asked for (KMIRROR_METRICS_PORT): tests run several workers at once. */
export function stackConfigEnv(overrides: Record<string, string> = {}): Record<string, string> {
  return { ...stackEnv(), KMIRROR_METRICS_PORT: '0', ...overrides };
}

export function sourceConnection(): ClusterConnection {
  return { bootstrap: stackEnv().SOURCE_BOOTSTRAP!.split(','), securityProtocol: 'PLAINTEXT' };
}

/** The destination as the kmirror super user. */
export function destConnection(): ClusterConnection {
  const env = stackEnv();
  return {
    bootstrap: env.DEST_BOOTSTRAP!.split(','),
    securityProtocol: 'SASL_PLAINTEXT',
    sasl: { mechanism: 'plain', username: env.DEST_SASL_USERNAME!, password: readVar(env, 'DEST_SASL_PASSWORD')! },
  };
}

/** The destination as the ordinary `app` user (`stack up` grants it an application's topic and group ACLs). */
export function destAppConnection(): ClusterConnection {
  const password = readFileSync(join(stackDir, 'secrets', 'dest-app.password'), 'utf8').trim();
  return { ...destConnection(), sasl: { mechanism: 'plain', username: DEST_APP_USER, password } };
}

/** Test clients retry longer than the product's (which leaves retrying to Temporal): a freshly
 *  started cluster (CI) answers UNKNOWN_TOPIC_OR_PARTITION for a while after a topic is created. */
export const testClientOptions = { retries: 8 } as const;

export function randomName(prefix: string): string {
  return `${prefix}-${randomBytes(5).toString('hex')}`;
}

/** A fresh database for one test file; call drop() in afterAll. */
export async function createTestDatabase(prefix = 'test'): Promise<{ url: string; drop: () => Promise<void> }> {
  const base = new URL(stackEnv().DATABASE_URL!);
  const name = `${prefix}_${randomBytes(5).toString('hex')}`.replaceAll('-', '_');
  const admin = new pg.Client({ connectionString: base.toString() });
  await admin.connect();
  await admin.query(`create database "${name}"`);
  await admin.end();
  const url = new URL(base.toString());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: base.toString() });
      await c.connect();
      await c.query(`drop database if exists "${name}" with (force)`);
      await c.end();
    },
  };
}

/** A loopback port with nothing listening on it. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
