// The one place that turns a ClusterConnection (domain/connection.ts) into a kafkajs client.
import { Kafka, logLevel, type KafkaConfig, type SASLOptions } from 'kafkajs';
import type { ClusterConnection } from '../domain/connection.ts';
import { KmirrorError } from '../domain/errors.ts';
import { socketFactory } from './socket.ts';

// kafkajs 2.2.4's request queue arms a timer with a negative delay; Node ≥ 23 then prints a
// TimeoutNegativeWarning on every client (the timer fires after 1 ms, as it always did). That
// one warning type is dropped here, where kafkajs enters the process; all others pass through.
const emitWarning = process.emitWarning.bind(process);
process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
  const type = typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: string } | undefined)?.type;
  if (type === 'TimeoutNegativeWarning' || (warning instanceof Error && warning.name === 'TimeoutNegativeWarning')) return;
  (emitWarning as (...args: unknown[]) => void)(warning, ...rest);
}) as typeof process.emitWarning;

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
    ssl: ssl && connection.sslCa !== undefined ? { ca: [connection.sslCa] } : ssl,
    ...(usesSasl && connection.sasl ? { sasl: saslOptions(connection.sasl) } : {}),
    connectionTimeout: options.connectionTimeoutMs ?? 5_000,
    requestTimeout: options.requestTimeoutMs ?? 30_000,
    socketFactory,
    retry: { retries: options.retries ?? 3, initialRetryTime: 200, maxRetryTime: 5_000 },
    // kafkajs logs to stdout by default and can include broker config; we surface errors ourselves.
    logLevel: logLevel.NOTHING,
  };
  return new Kafka(config);
}

function saslOptions(sasl: NonNullable<ClusterConnection['sasl']>): SASLOptions {
  return { mechanism: sasl.mechanism, username: sasl.username, password: sasl.password } as SASLOptions;
}
