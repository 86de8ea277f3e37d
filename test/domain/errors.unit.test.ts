// Which error codes Temporal may retry: a wrong answer either retries a final error forever or
// gives up on a cluster that is only briefly away.
import { describe, expect, it } from 'vitest';
import { ErrorCodes, KmirrorError } from '../../domain/errors.ts';

describe('KmirrorError.retryable', () => {
  it('is true exactly for the transient codes', () => {
    const retryable = ErrorCodes.filter((code) => new KmirrorError(code, 'x').retryable);
    expect(retryable.sort()).toEqual(['CLUSTER_UNREACHABLE', 'DATABASE_UNAVAILABLE', 'EXPECTED_VERSION_CONFLICT', 'LEASE_HELD', 'LEASE_LOST', 'RUNNER_BUSY', 'TEMPORAL_UNREACHABLE', 'UNKNOWN_TOPIC']);
  });

  it('is false for data-safety and wrong-state codes', () => {
    for (const code of ['INTERNAL', 'OFFSET_DIVERGENCE', 'UNSUPPORTED_OFFSET_GAP', 'EVENT_CHAIN_BROKEN', 'MIRROR_TOPIC_NOT_PAUSED', 'INVALID_CLUSTER_MIRROR_NAME', 'SECRET_KEY_INVALID'] as const) {
      expect(new KmirrorError(code, 'x').retryable, code).toBe(false);
    }
  });
});
