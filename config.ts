// Process configuration: parsed once from the environment, validated, frozen, then injected
// (STYLE 14). Every variable is documented in .env.example. A secret can be given inline (NAME) or
// as a path to a file that holds it (NAME_FILE, as the local stack and Docker secrets do).
import { readFileSync } from 'node:fs';
import { KmirrorError } from './domain/errors.ts';

export interface Config {
  readonly databaseUrl: string;
  readonly temporal: { readonly address: string; readonly namespace: string; readonly taskQueue: string };
  /** AES-256-GCM key for stored cluster credentials (32 bytes). */
  readonly secretKey: Buffer;
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error';
}

type Env = Readonly<Record<string, string | undefined>>;

export function readVar(env: Env, name: string): string | undefined {
  const inline = env[name];
  if (inline !== undefined && inline !== '') return inline;
  const file = env[`${name}_FILE`];
  if (file === undefined || file === '') return undefined;
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new KmirrorError('INVALID_CONFIG', `${name}_FILE=${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, {}, { cause: err });
  }
}

export function requireVar(env: Env, name: string): string {
  const value = readVar(env, name);
  if (value === undefined) throw new KmirrorError('INVALID_CONFIG', `${name} (or ${name}_FILE) is not set`);
  return value;
}

/** Strict boolean parsing: never Boolean(process.env.X). */
export function parseBoolean(name: string, value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback;
  if (/^(true|1|yes)$/i.test(value)) return true;
  if (/^(false|0|no)$/i.test(value)) return false;
  throw new KmirrorError('INVALID_CONFIG', `${name}='${value}' is not a boolean (true/false)`);
}

/** Decode KMIRROR_SECRET_KEY: base64 of exactly 32 bytes. The error names the variable, never the value. */
export function parseSecretKey(env: Env): Buffer {
  const raw = requireVar(env, 'KMIRROR_SECRET_KEY');
  const key = Buffer.from(raw, 'base64');
  if (key.length !== 32) {
    throw new KmirrorError('SECRET_KEY_INVALID', `KMIRROR_SECRET_KEY must be base64 of 32 bytes (got ${key.length} bytes)`);
  }
  return key;
}

export function loadConfig(env: Env = process.env): Config {
  const logLevel = env.KMIRROR_LOG_LEVEL ?? 'info';
  if (!['debug', 'info', 'warn', 'error'].includes(logLevel)) {
    throw new KmirrorError('INVALID_CONFIG', `KMIRROR_LOG_LEVEL='${logLevel}' is not one of debug, info, warn, error`);
  }
  return Object.freeze({
    databaseUrl: requireVar(env, 'DATABASE_URL'),
    temporal: Object.freeze({
      address: env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
      namespace: env.TEMPORAL_NAMESPACE ?? 'default',
      taskQueue: env.TEMPORAL_TASK_QUEUE ?? 'kmirror',
    }),
    secretKey: parseSecretKey(env),
    logLevel: logLevel as Config['logLevel'],
  });
}
