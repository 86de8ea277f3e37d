// The one Kafka-error → code mapping (DESIGN §5.7). kafkajs errors, broker error answers and our
// own RawCluster errors all become a KmirrorError whose code says what an operator can do; whether
// it may be retried follows from the code (domain/errors.ts RetryableCodes).
import { KmirrorError, isKmirrorError, type ErrorCode } from '../domain/errors.ts';

/** kafkajs' connection-level failures: the cluster (or a broker) did not answer. */
const UNREACHABLE = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSBrokerNotFound',
  'KafkaJSNumberOfRetriesExceeded',
  'KafkaJSMetadataNotLoaded',
  'KafkaJSLockTimeout',
]);

interface KafkaLike {
  name?: string;
  /** Node's error code, which kafkajs' connection errors carry over (e.g. SELF_SIGNED_CERT_IN_CHAIN). */
  code?: string;
  type?: string;
  retriable?: boolean;
  message?: string;
  cause?: unknown;
  originalError?: unknown;
  errors?: unknown;
}

/** The broker's error answer inside a kafkajs error (it nests them: retries, per-partition lists):
 *  its type and whether Kafka calls it retriable. */
function brokerError(err: KafkaLike): { type: string; retriable: boolean } | undefined {
  if (typeof err.type === 'string' && err.type !== '') return { type: err.type, retriable: err.retriable === true };
  // KafkaJSAggregateError (CreateTopics answers per topic): the first final answer decides, else the first.
  if (Array.isArray(err.errors)) {
    const answers = err.errors.flatMap((e) => (e !== null && typeof e === 'object' ? [brokerError(e as KafkaLike)].filter((a) => a !== undefined) : []));
    return answers.find((a) => !a.retriable) ?? answers[0];
  }
  const inner = (err.cause ?? err.originalError) as KafkaLike | undefined;
  return inner && typeof inner === 'object' ? brokerError(inner) : undefined;
}

/** The code of a Kafka failure: the broker's error type when there is one (`type`, e.g.
 *  TOPIC_AUTHORIZATION_FAILED) and whether Kafka calls that retriable; without one, kafkajs' error
 *  class `name` (a connection that failed, retries that ran out) and its own retriable flag. */
export function kafkaCode(type: string | undefined, retriable: boolean, name?: string): ErrorCode {
  if (type !== undefined) {
    if (type === 'SASL_AUTHENTICATION_FAILED') return 'CLUSTER_AUTHENTICATION_FAILED';
    // The cluster's ACLs refuse kmirror's principal (kmirror's own grants refuse with CLUSTER_MIRROR_AUTHORIZATION_FAILED).
    if (type.includes('AUTHORIZATION')) return 'CLUSTER_AUTHORIZATION_FAILED';
    if (type === 'UNKNOWN_TOPIC_OR_PARTITION') return 'UNKNOWN_TOPIC';
    if (type === 'INVALID_TOPIC_EXCEPTION' || type === 'INVALID_REPLICATION_FACTOR' || type === 'INVALID_PARTITIONS' || type === 'INVALID_CONFIG' || type === 'POLICY_VIOLATION') return 'KAFKA_ERROR';
    // The broker's answer decides, not the wrapper (retries that ran out around a final answer).
    return retriable ? 'CLUSTER_UNREACHABLE' : 'KAFKA_ERROR';
  }
  if (name === 'KafkaJSSASLAuthenticationError') return 'CLUSTER_AUTHENTICATION_FAILED';
  if (retriable || (name !== undefined && UNREACHABLE.has(name))) return 'CLUSTER_UNREACHABLE';
  return 'KAFKA_ERROR';
}

/**
 * `err` as a KmirrorError: our own errors pass unchanged; Kafka errors are mapped by the broker's
 * error type. `what` names the operation for the message ("create topics on cluster west").
 */
export function kafkaFailure(err: unknown, what: string): KmirrorError {
  if (isKmirrorError(err)) return err;
  const e = (err ?? {}) as KafkaLike;
  const certificate = untrustedCertificate(e);
  if (certificate !== undefined) {
    return new KmirrorError('CLUSTER_AUTHENTICATION_FAILED', `${what}: the broker's TLS certificate is not trusted (${certificate}: ${e.message ?? String(err)}); trust the CA that signed it (kmirror cluster add --ssl-ca-file)`, { tlsError: certificate }, { cause: err });
  }
  const broker = brokerError(e);
  const type = broker?.type;
  const code = kafkaCode(type, broker?.retriable ?? e.retriable === true, e.name);
  // An aggregate says only "Topic creation errors": name the answers inside it.
  const inner = Array.isArray(e.errors) ? [...new Set(e.errors.map((x) => (x as KafkaLike)?.message).filter((m) => typeof m === 'string'))] : [];
  const message = (e.message ?? String(err)) + (inner.length > 0 ? ` (${inner.join('; ')})` : '');
  return new KmirrorError(code, `${what}: ${message}`, type === undefined ? {} : { kafkaError: type }, { cause: err });
}

/** Node's verdict on a broker certificate it could not trust (unknown CA, expired, wrong host name),
 *  wherever kafkajs nested it; a connection that failed for any other reason is not one. */
function untrustedCertificate(err: KafkaLike, depth = 0): string | undefined {
  if (typeof err.code === 'string' && /CERT|SELF_SIGNED|UNABLE_TO_(VERIFY|GET_ISSUER)/.test(err.code)) return err.code;
  const inner = (err.cause ?? err.originalError) as KafkaLike | undefined;
  return depth < 5 && inner !== null && typeof inner === 'object' ? untrustedCertificate(inner, depth + 1) : undefined;
}
