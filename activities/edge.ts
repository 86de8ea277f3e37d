// The activity boundary (STYLE 6, 8): every error an activity throws leaves it as an
// ApplicationFailure whose type is the error code and whose nonRetryable flag follows the code's
// retry table, with a redacted message and plain-JSON details — never a stack of kafkajs or pg
// internals, never a credential. Cancellation passes through untouched.
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { isKmirrorError, KmirrorError } from '../domain/errors.ts';
import { kafkaFailure } from '../kafka/errors.ts';
import { redactString } from '../log.ts';

/** Anything thrown, as the failure Temporal records. */
export function toApplicationFailure(err: unknown): Error {
  if (err instanceof ApplicationFailure || err instanceof CancelledFailure) return err;
  const known: KmirrorError = isKmirrorError(err)
    ? err
    : (err as { name?: string })?.name?.startsWith('KafkaJS') === true
      ? kafkaFailure(err, 'Kafka request failed')
      : new KmirrorError('INTERNAL', err instanceof Error ? err.message : String(err));
  return ApplicationFailure.create({
    type: known.code,
    message: redactString(known.message),
    nonRetryable: !known.retryable,
    details: [known.details],
  });
}

type ActivityFunction = (input: never) => Promise<unknown>;

/** The same activities, each converting what it throws with toApplicationFailure. */
export function atEdge<T extends Record<string, ActivityFunction>>(activities: T): T {
  const out: Record<string, ActivityFunction> = {};
  for (const [name, fn] of Object.entries(activities)) {
    out[name] = async (input: never) => {
      try {
        return await fn(input);
      } catch (err) {
        throw toApplicationFailure(err);
      }
    };
  }
  return out as T;
}
