// Process configuration: parsed once from the environment, validated, frozen, then injected
// (STYLE 14). Every variable is documented in .env.example. A secret can be given inline (NAME) or
// as a path to a file that holds it (NAME_FILE, as the local stack and Docker secrets do).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseEnv } from 'node:util';
import { KmirrorError } from './domain/errors.ts';

/** The checkout this file lives in (config.ts sits at the project root). */
export const projectRoot = dirname(fileURLToPath(import.meta.url));
/** The local stack's state folder (data, logs, pids, generated credentials, its env file): per
 *  checkout, never committed. KMIRROR_STACK_DIR overrides it. Defined here, not in scripts/, so
 *  config is parsed without importing scripts/ (DESIGN 2); scripts/stack/topology.ts re-exports it. */
export const stackDir = process.env.KMIRROR_STACK_DIR ? resolve(process.env.KMIRROR_STACK_DIR) : join(projectRoot, '.stack');

export interface Config {
  readonly databaseUrl: string;
  readonly temporal: { readonly address: string; readonly namespace: string; readonly taskQueue: string };
  /** AES-256-GCM key for stored cluster credentials (32 bytes). */
  readonly secretKey: Buffer;
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error';
  readonly dataPlane: DataPlaneConfig;
  readonly metrics: MetricsConfig;
  /** Check ClusterMirror grants in the first step of every operation workflow (KMIRROR_AUTHORIZATION). */
  readonly authorization: boolean;
}

/** The worker's Prometheus endpoint (metrics/metrics.ts, docs/metrics.md). */
export interface MetricsConfig {
  readonly host: string;
  /** 0: no endpoint. */
  readonly port: number;
  /** Per-partition lag series for partitions that are behind only (default), or for all. */
  readonly partitionSeries: 'lagging' | 'all';
}

export function parseMetrics(env: Env): MetricsConfig {
  const portText = env.KMIRROR_METRICS_PORT;
  const port = portText === undefined || portText === '' ? 9464 : Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new KmirrorError('INVALID_CONFIG', `KMIRROR_METRICS_PORT='${portText}' is not a port (0..65535; 0 turns the endpoint off)`);
  const partitionSeries = env.KMIRROR_METRICS_PARTITION_SERIES ?? 'lagging';
  if (partitionSeries !== 'lagging' && partitionSeries !== 'all') {
    throw new KmirrorError('INVALID_CONFIG', `KMIRROR_METRICS_PARTITION_SERIES='${partitionSeries}' is not one of lagging, all`);
  }
  return Object.freeze({ host: env.KMIRROR_METRICS_HOST ?? '127.0.0.1', port, partitionSeries });
}

/** The copy activities' settings (DESIGN §5). The lease grace must exceed the produce timeout; the
 *  time from a worker's death to another worker copying its partitions is about
 *  runner.copyHeartbeatTimeoutMs, then the rest of leaseTtlMs + leaseGraceMs. */
export interface DataPlaneConfig {
  /** Bytes fetched but not yet acknowledged by the destination, across all copies of a worker. */
  readonly budgetBytes: number;
  readonly produceTimeoutMs: number;
  readonly leaseTtlMs: number;
  readonly leaseGraceMs: number;
  /** How often a copy activity records its partitions' last mirrored positions (one append). */
  readonly positionIntervalMs: number;
  /** The mirror runner's settings (read by the runner through an activity, so they are in its history). */
  readonly runner: RunnerConfig;
}

export interface RunnerConfig {
  /** Partitions one copy activity copies at most. */
  readonly partitionsPerCopier: number;
  /** New copies are spread over at least this many activities when there are enough partitions,
   *  each with connections of its own. Measured on 12 partitions (2 cores; docs/benchmarks.md):
   *  one copier 161 MiB/s, two 270; with a connection pair per copier, 256 KiB source batches two
   *  279, three 309, four 273 MiB/s (16 KiB batches: 258, 288, 291). */
  readonly minCopies: number;
  readonly copyHeartbeatTimeoutMs: number;
  /** How often the runner looks for new source topics matching its filter. */
  readonly discoveryIntervalMs: number;
  /** How often the runner syncs consumer-group offsets (KIP default and issue: at most 10 s). */
  readonly groupSyncIntervalMs: number;
  /** The runner continues as new past this many history events (or when Temporal suggests it). */
  readonly historyLimit: number;
}

/** A positive integer setting, or its default. */
export function parsePositiveInt(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) throw new KmirrorError('INVALID_CONFIG', `${name}='${value}' is not a positive integer`);
  return n;
}

