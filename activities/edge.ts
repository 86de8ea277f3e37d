// The activity boundary (STYLE 6, 8): every error an activity throws leaves it as an
// ApplicationFailure whose type is the error code and whose nonRetryable flag follows the code's
// retry table, with a redacted message and plain-JSON details — never a stack of kafkajs or pg
// internals, never a credential. Cancellation passes through untouched.
import { isGrpcServiceError, ServiceError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { databaseFailure } from '../db/errors.ts';
import { isKmirrorError, KmirrorError } from '../domain/errors.ts';
import { kafkaFailure } from '../kafka/errors.ts';
import { redactString } from '../log.ts';

/** gRPC status codes of a Temporal server that is away or overloaded: DEADLINE_EXCEEDED,
 *  RESOURCE_EXHAUSTED, UNAVAILABLE. */
const TEMPORAL_AWAY = new Set([4, 8, 14]);

/** A Temporal client call (the runner's updates) that failed because the server is away, or an
 *  Update whose RPC timed out before the runner answered (the update may still be running: sending
 *  it again joins it, by its id). */
function temporalFailure(err: unknown): KmirrorError | undefined {
  if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return new KmirrorError('TEMPORAL_UNREACHABLE', `Temporal did not answer the update in time: ${err.message}`, {}, { cause: err });
  const grpc = isGrpcServiceError(err) ? err : err instanceof ServiceError && isGrpcServiceError(err.cause) ? err.cause : undefined;
  if (grpc === undefined || !TEMPORAL_AWAY.has(grpc.code)) return undefined;
  return new KmirrorError('TEMPORAL_UNREACHABLE', `Temporal did not answer: ${(err as Error).message}`, { grpcCode: grpc.code }, { cause: err });
}

/** Anything thrown, as a KmirrorError: ours as they are, Kafka's by the one Kafka mapping, Postgres
 *  and Temporal being away as their retryable codes, anything else INTERNAL (final). */
export function asKmirrorError(err: unknown): KmirrorError {
  if (isKmirrorError(err)) return err;
  if ((err as { name?: string })?.name?.startsWith('KafkaJS') === true) return kafkaFailure(err, 'Kafka request failed');
  return databaseFailure(err) ?? temporalFailure(err) ?? new KmirrorError('INTERNAL', err instanceof Error ? err.message : String(err), {}, { cause: err });
}

/** Anything thrown, as the failure Temporal records. */
export function toApplicationFailure(err: unknown): Error {
  if (err instanceof ApplicationFailure || err instanceof CancelledFailure) return err;
  const known = asKmirrorError(err);
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

/** `work`, or a rejection with the signal's reason as soon as `signal` aborts (the work itself goes
 *  on unobserved: use it for reads whose result is no longer wanted). */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  let onAbort = (): void => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  work.catch(() => undefined); // a rejection after the abort is nobody's
  return Promise.race([work, aborted]).finally(() => signal.removeEventListener('abort', onAbort));
}

/** Run `work` in an activity, heartbeating `details()` every third of the heartbeat timeout; the
 *  signal aborts when the activity is cancelled (a heartbeat brings the cancellation). */
export async function heartbeating<T>(work: (signal: AbortSignal) => Promise<T>, details: () => unknown): Promise<T> {
  const ctx = Context.current();
  const stop = new AbortController();
  const onCancel = (): void => stop.abort(ctx.cancellationSignal.reason);
  ctx.cancellationSignal.addEventListener('abort', onCancel, { once: true });
  const every = Math.max(200, Math.floor((ctx.info.heartbeatTimeoutMs ?? 30_000) / 3));
  const timer = setInterval(() => ctx.heartbeat(details()), every);
  ctx.heartbeat(details());
  try {
    return await work(stop.signal);
  } finally {
    clearInterval(timer);
    ctx.cancellationSignal.removeEventListener('abort', onCancel);
  }
}
