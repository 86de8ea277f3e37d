// Event-store activities: mirror commands through db/mirror-store.ts (the charts decide, the events
// and projections are written in one transaction) and the views the workflows need. Plain JSON in
// and out; who asked travels as event metadata.
import type { Db } from '../db/database.ts';
import type { EventMetadata } from '../db/event-store/types.ts';
import { executeMirrorCommand } from '../db/mirror-store.ts';
import { authorize } from '../db/acl-store.ts';
import { requirementsOf } from '../domain/authorization.ts';
import { loadMirror } from '../db/projections/load-mirror.ts';
import type { MirrorCommand, RecordLastMirrored } from '../domain/commands.ts';
import { KmirrorError } from '../domain/errors.ts';
import { topicsNeeded, type Mirror } from '../domain/mirror.ts';
import { PartitionStates } from '../machines/partition.ts';
import type { PatternFilter } from '../domain/names.ts';

/** Every mirror command but RecordLastMirrored (which carries bigint offsets and is issued by the
 *  copy activities themselves, in-process). */
export type MirrorCommandInput = Exclude<MirrorCommand, RecordLastMirrored>;

/** A partition's lifecycle facts, as the workflows see them. */
export interface PartitionView {
  readonly state: string;
  readonly retryable: boolean | null;
  readonly retryAttempt: number;
  readonly error: { readonly code: string; readonly message: string } | null;
}

export interface TopicView {
  readonly topic: string;
  /** Index = partition number. */
  readonly partitions: readonly PartitionView[];
}

export interface MirrorView {
  readonly mirror: string;
  /** null: the mirror does not exist (never created, or deleted). */
  readonly state: string | null;
  readonly sourceCluster: string | null;
  readonly destinationCluster: string | null;
  readonly include: readonly string[];
  readonly exclude: readonly string[];
  /** Consumer groups whose offsets are synced; principals whose topic ACLs are (absent in results
   *  recorded before 2026-12-08). */
  readonly groups?: PatternFilter;
  readonly acls?: PatternFilter;
  readonly topics: readonly TopicView[];
}

export interface ApplyCommandInput {
  readonly command: MirrorCommandInput;
  readonly metadata: EventMetadata;
  /** Decide only: refuse as the real command would, append nothing. */
  readonly dryRun?: boolean;
}

export interface ApplyCommandResult {
  /** Events appended (dry run: that would be appended). */
  readonly events: number;
  /** The states of the topics the command touched, after it. */
  readonly topics: readonly TopicView[];
}

function topicViews(mirror: Mirror, only?: ReadonlySet<string>): TopicView[] {
  const out: TopicView[] = [];
  for (const [topic, { partitions }] of mirror.topics) {
    if (only !== undefined && !only.has(topic)) continue;
    out.push({
      topic,
      partitions: partitions.map((p) => ({ state: p.state, retryable: p.context.retryable, retryAttempt: p.context.retryAttempt, error: p.context.error })),
    });
  }
  return out;
}

function mirrorView(mirror: Mirror): MirrorView {
  const exists = mirror.state !== null && mirror.state !== 'deleted';
  return {
    mirror: mirror.name,
    state: exists ? mirror.state : null,
    sourceCluster: mirror.sourceCluster,
    destinationCluster: mirror.destinationCluster,
    include: [...mirror.include],
    exclude: [...mirror.exclude],
    groups: { include: [...mirror.groupInclude], exclude: [...mirror.groupExclude] },
    acls: { include: [...mirror.aclInclude], exclude: [...mirror.aclExclude] },
    topics: exists ? topicViews(mirror) : [],
  };
}

/** What an operation workflow asks to be authorized for (its first step). */
export interface AuthorizeInput {
  readonly workflow: string;
  readonly mirror: string;
  /** The topics it names; with `include` patterns it needs READ on every topic (`*`); with
   *  neither, it touches every topic of the mirror. Absent for createMirror and deleteMirror. */
  readonly topics?: readonly string[];
  readonly include?: readonly string[];
  readonly wholeMirror?: boolean;
  /** Other mirrors it changes (a failback starts its reverse mirror): ALTER on each. */
  readonly alsoAlters?: readonly string[];
  /** A dry run: it reads and reports, so DESCRIBE on the mirror stands in for ALTER, and `alsoAlters` is not needed. */
  readonly dryRun?: boolean;
  readonly metadata: EventMetadata;
}