export function parseDataPlane(env: Env): DataPlaneConfig {
  const produceTimeoutMs = parsePositiveInt('KMIRROR_PRODUCE_TIMEOUT_MS', env.KMIRROR_PRODUCE_TIMEOUT_MS, 5_000);
  const leaseGraceMs = parsePositiveInt('KMIRROR_LEASE_GRACE_MS', env.KMIRROR_LEASE_GRACE_MS, produceTimeoutMs + 1_000);
  if (leaseGraceMs <= produceTimeoutMs) {
    throw new KmirrorError('INVALID_CONFIG', `KMIRROR_LEASE_GRACE_MS (${leaseGraceMs}) must exceed KMIRROR_PRODUCE_TIMEOUT_MS (${produceTimeoutMs}): a new owner must not start while a produce request can still land`);
  }
  return Object.freeze({
    budgetBytes: parsePositiveInt('KMIRROR_BUDGET_BYTES', env.KMIRROR_BUDGET_BYTES, 256 * 1024 * 1024),
    produceTimeoutMs,
    leaseTtlMs: parsePositiveInt('KMIRROR_LEASE_TTL_MS', env.KMIRROR_LEASE_TTL_MS, 6_000),
    leaseGraceMs,
    positionIntervalMs: parsePositiveInt('KMIRROR_POSITION_INTERVAL_MS', env.KMIRROR_POSITION_INTERVAL_MS, 5_000),
    runner: Object.freeze({
      partitionsPerCopier: parsePositiveInt('KMIRROR_PARTITIONS_PER_COPIER', env.KMIRROR_PARTITIONS_PER_COPIER, 1_000),
      minCopies: parsePositiveInt('KMIRROR_MIN_COPIES', env.KMIRROR_MIN_COPIES, 3),
      copyHeartbeatTimeoutMs: parsePositiveInt('KMIRROR_COPY_HEARTBEAT_TIMEOUT_MS', env.KMIRROR_COPY_HEARTBEAT_TIMEOUT_MS, 10_000),
      discoveryIntervalMs: parsePositiveInt('KMIRROR_DISCOVERY_INTERVAL_MS', env.KMIRROR_DISCOVERY_INTERVAL_MS, 60_000),
      groupSyncIntervalMs: parsePositiveInt('KMIRROR_GROUP_SYNC_INTERVAL_MS', env.KMIRROR_GROUP_SYNC_INTERVAL_MS, 10_000),
      historyLimit: parsePositiveInt('KMIRROR_RUNNER_HISTORY_LIMIT', env.KMIRROR_RUNNER_HISTORY_LIMIT, 20_000),
    }),
  });
}

export type Env = Readonly<Record<string, string | undefined>>;

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

/** DATABASE_URL, checked to be a postgres:// URL. Never echoed: it may hold a password. */
function databaseUrl(env: Env): string {
  const value = requireVar(env, 'DATABASE_URL');
  let protocol: string | undefined;
  try {
    protocol = new URL(value).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol !== 'postgres:' && protocol !== 'postgresql:') {
    throw new KmirrorError('INVALID_CONFIG', 'DATABASE_URL is not a postgres:// URL (postgres://user[:password]@host:port/database)');
  }
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
    databaseUrl: databaseUrl(env),
    temporal: Object.freeze({
      address: env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
      namespace: env.TEMPORAL_NAMESPACE ?? 'default',
      taskQueue: env.TEMPORAL_TASK_QUEUE ?? 'kmirror',
    }),
    secretKey: parseSecretKey(env),
    logLevel: logLevel as Config['logLevel'],
    dataPlane: parseDataPlane(env),
    metrics: parseMetrics(env),
    authorization: parseBoolean('KMIRROR_AUTHORIZATION', env.KMIRROR_AUTHORIZATION, false),
  });
}

export interface EnvWithFile {
  /** The explicit environment with the file's variables added beneath it. */
  readonly env: Env;
  /** The file that was read, if any. */
  readonly file?: string;
  /** Names taken from the file (names only: values may be secrets). */
  readonly fromFile: readonly string[];
}

/** The KEY=value file under the explicit environment: KMIRROR_ENV_FILE when set (it must exist;
 *  /dev/null reads nothing), else the local stack's env file (`<KMIRROR_STACK_DIR or .stack>/env`,
 *  written by `npm run stack -- up`) when it exists. */
export function envFilePath(env: Env): string | undefined {
  const explicit = env.KMIRROR_ENV_FILE;
  if (explicit !== undefined && explicit !== '') return resolve(explicit);
  const stackEnv = resolve(stackDir, 'env');
  return existsSync(stackEnv) ? stackEnv : undefined;
}

/** Layer the env file (envFilePath) under `env`, which always wins. NAME and NAME_FILE count as one
 *  variable: when either is set explicitly, the file supplies neither, so an explicit password is
 *  never shadowed by the stack's password file (readVar prefers the inline value). Used by the worker
 *  and the CLI before loadConfig(); the result is a new object, process.env is left alone. */
export function withEnvFile(env: Env = process.env): EnvWithFile {
  const file = envFilePath(env);
  if (file === undefined) return { env, fromFile: [] };
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new KmirrorError('INVALID_CONFIG', `env file ${file} (KMIRROR_ENV_FILE) cannot be read: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, {}, { cause: err });
  }
  const isSet = (name: string): boolean => env[name] !== undefined;
  const merged: Record<string, string | undefined> = { ...env };
  const fromFile: string[] = [];
  for (const [name, value] of Object.entries(parseEnv(text))) {
    const base = name.endsWith('_FILE') ? name.slice(0, -'_FILE'.length) : name;
    if (isSet(base) || isSet(`${base}_FILE`) || value === undefined) continue;
    merged[name] = value;
    fromFile.push(name);
  }
  return { env: Object.freeze(merged), file, fromFile };
}
