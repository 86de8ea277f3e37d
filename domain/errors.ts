// The one error module. Every failure an operator can see carries a stable `code` (KIP-1279 names
// where the KIP has one) and a human-readable message (KIP review AS14/AS17: wrong-state requests
// get a specific code, never a generic one). The class name is the Temporal failure type.

export const ErrorCodes = [
  // KIP-1279 names
  'READ_ONLY_TOPIC',
  'CLUSTER_MIRROR_ALREADY_EXISTS',
  'UNKNOWN_CLUSTER_MIRROR',
  'TOPIC_ALREADY_IN_CLUSTER_MIRROR',
  'TOPIC_NOT_IN_CLUSTER_MIRROR',
  'MIRROR_TOPIC_ALREADY_PAUSED',
  'MIRROR_TOPIC_NOT_PAUSED',
  'MIRROR_TOPIC_BEING_STOPPED',
  'CLUSTER_MIRROR_NOT_EMPTY',
  'CLUSTER_MIRROR_AUTHORIZATION_FAILED',
  'INVALID_CLUSTER_MIRROR_STATES',
  'MIRROR_TOPIC_NOT_STOPPED',
  'INVALID_CLUSTER_MIRROR_NAME',
  // kmirror's own
  'INVALID_ARGUMENT',
  'INVALID_CONFIG',
  'INVALID_TOPIC_PATTERN',
  'CLUSTER_UNREACHABLE',
  /** A cluster refused kmirror's credentials (SASL authentication): the username, password or
   *  mechanism registered for it is wrong (final: fix it with `kmirror cluster add <name> … --replace`). */
  'CLUSTER_AUTHENTICATION_FAILED',
  /** A cluster's ACLs refuse kmirror's principal an operation it needs (details.kafkaError names
   *  Kafka's refusal, e.g. TOPIC_AUTHORIZATION_FAILED): final until the grant is made
   *  (docs/security.md lists them). kmirror's own grants refuse with CLUSTER_MIRROR_AUTHORIZATION_FAILED. */
  'CLUSTER_AUTHORIZATION_FAILED',
  /** A topic the request names does not exist on the cluster it was looked up on. */
  'UNKNOWN_TOPIC',
  'OFFSET_DIVERGENCE',
  /** A Kafka error answer with no more specific code (details.kafkaError names it): final. */
  'KAFKA_ERROR',
  'UNSUPPORTED_OFFSET_GAP',
  /** A source record batch failed its CRC check or could not be decoded: the partition is
   *  mirrored up to it and halted (final: the source replica needs repair, then `retry`). */
  'CORRUPT_RECORD_BATCH',
  /** The source's retention removed records before they were mirrored, and the mirror's policy is
   *  to fail (onRecordsLost: fail): final until an operator accepts the loss (retry
   *  --accept-records-lost). */
  'RECORDS_LOST',
  /** A promote's lag did not reach 0 in time (the source keeps growing): nothing was stopped. */
  'PROMOTE_TIMEOUT',
  'LEASE_LOST',
  'LEASE_HELD',
  'EXPECTED_VERSION_CONFLICT',
  'EVENT_CHAIN_BROKEN',
  /** A stored event the charts do not allow in the state its stream had reached. */
  'EVENT_HISTORY_INVALID',
  'UNKNOWN_CLUSTER',
  'CLUSTER_ALREADY_EXISTS',
  /** A cluster a mirror (not deleted) reads from or writes to cannot be removed. */
  'CLUSTER_IN_USE',
  'SECRET_KEY_INVALID',
  'STACK_PREREQUISITE_MISSING',
  'TEMPORAL_UNREACHABLE',
  /** Postgres (the event store, leases) did not answer or dropped the connection: retryable. */
  'DATABASE_UNAVAILABLE',
  /** The mirror runner is restarting (continue-as-new) and takes no request for a moment. */
  'RUNNER_BUSY',
  /** An error that is not a KmirrorError: a bug or an unmapped failure; the message says what. */
  'INTERNAL',
] as const;
export type ErrorCode = (typeof ErrorCodes)[number];

/** Codes that retrying may fix: a cluster, Postgres or Temporal came back, a lease expired, a
 *  race was lost. Every other code is final: activities turn it into a non-retryable failure (a
 *  new code is final until it is listed here). INTERNAL — a bug or a failure no mapping knows — is
 *  final too: repeating a bug does not fix it, and a FAILED partition stays retryable by an operator. */
export const RetryableCodes: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'CLUSTER_UNREACHABLE',
  'UNKNOWN_TOPIC',
  'LEASE_LOST',
  'LEASE_HELD',
  'EXPECTED_VERSION_CONFLICT',
  'TEMPORAL_UNREACHABLE',
  'DATABASE_UNAVAILABLE',
  'RUNNER_BUSY',
]);

/** Evidence attached to an error. Plain JSON only: it may cross Temporal and land in the UI, so
 *  never put a credential here. Offsets are decimal strings. */
export type ErrorDetails = Readonly<Record<string, string | number | boolean | null>>;

export class KmirrorError extends Error {
  override readonly name: string = 'KmirrorError';
  /** Whether retrying may help: the code's entry in RetryableCodes, unless the thrower knows
   *  better (an UNKNOWN_TOPIC that a user named is final; one right after a create is not). */
  readonly retryable: boolean;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetails = {},
    options?: { cause?: unknown; retryable?: boolean },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.retryable = options?.retryable ?? RetryableCodes.has(code);
  }

  toJSON(): { code: ErrorCode; message: string; details: ErrorDetails } {
    return { code: this.code, message: this.message, details: this.details };
  }
}

export function isKmirrorError(err: unknown, code?: ErrorCode): err is KmirrorError {
  return err instanceof KmirrorError && (code === undefined || err.code === code);
}

/** An append whose expected stream version is stale: someone else appended first. Re-read and
 *  decide again. Version 0 = the stream does not exist. */
export class ExpectedVersionConflictError extends KmirrorError {
  override readonly name: string = 'ExpectedVersionConflictError';
  constructor(
    readonly streamId: string,
    readonly expected: bigint,
    readonly actual: bigint,
  ) {
    super('EXPECTED_VERSION_CONFLICT', `stream ${streamId}: expected version ${expected}, found ${actual}`, {
      streamId,
      expected: expected.toString(),
      actual: actual.toString(),
    });
  }
}