export function createEventStoreActivities(deps: { readonly db: Db; readonly authorization: boolean }) {
  const { db } = deps;
  return {
    /**
     * The first step of every operation workflow (DESIGN §8): with KMIRROR_AUTHORIZATION on, the
     * request's actor must hold the grants the operation needs; a refusal is recorded
     * (OperationRefused) and fails the workflow with CLUSTER_MIRROR_AUTHORIZATION_FAILED before it
     * does anything else. Off: nothing is checked (`checked: false`).
     */
    async authorizeOperation(input: AuthorizeInput): Promise<{ readonly checked: boolean }> {
      if (!deps.authorization) return { checked: false };
      let topics: readonly string[] = [];
      if ((input.include ?? []).length > 0) topics = ['*'];
      else if ((input.topics ?? []).length > 0) topics = input.topics!;
      else if (input.wholeMirror === true) {
        topics = (await db.selectFrom('mirror_topics').select('topic').where('mirror', '=', input.mirror).execute()).map((r) => r.topic);
      }
      const dryRun = input.dryRun === true;
      const required = [
        ...requirementsOf(input.workflow, input.mirror, topics, { dryRun }),
        ...(dryRun ? [] : (input.alsoAlters ?? []).map((mirror) => ({ operation: 'ALTER', resourceType: 'CLUSTER_MIRROR', resource: mirror }) as const)),
      ];
      await authorize(db, { principal: input.metadata.actor, workflow: input.workflow, mirror: input.mirror, required }, input.metadata);
      return { checked: true };
    },


    async applyMirrorCommand(input: ApplyCommandInput): Promise<ApplyCommandResult> {
      const result = await executeMirrorCommand(db, input.command, input.metadata, { dryRun: input.dryRun === true });
      const needed = topicsNeeded(input.command);
      if (input.dryRun === true || (needed !== 'all' && needed.length === 0)) return { events: result.events, topics: [] };
      const after = await loadMirror(db, input.command.mirror, needed);
      return { events: result.events, topics: topicViews(after.state, needed === 'all' ? undefined : new Set(needed)) };
    },

    /** The mirror with every partition's state: what the runner loads when it starts. */
    async loadMirrorView(input: { readonly mirror: string; readonly topics?: readonly string[] }): Promise<MirrorView> {
      const loaded = await loadMirror(db, input.mirror, input.topics ?? 'all');
      return mirrorView(loaded.state);
    },

    /** Each topic's partition states, one letter per partition (A = PartitionStates[0], …), and
     *  their last mirrored offsets (null: none recorded): compact, for operations that poll their progress. */
    async partitionStates(input: {
      readonly mirror: string;
      readonly topics: readonly string[];
    }): Promise<{ readonly topic: string; readonly states: string; readonly lastMirrored: readonly (string | null)[] }[]> {
      const loaded = await loadMirror(db, input.mirror, input.topics);
      return [...loaded.state.topics].map(([topic, { partitions }]) => ({
        topic,
        states: partitions.map((p) => String.fromCharCode(65 + PartitionStates.indexOf(p.state))).join(''),
        lastMirrored: partitions.map((p) => p.lastMirrored?.offset.toString() ?? null),
      }));
    },

    /** The mirror with every partition's state (of `topics`, when given); UNKNOWN_CLUSTER_MIRROR unless it exists. */
    async requireMirror(input: { readonly mirror: string; readonly topics?: readonly string[] }): Promise<MirrorView> {
      const loaded = await loadMirror(db, input.mirror, input.topics ?? 'all');
      const view = mirrorView(loaded.state);
      if (view.state === null) throw new KmirrorError('UNKNOWN_CLUSTER_MIRROR', `mirror ${input.mirror} does not exist`, { mirror: input.mirror });
      return view;
    },
  };
}
