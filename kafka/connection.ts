// How kmirror reaches one Kafka cluster, and the one place that turns that into a kafkajs client.
// A ClusterConnection may hold a password: it lives in process memory only. Anything that is
// persisted, logged or sent to Temporal uses describeConnection() (no secrets) instead.
import { Kafka, logLevel, type KafkaConfig, type SASLOptions } from 'kafkajs';
import { KmirrorError } from '../domain/errors.ts';

// kafkajs 2.2.4's request queue arms a timer with a negative delay; Node ≥ 23 then prints a
// TimeoutNegativeWarning on every client (the timer fires after 1 ms, as it always did). That
// one warning type is dropped here, where kafkajs enters the process; all others pass through.
const emitWarning = process.emitWarning.bind(process);
process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
  const type = typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: string } | undefined)?.type;
  if (type === 'TimeoutNegativeWarning' || (warning instanceof Error && warning.name === 'TimeoutNegativeWarning')) return;
  (emitWarning as (...args: unknown[]) => void)(warning, ...rest);
}) as typeof process.emitWarning;

export type SecurityProtocol = 'PLAINTEXT' | 'SASL_PLAINTEXT' | 'SSL' | 'SASL_SSL';
export type SaslMechanism = 'plain' | 'scram-sha-256' | 'scram-sha-512';

export interface ClusterConnection {
  /** host:port pairs */
  readonly bootstrap: readonly string[];
  readonly securityProtocol: SecurityProtocol;
  readonly sasl?: { readonly mechanism: SaslMechanism; readonly username: string; readonly password: string };
  readonly clientId?: string;
}

/** The non-secret view of a connection: safe for events, logs, workflow payloads and CLI output. */
export interface ConnectionDescription {
  readonly bootstrap: readonly string[];
  readonly securityProtocol: SecurityProtocol;
  readonly saslMechanism?: SaslMechanism;
  readonly saslUsername?: string;
}

export function describeConnection(connection: ClusterConnection): ConnectionDescription {
  return {
    bootstrap: [...connection.bootstrap],
    securityProtocol: connection.securityProtocol,
    ...(connection.sasl ? { saslMechanism: connection.sasl.mechanism, saslUsername: connection.sasl.username } : {}),
  };
}

const HOST_PORT = /^[A-Za-z0-9.\-_]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/;

/** Parse "h1:p1,h2:p2"; throws INVALID_CONFIG naming the bad entry. */
export function parseBootstrap(value: string, what = 'bootstrap servers'): string[] {
  const entries = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (entries.length === 0) throw new KmirrorError('INVALID_CONFIG', `${what}: empty list, expected host:port[,host:port…]`);
  for (const entry of entries) {
    if (!HOST_PORT.test(entry)) throw new KmirrorError('INVALID_CONFIG', `${what}: '${entry}' is not host:port`);
  }
  return entries;
}

export interface KafkaClientOptions {
  /** kafkajs' own retry; keep it short where Temporal retries the activity (STYLE 13). */
  readonly retries?: number;
  readonly connectionTimeoutMs?: number;
  readonly requestTimeoutMs?: number;
}

export function createKafka(connection: ClusterConnection, options: KafkaClientOptions = {}): Kafka {
  const ssl = connection.securityProtocol === 'SSL' || connection.securityProtocol === 'SASL_SSL';
  const usesSasl = connection.securityProtocol === 'SASL_PLAINTEXT' || connection.securityProtocol === 'SASL_SSL';
  if (usesSasl && !connection.sasl) {
    throw new KmirrorError('INVALID_CONFIG', `security protocol ${connection.securityProtocol} needs SASL credentials`);
  }
  const config: KafkaConfig = {
    clientId: connection.clientId ?? 'kmirror',
    brokers: [...connection.bootstrap],
    ssl,
    ...(usesSasl && connection.sasl ? { sasl: saslOptions(connection.sasl) } : {}),
    connectionTimeout: options.connectionTimeoutMs ?? 5_000,
    requestTimeout: options.requestTimeoutMs ?? 30_000,
    retry: { retries: options.retries ?? 3, initialRetryTime: 200, maxRetryTime: 5_000 },
    // kafkajs logs to stdout by default and can include broker config; we surface errors ourselves.
    logLevel: logLevel.NOTHING,
  };
  return new Kafka(config);
}

function saslOptions(sasl: NonNullable<ClusterConnection['sasl']>): SASLOptions {
  return { mechanism: sasl.mechanism, username: sasl.username, password: sasl.password } as SASLOptions;
}
