// How kmirror reaches one Kafka cluster, as domain data (no kafkajs): the connection, its
// non-secret description, and parsing of a bootstrap list. A ClusterConnection may hold a password:
// it lives in process memory only. Anything that is persisted, logged or sent to Temporal uses
// describeConnection() (no secrets) instead. kafka/connection.ts turns a connection into a client.
import { KmirrorError } from './errors.ts';

export type SecurityProtocol = 'PLAINTEXT' | 'SASL_PLAINTEXT' | 'SSL' | 'SASL_SSL';
export type SaslMechanism = 'plain' | 'scram-sha-256' | 'scram-sha-512';

export interface ClusterConnection {
  /** host:port pairs */
  readonly bootstrap: readonly string[];
  readonly securityProtocol: SecurityProtocol;
  readonly sasl?: { readonly mechanism: SaslMechanism; readonly username: string; readonly password: string };
  /** PEM certificates to trust for SSL/SASL_SSL instead of the system's CAs. */
  readonly sslCa?: string;
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
    const port = Number(entry.slice(entry.lastIndexOf(':') + 1));
    if (!HOST_PORT.test(entry) || port < 1 || port > 65_535) throw new KmirrorError('INVALID_CONFIG', `${what}: '${entry}' is not host:port (port 1–65535)`);
  }
  return entries;
}
