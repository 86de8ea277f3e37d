// Run one command against one stream, emmett's command-handler shape: in one transaction, load the
// state (from projections) with the stream version, decide, append with that version as expected,
// and write the projections. A concurrent writer on the same stream makes the append fail with
// ExpectedVersionConflictError; then the whole thing is decided again on fresh state, a few times.
import { ExpectedVersionConflictError } from '../domain/errors.ts';
import type { DomainEvent } from '../domain/events.ts';
import type { Db, Trx } from './database.ts';
import { appendToStream, type AppendResult } from './event-store/append-to-stream.ts';
import type { EventMetadata } from './event-store/types.ts';

export interface Loaded<S> {
  readonly state: S;
  /** The stream version the state reflects (0n: no stream). */
  readonly version: bigint;
}

export interface CommandSpec<S, L extends Loaded<S>, E extends DomainEvent> {
  readonly streamId: string;
  load(trx: Trx): Promise<L>;
  /** Pure, or reading only what `load` returned. Throws a KmirrorError to refuse. */
  decide(loaded: L): E[];
  /** Write projections (and any state of record) in the appending transaction. */
  project(trx: Trx, loaded: L, appended: AppendResult<E>): Promise<void>;
}

export interface CommandResult {
  readonly streamId: string;
  /** The stream version after the command (unchanged when it decided nothing). */
  readonly version: bigint;
  readonly events: number;
  readonly firstPosition: bigint | null;
  readonly lastPosition: bigint | null;
}

export async function handleCommand<S, L extends Loaded<S>, E extends DomainEvent>(
  db: Db,
  spec: CommandSpec<S, L, E>,
  metadata: EventMetadata,
  options: { readonly maxAttempts?: number; readonly dryRun?: boolean } = {},
): Promise<CommandResult> {
  const maxAttempts = options.maxAttempts ?? 5;
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().execute(async (trx) => {
        const loaded = await spec.load(trx);
        const events = spec.decide(loaded);
        if (events.length === 0 || options.dryRun === true) {
          return { streamId: spec.streamId, version: loaded.version, events: events.length, firstPosition: null, lastPosition: null };
        }
        const appended = await appendToStream(trx, spec.streamId, events, { expectedVersion: loaded.version, metadata });
        await spec.project(trx, loaded, appended);
        return {
          streamId: spec.streamId,
          version: appended.nextVersion,
          events: events.length,
          firstPosition: appended.firstPosition,
          lastPosition: appended.lastPosition,
        };
      });
    } catch (err) {
      if (!(err instanceof ExpectedVersionConflictError) || attempt >= maxAttempts) throw err;
    }
  }
}
