// Kafka admin activities: cluster checks, topic resolution, destination topic creation, read-only
// ACLs and the ISR wait. Inputs name mirrors and clusters; the worker finds the connections itself.
import { Context } from '@temporalio/activity';
import type { Admin } from 'kafkajs';
import { sql } from 'kysely';
import { partitionKey } from '../kafka/copier.ts';
import { kafkaFailure } from '../kafka/errors.ts';
import { syncGroupOffsets, type CommitGuard, type GroupSyncSummary } from '../kafka/group-offsets.ts';
import { archiveDivergentTails, countDivergentTails, openTransactionsIn, planFailback, type PreparedFailback } from '../kafka/failback.ts';
import type { RawCluster } from '../kafka/protocol.ts';
import { KmirrorError } from '../domain/errors.ts';
import { heartbeating, untilAborted } from './edge.ts';
import { deleteTopicsAndWait } from '../kafka/admin.ts';
import { executeMirrorCommand } from '../db/mirror-store.ts';
import type { EventMetadata } from '../db/event-store/types.ts';
import { endOffsets } from '../kafka/offsets.ts';
import {
  createMirrorTopics,
  inspectDestination,
  isrStatus,
  resolveTopics,
  sourceTopicSpecs,
  syncTopicConfigs,
  type ConfigSyncResult,
  type CreatedTopic,
  type TopicSelection,
} from '../kafka/mirror-topics.ts';
import { aclsUnmanageable, applyReadOnly, describeTopicAcls, liftReadOnly, principalFilter, syncTopicAcls, type AclSyncResult, type ReadOnlyResult, type TopicAclBinding } from '../kafka/topic-acls.ts';
import type { Db, Trx } from '../db/database.ts';
import { mirrorStreamId, type FailbackTopicPrepared, type TopicAcl } from '../domain/events.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { ClusterClients } from './cluster-clients.ts';

export interface ClusterCheck {
  readonly cluster: string;
  readonly clusterId: string;
  readonly brokers: number;
}

export interface ResolvedTopic {
  readonly topic: string;
  readonly partitionCount: number;
}

export interface ResolveTopicsInput extends TopicSelection {
  readonly mirror: string;
  /** Topics already in the mirror: patterns skip them (named topics are kept: the domain decides). */
  readonly known?: readonly string[];
}

export interface PrepareTopicsResult {
  readonly topics: readonly CreatedTopic[];
  readonly readOnly: ReadOnlyResult;
}

/** Heartbeat details of the ISR wait: what the Temporal UI shows while it holds. */
export interface IsrWaitDetails {
  readonly waiting: number;
  readonly partitions: readonly string[];
  readonly missingBrokers: readonly number[];
  readonly minInsyncReplicas: Readonly<Record<string, number>>;
}

/** End offsets on both clusters (decimal strings; null where a cluster did not answer). */
export interface PartitionOffsets {
  readonly source: { readonly reachable: boolean; readonly error?: { readonly code: string; readonly message: string } };
  readonly destination: { readonly reachable: boolean; readonly error?: { readonly code: string; readonly message: string } };
  readonly partitions: readonly {
    readonly topic: string;
    readonly partition: number;
    /** The source's last stable offset: what read_committed consumers, and so the mirror, can have. */
    readonly sourceEnd: string | null;
    /** The source's high watermark: above sourceEnd while a transaction is open there (or its end
     *  is decided and its marker not yet written). */
    readonly sourceHighWatermark: string | null;
    readonly destinationEnd: string | null;
  }[];
}

/** What the runner's periodic look at the source found. */
export interface Discovery {
  /** Source topics that match the mirror's include patterns (and no exclude pattern) and are not in it. */
  readonly newTopics: readonly string[];
  /** Mirror topics that have more partitions on the source than in the mirror. */
  readonly grown: readonly ResolvedTopic[];
}

async function deleteOnOldPrimary(admin: Admin, topic: string): Promise<void> {
  await deleteTopicsAndWait(admin, [topic]).catch((err: unknown) => Promise.reject(kafkaFailure(err, `delete ${topic} on the old primary`)));
}

