// Mirror commands against Postgres: decide on the projected state, append to `mirror:<name>`, and
// update the projections, in one transaction (db/command-handler.ts).
import { KmirrorError } from '../domain/errors.ts';
import { mirrorStreamId } from '../domain/events.ts';
import { decide, fold, topicsNeeded } from '../domain/mirror.ts';
import type { MirrorCommand } from '../domain/commands.ts';
import type { Db } from './database.ts';
import { handleCommand, type CommandResult } from './command-handler.ts';
import type { EventMetadata } from './event-store/types.ts';
import { loadMirror, type LoadedMirror } from './projections/load-mirror.ts';
import { collectMirrorChanges, emptyMirrorChanges } from './projections/mirror-rows.ts';
import { writeMirrorChanges } from './projections/write-mirror.ts';

interface LoadedForCommand extends LoadedMirror {
  /** For CreateMirror: the named clusters that are registered. */
  readonly knownClusters: ReadonlySet<string>;
}

/** Decide `command` and, unless dryRun, append its events and update the projections. A dry run
 *  refuses exactly as the real one would and appends nothing (result.events: what it would append). */
export async function executeMirrorCommand(db: Db, command: MirrorCommand, metadata: EventMetadata, options: { readonly dryRun?: boolean } = {}): Promise<CommandResult> {
  return handleCommand(
    db,
    {
      streamId: mirrorStreamId(command.mirror),
      async load(trx): Promise<LoadedForCommand> {
        const loaded = await loadMirror(trx, command.mirror, topicsNeeded(command));
        if (command.type !== 'CreateMirror') return { ...loaded, knownClusters: new Set() };
        // Shared locks: a removal of either cluster (which locks its row for update) waits for this
        // creation to commit, and then sees the mirror using it (cluster-store removeCluster).
        const rows = await trx.selectFrom('clusters').select('name').where('name', 'in', [command.sourceCluster, command.destinationCluster]).forShare().execute();
        return { ...loaded, knownClusters: new Set(rows.map((r) => r.name)) };
      },
      decide(loaded) {
        const events = decide(command, loaded.state);
        if (command.type === 'CreateMirror') {
          for (const cluster of [command.sourceCluster, command.destinationCluster]) {
            if (!loaded.knownClusters.has(cluster)) {
              throw new KmirrorError('UNKNOWN_CLUSTER', `mirror ${command.mirror}: cluster ${cluster} is not registered`, { mirror: command.mirror, cluster });
            }
          }
        }
        return events;
      },
      async project(trx, loaded, appended) {
        const changes = emptyMirrorChanges(loaded.createdAt);
        for (const event of appended.events) collectMirrorChanges(changes, event, event.recordedAt);
        await writeMirrorChanges(trx, fold(loaded.state, appended.events), changes);
      },
    },
    metadata,
    options,
  );
}