/** Give a topic `count` partitions when it has fewer. */
async function growTopic(raw: RawCluster, admin: Admin, topic: string, count: number): Promise<void> {
  if ((await raw.partitions(topic)).length >= count) return;
  try {
    await admin.createPartitions({ topicPartitions: [{ topic, count }] });
  } catch (err) {
    throw kafkaFailure(err, `grow ${topic} to ${count} partitions`);
  }
}

export function createKafkaAdminActivities(deps: { readonly db: Db; readonly clients: ClusterClients; readonly metrics: Metrics }) {
  const { db, clients, metrics } = deps;
  const pair = async (mirror: string) => {
    const m = await clients.mirror(mirror);
    const [source, destination] = await Promise.all([clients.get(m.sourceCluster), clients.get(m.destinationCluster)]);
    return { source, destination };
  };
  /** The destination alone: failover must work when the source does not answer. */
  const destinationOf = async (mirror: string) => clients.get((await clients.mirror(mirror)).destinationCluster);
  /** The mirror's topics (or `topic` alone) still mirrored, sorted: none of their partitions
   *  STOPPING or STOPPED, nor FAILED out of those states (a failed-over topic's configs and ACLs
   *  are its own). */
  const stillMirrored = async (mirror: string, topic?: string): Promise<string[]> => {
    const rows = await db
      .selectFrom('mirror_partitions')
      .select('topic')
      .where('mirror', '=', mirror)
      .$if(topic !== undefined, (q) => q.where('topic', '=', topic!))
      .groupBy('topic')
      .having(sql<boolean>`bool_and(state not in ('STOPPING', 'STOPPED') and coalesce(previous_state, '') not in ('STOPPING', 'STOPPED'))`)
      .execute();
    return rows.map((r) => r.topic).sort();
  };
  /** A config or ACL sync round, counted in the metrics (changed and left-out topics, a failed round). */
  const syncRound = async <R extends { readonly changed: readonly unknown[]; readonly failed: readonly unknown[]; readonly incomplete?: boolean }>(mirror: string, sync: 'configs' | 'acls', round: () => Promise<R>): Promise<R> => {
    try {
      const result = await round();
      metrics.topicSyncRound(mirror, sync, result.changed.length, result.failed.length + (result.incomplete === true ? 1 : 0));
      return result;
    } catch (err) {
      metrics.topicSyncRound(mirror, sync, 0, undefined);
      throw err;
    }
  };
  const groupPartitions = (partitions: readonly { readonly topic: string; readonly partition: number }[]) => {
    const out = new Map<string, number[]>();
    for (const { topic, partition } of partitions) out.set(topic, [...(out.get(topic) ?? []), partition]);
    return out;
  };
  /**
   * Failback decisions recorded since each topic's failover (FailbackTopicPrepared after the
   * topic's last PartitionStopped), as prepareFailback returned them.
   */
  const failbackDecisions = async (mirror: string, topics: readonly string[]): Promise<Map<string, PreparedFailback>> => {
    const events = await db
      .selectFrom('events')
      .select(['type', 'data'])
      .where('stream_id', '=', mirrorStreamId(mirror))
      .where('type', 'in', ['FailbackTopicPrepared', 'PartitionStopped'])
      .where(sql<string>`data->>'topic'`, 'in', [...topics])
      .orderBy('stream_version')
      .execute();
    const out = new Map<string, PreparedFailback>();
    for (const event of events) {
      const topic = String(event.data.topic);
      if (event.type === 'PartitionStopped') {
        out.delete(topic);
        continue;
      }
      const data = event.data as unknown as FailbackTopicPrepared['data'];
      out.set(topic, {
        topic,
        action: data.action,
        archiveTopic: data.archiveTopic,
        partitionCount: data.partitionCount ?? data.partitions.length,
        partitions: data.partitions.map((p) => ({
          topic,
          partition: p.partition,
          lastMirrored: p.lastMirrored,
          oldPrimaryStart: p.oldPrimaryStart ?? '0',
          oldPrimaryEnd: p.oldPrimaryEnd,
          action: data.action,
          reason: p.reason as PreparedFailback['partitions'][number]['reason'],
          divergent: p.divergent,
        })),
      });
    }
    return out;
  };
  return {
    /** Each cluster is registered and answers. */
    async checkClusters(input: { readonly clusters: readonly string[] }): Promise<ClusterCheck[]> {
      return Promise.all(
        input.clusters.map(async (cluster) => {
          const client = await clients.get(cluster);
          try {
            const described = await client.admin.describeCluster();
            return { cluster, clusterId: described.clusterId, brokers: described.brokers.length };
          } catch (err) {
            throw kafkaFailure(err, `cluster ${cluster} does not answer`);
          }
        }),
      );
    },

    /** Names and patterns resolved on the source, with their partition counts. */
    async resolveTopics(input: ResolveTopicsInput): Promise<ResolvedTopic[]> {
      const m = await clients.mirror(input.mirror);
      const source = await clients.get(m.sourceCluster);
      const known = new Set(input.known ?? []);
      const named = new Set(input.topics ?? []);
      const topics = (await resolveTopics(source.admin, input)).filter((t) => named.has(t) || !known.has(t));
      const specs = await sourceTopicSpecs(source.admin, topics);
      return specs.map((s) => ({ topic: s.topic, partitionCount: s.partitionCount }));
    },

    /** End offsets of partitions on both clusters: the source's LSO and high watermark, the
     *  destination's end. A cluster that does not answer is reported (failover must work with the
     *  source gone). */
    async partitionOffsets(input: { readonly mirror: string; readonly partitions: readonly { readonly topic: string; readonly partition: number }[] }): Promise<PartitionOffsets> {
      const m = await clients.mirror(input.mirror);
      const topics = [...groupPartitions(input.partitions)].map(([topic, partitions]) => ({ topic, partitions }));
      const none = new Map<string, bigint>();
      const read = async (cluster: string, which: 'source' | 'destination') => {
        try {
          const raw = (await clients.get(cluster)).raw;
          // On the source both its LSO and (read as a destination's end) its high watermark.
          const [ends, highWatermarks] = await Promise.all([endOffsets(raw, topics, which), which === 'source' ? endOffsets(raw, topics, 'destination') : none]);
          return { reach: { reachable: true }, ends, highWatermarks };
        } catch (err) {
          const e = kafkaFailure(err, `cluster ${cluster}`);
          return { reach: { reachable: false, error: { code: e.code, message: e.message } }, ends: none, highWatermarks: none };
        }
      };
      const [source, destination] = await Promise.all([read(m.sourceCluster, 'source'), read(m.destinationCluster, 'destination')]);
      return {
        source: source.reach,
        destination: destination.reach,
        partitions: input.partitions.map(({ topic, partition }) => ({
          topic,
          partition,
          sourceEnd: source.ends.get(partitionKey(topic, partition))?.toString() ?? null,
          sourceHighWatermark: source.highWatermarks.get(partitionKey(topic, partition))?.toString() ?? null,
          destinationEnd: destination.ends.get(partitionKey(topic, partition))?.toString() ?? null,
        })),
      };
    },

    /**
     * One round of consumer-group offset sync (kafka/group-offsets.ts) over the mirror's partitions
     * in `states` (default MIRRORING; a stop's final sync passes STOPPING), for the groups its
     * filter selects. Returns the counts.
     */
    async syncGroupOffsets(input: { readonly mirror: string; readonly topics?: readonly string[]; readonly states?: readonly string[] }): Promise<GroupSyncSummary> {
      try {
        const { source, destination } = await pair(input.mirror);
        const row = await db.selectFrom('mirrors').select(['group_include', 'group_exclude']).where('name', '=', input.mirror).executeTakeFirstOrThrow();
        const states = [...(input.states ?? ['MIRRORING'])];
        const inStates = (executor: Db | Trx) => executor.selectFrom('mirror_partitions').select(['topic', 'partition']).where('mirror', '=', input.mirror).where('state', 'in', states);
        const partitions = await (input.topics === undefined ? inStates(db) : inStates(db).where('topic', 'in', [...input.topics])).execute();
        // Commits run under the mirror's sync lock and only for partitions still in `states`: a
        // periodic sync planned before a stop cannot land after the stop's final sync (which would
        // move the groups back), nor touch a partition once it is STOPPING.
        const underLock: CommitGuard = (commit) =>
          db.transaction().execute(async (trx) => {
            await sql`select pg_advisory_xact_lock(hashtext(${`group-sync:${input.mirror}`}))`.execute(trx);
            const now = await inStates(trx).execute();
            const keys = new Set(now.map((r) => partitionKey(r.topic, r.partition)));
            await commit((topic, partition) => keys.has(partitionKey(topic, partition)));
          });
        const { summary } = await syncGroupOffsets(source, destination, partitions, { include: row.group_include, exclude: row.group_exclude }, underLock);
        metrics.groupSyncCompleted(input.mirror, summary);
        return summary;
      } catch (err) {
        metrics.groupSyncFailed(input.mirror);
        throw err;
      }
    },

    /**
     * A failback's Kafka side (kafka/failback.ts): compare the old primary (the mirror's source)
     * with the recorded positions and the new primary; unless a dry run, archive (or discard)
     * divergent tails, record the decision per topic (FailbackTopicPrepared), then delete the
     * topics that must be recreated on the old primary (or grow those that continue to the new
     * primary's partition count). Only topics whose every partition is STOPPED.
     *
     * Safe to repeat at any point: before comparing, the old primary's topics are made read-only
     * for everyone but kmirror and their open transactions waited out, so what is compared and
     * archived cannot change under it; archiving resumes where an earlier attempt stopped; a
     * decision recorded since the topic's failover is reused, never made again (its topic may be
     * gone already). Heartbeats; the workflow gives it the resumable profile (workflows/common.ts).
     */
    async prepareFailback(input: {
      readonly mirror: string;
      readonly reverseMirror: string;
      readonly topics: readonly string[];
      readonly dryRun: boolean;
      readonly divergent: 'archive' | 'discard';
      /** Names the archive topics: `<topic>.kmirror-divergent-<suffix>`. */
      readonly archiveSuffix: string;
      readonly metadata: EventMetadata;
    }): Promise<readonly PreparedFailback[]> {
      let progress: Record<string, unknown> = { step: 'reading the mirror' };
      return heartbeating(async () => {
        const m = await clients.mirror(input.mirror);
        const [oldPrimary, newPrimary] = await Promise.all([clients.get(m.sourceCluster), clients.get(m.destinationCluster)]);
        // The reverse mirror copies these topics already: a failback got past this step, and the
        // reverse mirror's runner owns the old primary's topics now.
        const owned = await db
          .selectFrom('mirror_partitions')
          .select(['topic', 'partition', 'state'])
          .where('mirror', '=', input.reverseMirror)
          .where('topic', 'in', [...input.topics])
          .where('state', '!=', 'STOPPED')
          .executeTakeFirst();
        if (owned !== undefined) {
          throw new KmirrorError(
            'TOPIC_ALREADY_IN_CLUSTER_MIRROR',
            `topic ${owned.topic} is mirrored back by ${input.reverseMirror} already (${owned.topic}-${owned.partition} is ${owned.state}): its failback was prepared before; see kmirror describe ${input.reverseMirror}`,
            { mirror: input.reverseMirror, topic: owned.topic },
          );
        }
        const decided = await failbackDecisions(input.mirror, input.topics);
        const toPlan = input.topics.filter((t) => !decided.has(t));
        const existing = new Set(await oldPrimary.admin.listTopics().catch((err: unknown) => Promise.reject(kafkaFailure(err, 'list the old primary\'s topics'))));
        if (!input.dryRun) {
          const present = toPlan.filter((t) => existing.has(t));
          progress = { step: 'making the old primary\'s topics read-only' };
          await applyReadOnly(oldPrimary.admin, present, oldPrimary.principal);
          // A transaction open there may still commit records past what is compared and archived.
          for (;;) {
            const open = await openTransactionsIn(oldPrimary.raw, present);
            if (open.length === 0) break;
            progress = { step: 'waiting for transactions open on the old primary to end', partitions: open.slice(0, 20) };
            await Context.current().sleep(1_000);
          }
        }
        progress = { step: 'comparing the old primary with the recorded positions' };
        const rows = await db
          .selectFrom('mirror_partitions')
          .select(['topic', 'partition', 'last_mirrored_offset', 'last_mirrored_checksum'])
          .where('mirror', '=', input.mirror)
          .where('topic', 'in', [...input.topics])
          .orderBy('topic')
          .orderBy('partition')
          .execute();
        const recorded = new Map(
          rows.map((r) => [partitionKey(r.topic, r.partition), r.last_mirrored_offset === null ? null : { offset: r.last_mirrored_offset, checksum: r.last_mirrored_checksum ?? '' }]),
        );
        const plans = toPlan.length === 0 ? [] : await planFailback(oldPrimary.raw, newPrimary.raw, toPlan.map((topic) => ({ topic, partitions: rows.filter((r) => r.topic === topic).map((r) => r.partition) })), recorded);
        const out = new Map<string, PreparedFailback>();
        for (const [topic, decision] of decided) {
          if (!input.dryRun && decision.action === 'recreate' && existing.has(topic)) await deleteOnOldPrimary(oldPrimary.admin, topic);
          out.set(topic, decision);
        }
        for (const plan of plans) {
          const tails = plan.partitions.filter((p) => p.divergent !== null);
          const archiveTopic = tails.length > 0 && input.divergent === 'archive' ? `${plan.topic}.kmirror-divergent-${input.archiveSuffix}` : null;
          let records = new Map<number, number>();
          if (tails.length > 0) {
            // Records in each divergent tail as read_committed consumers saw them — archived,
            // discarded or (dry run) that would be; a tail ends at the old primary's LSO (an open
            // transaction's records were never visible; not a dry run: none is open any more).
            const lso = await endOffsets(oldPrimary.raw, [{ topic: plan.topic, partitions: tails.map((t) => t.partition) }], 'source');
            const ranges = tails.map((t) => {
              const to = BigInt(t.divergent!.to);
              const stable = lso.get(partitionKey(plan.topic, t.partition)) ?? to;
              return { partition: t.partition, from: BigInt(t.divergent!.from), to: stable < to ? stable : to };
            });
            progress = { step: archiveTopic !== null && !input.dryRun ? `archiving divergent tails of ${plan.topic} to ${archiveTopic}` : `counting divergent tails of ${plan.topic}` };
            records =
              archiveTopic !== null && !input.dryRun
                ? await archiveDivergentTails(oldPrimary.raw, oldPrimary.admin, plan.topic, plan.partitions.length, ranges, archiveTopic, (archived) => {
                    progress = { ...progress, archived };
                  })
                : await countDivergentTails(oldPrimary.raw, plan.topic, ranges);
          }
          const prepared: PreparedFailback = {
            ...plan,
            archiveTopic,
            partitions: plan.partitions.map((p) => ({ ...p, divergent: p.divergent === null ? null : { ...p.divergent, records: records.get(p.partition) ?? null } })),
          };
          if (!input.dryRun) {
            // The decision first: a retry after the topic is gone reuses it.
            await executeMirrorCommand(
              db,
              {
                type: 'RecordFailback',
                mirror: input.mirror,
                failback: {
                  topic: plan.topic,
                  reverseMirror: input.reverseMirror,
                  action: plan.action,
                  archiveTopic,
                  partitionCount: plan.partitionCount,
                  partitions: prepared.partitions.map((p) => ({ partition: p.partition, lastMirrored: p.lastMirrored, oldPrimaryStart: p.oldPrimaryStart, oldPrimaryEnd: p.oldPrimaryEnd, reason: p.reason, divergent: p.divergent })),
                },
              },
              input.metadata,
            );
            if (plan.action === 'recreate' && existing.has(plan.topic)) await deleteOnOldPrimary(oldPrimary.admin, plan.topic);
            if (plan.action === 'continue') await growTopic(oldPrimary.raw, oldPrimary.admin, plan.topic, plan.partitionCount);
          }
          out.set(plan.topic, prepared);
        }
        progress = { step: 'done' };
        return input.topics.map((t) => out.get(t)!);
      }, () => progress);
    },

    /** Make mirror topics writable: lift the DENY WRITE ACLs (failover, promote). */
    async liftReadOnly(input: { readonly mirror: string; readonly topics: readonly string[] }): Promise<{ readonly lifted: readonly string[]; readonly reason?: string }> {
      const destination = await destinationOf(input.mirror);
      return liftReadOnly(destination.admin, input.topics);
    },

    /** New source topics for the mirror's patterns, and mirror topics whose source grew. */
    async discoverTopics(input: { readonly mirror: string }): Promise<Discovery> {
      const m = await clients.mirror(input.mirror);
      const source = await clients.get(m.sourceCluster);
      const row = await db.selectFrom('mirrors').select(['include', 'exclude']).where('name', '=', input.mirror).executeTakeFirstOrThrow();
      const topics = await db.selectFrom('mirror_topics').select(['topic', 'partition_count']).where('mirror', '=', input.mirror).execute();
      const known = new Map(topics.map((t) => [t.topic, t.partition_count]));
      // A topic failed over (or failing over) is the destination's own now: partitions the old
      // primary grows are not mirrored into it (failback deals with them).
      const stopped = new Set(
        (await db.selectFrom('mirror_partitions').select('topic').distinct().where('mirror', '=', input.mirror).where('state', 'in', ['STOPPING', 'STOPPED']).execute()).map((r) => r.topic),
      );
      const newTopics = row.include.length === 0 ? [] : (await resolveTopics(source.admin, { include: row.include, exclude: row.exclude })).filter((t) => !known.has(t));
      let grown: ResolvedTopic[] = [];
      if (known.size > 0) {
        const existing = new Set(await source.admin.listTopics().catch((err: unknown) => Promise.reject(kafkaFailure(err, 'list source topics'))));
        const specs = await sourceTopicSpecs(source.admin, [...known.keys()].filter((t) => existing.has(t)));
        grown = specs.filter((s) => s.partitionCount > known.get(s.topic)! && !stopped.has(s.topic)).map((s) => ({ topic: s.topic, partitionCount: s.partitionCount }));
      }
      return { newTopics, grown };
    },

    /**
     * Config sync: the mirror topics still mirrored (stillMirrored) that exist on the source get its
     * configs (syncTopicConfigs); each change is recorded (SyncTopicConfigs, with the runner's
     * metadata) right after the destination took it, so none goes unrecorded if the runner
     * continues as new or a later topic fails. Returns what changed and what could not be synced.
     */
    async syncTopicConfigs(input: { readonly mirror: string; readonly metadata: EventMetadata }): Promise<ConfigSyncResult> {
      return syncRound(input.mirror, 'configs', async () => {
        const m = await clients.mirror(input.mirror);
        const [source, destination] = await Promise.all([clients.get(m.sourceCluster), clients.get(m.destinationCluster)]);
        const mirrored = await stillMirrored(input.mirror);
        if (mirrored.length === 0) return { changed: [], failed: [] };
        const existing = new Set(await source.admin.listTopics().catch((err: unknown) => Promise.reject(kafkaFailure(err, 'list source topics'))));
        const topics = mirrored.filter((t) => existing.has(t));
        return syncTopicConfigs(source.admin, destination, topics, async (change) => {
          await executeMirrorCommand(db, { type: 'SyncTopicConfigs', mirror: input.mirror, ...change }, { ...input.metadata, reason: `config sync: source topic ${change.topic}'s configs changed` });
        });
      });
    },

    /**
     * The runner's ACL round over the topics still mirrored (syncTopicAcls): with an ACL filter,
     * the source's topic ACLs for its principals are granted on the destination and the grants it
     * made that the source no longer has are revoked; always, every principal an ALLOW lets write a
     * mirror topic is denied (the read-only guard kept current). Each topic's change is recorded
     * (SyncTopicAcls) right after it was applied. Heartbeats; cancelled (a stop waits for it) it
     * ends at once while reading the source, else between topics. With ACL sync off, or a source
     * whose ACLs cannot be read (no authorizer, no DescribeAcls grant, not answering:
     * `sourceSkipped`), synced ACLs stay as they are and the guard is still kept.
     */
    async syncTopicAcls(input: { readonly mirror: string; readonly metadata: EventMetadata }): Promise<AclSyncResult> {
      let done = 0;
      let total = 0;
      // Heartbeats from the start: the setup reads Postgres and both clusters.
      return heartbeating(
        (signal) =>
          syncRound(input.mirror, 'acls', async () => {
            const row = await db.selectFrom('mirrors').select(['acl_include', 'acl_exclude']).where('name', '=', input.mirror).executeTakeFirst();
            if (row === undefined) return { changed: [], failed: [] };
            const filter = { include: row.acl_include, exclude: row.acl_exclude };
            const m = await clients.mirror(input.mirror);
            const destination = await clients.get(m.destinationCluster);
            const topics = await stillMirrored(input.mirror);
            total = topics.length;
            const grantedBefore = new Map<string, TopicAcl[]>();
            for (const r of await db.selectFrom('mirror_synced_acls').selectAll().where('mirror', '=', input.mirror).execute()) {
              const acl = { principal: r.principal, host: r.host, operation: r.operation as TopicAcl['operation'], permission: r.permission as TopicAcl['permission'] };
              grantedBefore.set(r.topic, [...(grantedBefore.get(r.topic) ?? []), acl]);
            }
            // The source's topic ACLs for the filtered principals; none wanted with sync off (what
            // an earlier sync granted is then revoked); undefined when they could not be read.
            let source: TopicAclBinding[] | undefined = [];
            let sourceSkipped: string | undefined;
            if (filter.include.length > 0) {
              const wanted = principalFilter(filter);
              try {
                const read = async () => describeTopicAcls((await clients.get(m.sourceCluster)).admin);
                source = (await untilAborted(read(), signal)).filter((b) => wanted(b.principal));
              } catch (err) {
                source = undefined;
                try {
                  sourceSkipped = signal.aborted ? 'cancelled' : aclsUnmanageable(err, 'source');
                } catch (failure) {
                  sourceSkipped = (failure as Error).message;
                }
              }
            }
            const skippedSource = sourceSkipped === undefined ? {} : { sourceSkipped };
            if (signal.aborted) return { changed: [], failed: [], incomplete: true, ...skippedSource };
            const result = await syncTopicAcls(destination.admin, topics, source, filter, destination.principal, grantedBefore, {
              signal,
              stillMirrored: async (topic) => (await stillMirrored(input.mirror, topic)).length > 0,
              record: async (change) => {
                const what = [change.granted.length > 0 || change.revoked.length > 0 ? "the source topic's ACLs changed" : '', change.denied.length > 0 ? `${change.denied.join(', ')} may write it` : ''].filter((w) => w !== '').join('; ');
                await executeMirrorCommand(db, { type: 'SyncTopicAcls', mirror: input.mirror, ...change }, { ...input.metadata, reason: `ACL sync of ${change.topic}: ${what}` });
                metrics.topicAclsChanged(input.mirror, { granted: change.granted.length, revoked: change.revoked.length, denied: change.denied.length });
                done += 1;
              },
            });
            // A round that did not do what the mirror asks (sync on, but either cluster's ACLs not
            // managed; or cancelled) is not a success for the metrics.
            const incomplete = signal.aborted || (filter.include.length > 0 && (sourceSkipped !== undefined || result.skipped !== undefined));
            return { ...result, ...skippedSource, ...(incomplete ? { incomplete } : {}) };
          }),
        () => ({ topics: total, changed: done }),
      );
    },

    /** Give a destination mirror topic the source's new partition count (before the mirror records it). */
    async growDestinationTopic(input: { readonly mirror: string; readonly topic: ResolvedTopic }): Promise<void> {
      const destination = await destinationOf(input.mirror);
      await growTopic(destination.raw, destination.admin, input.topic.topic, input.topic.partitionCount);
    },

    /** Refuse destination topics that exist but are not an exact prefix of their source (before
     *  anything is appended or created). */
    async inspectDestination(input: { readonly mirror: string; readonly topics: readonly ResolvedTopic[] }): Promise<{ readonly missing: readonly string[] }> {
      // Another mirror writing the same destination topic would interleave two copies in one log.
      const m = await clients.mirror(input.mirror);
      const taken = input.topics.length === 0 ? undefined : await db
        .selectFrom('mirror_partitions')
        .innerJoin('mirrors', 'mirrors.name', 'mirror_partitions.mirror')
        .select(['mirror_partitions.mirror', 'mirror_partitions.topic', 'mirror_partitions.state'])
        .where('mirrors.destination_cluster', '=', m.destinationCluster)
        .where('mirror_partitions.mirror', '!=', input.mirror)
        .where('mirror_partitions.topic', 'in', input.topics.map((t) => t.topic))
        .where('mirror_partitions.state', '!=', 'STOPPED')
        .executeTakeFirst();
      if (taken !== undefined) {
        throw new KmirrorError(
          'TOPIC_ALREADY_IN_CLUSTER_MIRROR',
          `topic ${taken.topic} is mirrored into ${m.destinationCluster} by mirror ${taken.mirror} already (${taken.state}); one destination topic has one writer — stop it there first (failover or promote), or mirror into another cluster`,
          { mirror: taken.mirror, topic: taken.topic },
        );
      }
      const { source, destination } = await pair(input.mirror);
      const inspected = await inspectDestination(source.raw, destination.raw, destination.admin, input.topics);
      return { missing: inspected.filter((t) => t.missing).map((t) => t.topic) };
    },

    /** Create the missing destination topics from the source's shape and configs, then make every
     *  topic read-only for everyone but kmirror. Idempotent. */
    async prepareMirrorTopics(input: { readonly mirror: string; readonly topics: readonly string[] }): Promise<PrepareTopicsResult> {
      const { source, destination } = await pair(input.mirror);
      const specs = await sourceTopicSpecs(source.admin, input.topics);
      const existing = new Set(await destination.admin.listTopics().catch((err: unknown) => Promise.reject(kafkaFailure(err, 'list destination topics'))));
      const topics = await createMirrorTopics(destination.admin, specs, new Set(input.topics.filter((t) => !existing.has(t))));
      const readOnly = await applyReadOnly(destination.admin, input.topics, destination.principal);
      return { topics, readOnly };
    },

    /**
     * Wait until every replica of every partition is in the ISR on the destination, or an operator
     * overrides the wait (IsrWaitOverridden for one of these topics, recorded after the wait was
     * scheduled). Heartbeats name the partitions still waiting and the brokers missing (the
     * Temporal UI shows them); observes cancellation.
     */
    async waitForIsr(input: { readonly mirror: string; readonly topics: readonly string[] }): Promise<{ readonly waitedMs: number; readonly overridden: { readonly actor: string; readonly reason: string | null } | null }> {
      const ctx = Context.current();
      const started = Date.now();
      const since = new Date(ctx.info.scheduledTimestampMs);
      const destination = await destinationOf(input.mirror);
      const wanted = new Set(input.topics);
      for (;;) {
        const status = await isrStatus(destination.raw, destination.admin, input.topics);
        const details: IsrWaitDetails = {
          waiting: status.waiting.length,
          partitions: status.waiting.slice(0, 50),
          missingBrokers: status.missingBrokers,
          minInsyncReplicas: status.minInsyncReplicas,
        };
        ctx.heartbeat(details);
        if (status.waiting.length === 0) return { waitedMs: Date.now() - started, overridden: null };
        const overrides = await db
          .selectFrom('events')
          .select(['data', 'metadata'])
          .where('stream_id', '=', mirrorStreamId(input.mirror))
          .where('type', '=', 'IsrWaitOverridden')
          .where('recorded_at', '>=', since)
          .execute();
        // Released when the overrides since the wait began name every topic still waiting (an
        // override of one topic does not release another's wait).
        const covered = new Set(overrides.flatMap((o) => o.data.topics as string[]));
        const waitingTopics = new Set(status.waiting.map((tp) => tp.slice(0, tp.lastIndexOf('-'))));
        const override = [...waitingTopics].every((t) => covered.has(t)) ? overrides.find((o) => (o.data.topics as string[]).some((t) => wanted.has(t))) : undefined;
        if (override !== undefined) {
          ctx.log.warn('ISR wait overridden by an operator', { mirror: input.mirror, waiting: status.waiting.length, missingBrokers: status.missingBrokers });
          return { waitedMs: Date.now() - started, overridden: { actor: String(override.metadata.actor), reason: typeof override.metadata.reason === 'string' ? override.metadata.reason : null } };
        }
        // Rejects with CancelledFailure when the workflow cancels the wait.
        await ctx.sleep(1_000);
      }
    },
  };
}
