// Preparing destination mirror topics (the start operation's Kafka side, DESIGN §4): resolve names
// and patterns on the source, read each source topic's shape and configs, check a destination
// topic that already exists is an exact prefix of its source, create the missing ones (made
// read-only by topic-acls.ts), and read the ISR that the start waits for.
import kafkajs, { type Admin } from 'kafkajs';
import { KmirrorError } from '../domain/errors.ts';
import { filterMatcher, nameProblem } from '../domain/names.ts';
import { createTopicsAndWait } from './admin.ts';
import { boundaryChecksum, recordsAt, partitionKey } from './copier.ts';
import { kafkaFailure } from './errors.ts';
import type { RawCluster } from './protocol.ts';
import { recordChecksum } from './verify.ts';

// kafkajs is CommonJS; Node's named-export detection misses its enums, so take them from the default export.
const { ConfigResourceTypes } = kafkajs;

/**
 * Source topic configs never copied to the destination (like MirrorMaker's config.properties.exclude,
 * plus the timestamp bounds that would refuse old records):
 *  - replication throttles, unclean leader election and min.insync.replicas are the destination
 *    cluster's own operational choices;
 *  - message.timestamp.type: mirror topics are always CreateTime, so the broker keeps the timestamps
 *    the copier writes (a LogAppendTime source's append times are copied as record timestamps);
 *  - message.timestamp.difference/before/after.max.ms: mirrored records may be old.
 */
export const CONFIG_EXCLUDE: readonly string[] = [
  'follower.replication.throttled.replicas',
  'leader.replication.throttled.replicas',
  'unclean.leader.election.enable',
  'min.insync.replicas',
  'message.timestamp.type',
  'message.timestamp.difference.max.ms',
  'message.timestamp.before.max.ms',
  'message.timestamp.after.max.ms',
];

/** Configs every mirror topic is created with (see CONFIG_EXCLUDE). */
export const MIRROR_TOPIC_CONFIGS: Readonly<Record<string, string>> = { 'message.timestamp.type': 'CreateTime' };

/** Kafka's internal topics and the usual framework-internal ones are never mirrored. */
export function isInternalTopic(topic: string): boolean {
  return topic.startsWith('__') || /[-.]internal$/.test(topic) || topic.endsWith('.replica');
}

export interface TopicSelection {
  readonly topics?: readonly string[];
  readonly include?: readonly string[];
  readonly exclude?: readonly string[];
}

/**
 * The source topics a selection names: every named topic (UNKNOWN_TOPIC lists the ones the source
 * lacks; an internal topic is refused) plus every non-internal topic matching an include pattern and
 * no exclude pattern (exclude patterns narrow the include patterns, not the named topics). Sorted,
 * without duplicates.
 */
export async function resolveTopics(sourceAdmin: Admin, selection: TopicSelection): Promise<string[]> {
  const matches = filterMatcher({ include: selection.include ?? [], exclude: selection.exclude ?? [] }, 'topic');
  for (const topic of selection.topics ?? []) {
    const problem = nameProblem(topic);
    if (problem !== undefined) throw new KmirrorError('INVALID_ARGUMENT', `topic name ${JSON.stringify(topic)} ${problem}`, { topic });
    if (isInternalTopic(topic)) throw new KmirrorError('INVALID_ARGUMENT', `topic ${topic} is an internal topic; internal topics are not mirrored`, { topic });
  }
  let existing: Set<string>;
  try {
    existing = new Set(await sourceAdmin.listTopics());
  } catch (err) {
    throw kafkaFailure(err, 'list the source cluster\'s topics');
  }
  const missing = (selection.topics ?? []).filter((t) => !existing.has(t));
  if (missing.length > 0) {
    throw new KmirrorError(
      'UNKNOWN_TOPIC',
      // Kafka lists only the topics a principal may Describe: a missing grant looks the same.
      `the source cluster has no topic ${missing.slice(0, 10).join(', ')}${missing.length > 10 ? ` (and ${missing.length - 10} more)` : ''}, or kmirror's principal there may not Describe it (docs/security.md)`,
      { topic: missing[0]!, missing: missing.length },
      // The topics were named by the operator: asking again will not create them.
      { retryable: false },
    );
  }
  const out = new Set(selection.topics ?? []);
  for (const topic of existing) {
    if (isInternalTopic(topic) || !matches(topic)) continue;
    out.add(topic);
  }
  return [...out].sort();
}

export interface SourceTopicSpec {
  readonly topic: string;
  readonly partitionCount: number;
  readonly replicationFactor: number;
  /** Topic-level configs set on the source, minus CONFIG_EXCLUDE. */
  readonly configs: Readonly<Record<string, string>>;
}

/** Shape and copied configs of source topics (two requests, whatever the number of topics). */
export async function sourceTopicSpecs(sourceAdmin: Admin, topics: readonly string[]): Promise<SourceTopicSpec[]> {
  if (topics.length === 0) return [];
  try {
    const [{ topics: metadata }, configs] = await Promise.all([
      sourceAdmin.fetchTopicMetadata({ topics: [...topics] }),
      sourceAdmin.describeConfigs({ resources: topics.map((name) => ({ type: ConfigResourceTypes.TOPIC, name })), includeSynonyms: false }),
    ]);
    const configsOf = new Map(configs.resources.map((r) => [r.resourceName, mirroredConfigs(topicConfigs(r.configEntries))]));
    return topics.map((topic) => {
      const partitions = metadata.find((m) => m.name === topic)?.partitions ?? [];
      if (partitions.length === 0) throw new KmirrorError('UNKNOWN_TOPIC', `topic ${topic} does not exist on the source cluster`, { topic });
      return { topic, partitionCount: partitions.length, replicationFactor: partitions[0]!.replicas.length, configs: configsOf.get(topic) ?? {} };
    });
  } catch (err) {
    throw kafkaFailure(err, 'describe source topics');
  }
}

/** DescribeConfigs source 1, DYNAMIC_TOPIC_CONFIG: set on the topic itself (not a broker or
 *  built-in default). */
const TOPIC_CONFIG = 1;

/** The configs set on a topic itself, sensitive ones left out (their values are never read). */
function topicConfigs(entries: readonly { configName: string; configValue: string; configSource?: number; isSensitive: boolean }[]): Record<string, string> {
  return Object.fromEntries(entries.filter((e) => e.configSource === TOPIC_CONFIG && !e.isSensitive).map((e) => [e.configName, e.configValue]));
}

/** What a mirror topic takes from its source topic's own configs: all but CONFIG_EXCLUDE. */
function mirroredConfigs(own: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(own).filter(([name]) => !CONFIG_EXCLUDE.includes(name)));
}

/** A mirror topic's configs brought in step with its source's: set (new or changed values) and
 *  removed (set on the destination, no longer on the source). */
export interface TopicConfigChange {
  readonly topic: string;
  readonly set: Readonly<Record<string, string>>;
  readonly removed: readonly string[];
}

/**
 * What a mirror topic's configs lack to be in step with its source topic's: the source topic's own
 * configs (minus CONFIG_EXCLUDE) and kmirror's MIRROR_TOPIC_CONFIGS are set where the destination
 * differs; configs set on the destination topic that the source no longer sets are removed —
 * except the excluded names (throttles, min.insync.replicas, unclean election: the destination's
 * own choice). `undefined` when nothing differs.
 */
export function configChange(topic: string, sourceOwn: Readonly<Record<string, string>>, destinationOwn: Readonly<Record<string, string>>): TopicConfigChange | undefined {
  const wanted: Record<string, string> = { ...mirroredConfigs(sourceOwn), ...MIRROR_TOPIC_CONFIGS };
  const set = Object.fromEntries(Object.entries(wanted).filter(([name, value]) => destinationOwn[name] !== value));
  const removed = Object.keys(destinationOwn)
    .filter((name) => !(name in wanted) && !CONFIG_EXCLUDE.includes(name))
    .sort();
  return Object.keys(set).length === 0 && removed.length === 0 ? undefined : { topic, set, removed };
}

/** What a config sync did: the topics it altered (each recorded by `record` right after), and the
 *  ones it could not describe or alter, with why (the others go on). */
export interface ConfigSyncResult {
  readonly changed: readonly TopicConfigChange[];
  readonly failed: readonly { readonly topic: string; readonly error: { readonly code: string; readonly message: string } }[];
}

type OwnConfigs = { readonly configs: Record<string, string> } | { readonly error: KmirrorError };

/** Each topic's own configs on a cluster, one entry per topic asked: one DescribeConfigs, or one
 *  per topic when the cluster refuses some (kafkajs throws at the first refused resource), so one
 *  topic's refusal is its own. */
async function describeOwnConfigs(admin: Admin, topics: readonly string[], side: string): Promise<Map<string, OwnConfigs>> {
  const describe = async (names: readonly string[]) => {
    const { resources } = await admin.describeConfigs({ resources: names.map((name) => ({ type: ConfigResourceTypes.TOPIC, name })), includeSynonyms: false });
    const found = new Map(resources.map((r) => [r.resourceName, topicConfigs(r.configEntries)]));
    return names.map((topic): [string, OwnConfigs] => {
      const configs = found.get(topic);
      return [topic, configs === undefined ? { error: new KmirrorError('UNKNOWN_TOPIC', `no configs of ${topic} on the ${side}`, { topic }) } : { configs }];
    });
  };
  try {
    return new Map(await describe(topics));
  } catch {
    const one = await Promise.all(
      topics.map(async (topic): Promise<[string, OwnConfigs]> => {
        try {
          return (await describe([topic]))[0]!;
        } catch (err) {
          return [topic, { error: kafkaFailure(err, `describe the configs of ${topic} on the ${side}`) }];
        }
      }),
    );
    return new Map(one);
  }
}

/**
 * Bring mirror topics' configs in step with their source topics' (the runner's config sync, DESIGN
 * §4): one DescribeConfigs on each cluster, then, topic by topic, IncrementalAlterConfigs of what
 * differs (configChange; the topic's other configs untouched) and `record` (the event) — so
 * whatever was altered is recorded before the next topic is touched, and one topic's refusal (a
 * config the destination does not know, a topic deleted there) is reported for it alone.
 */
export async function syncTopicConfigs(
  sourceAdmin: Admin,
  destination: { readonly admin: Admin; readonly raw: RawCluster },
  topics: readonly string[],
  record: (change: TopicConfigChange) => Promise<void>,
): Promise<ConfigSyncResult> {
  if (topics.length === 0) return { changed: [], failed: [] };
  const [onSource, onDestination] = await Promise.all([describeOwnConfigs(sourceAdmin, topics, 'source'), describeOwnConfigs(destination.admin, topics, 'destination')]);
  const changed: TopicConfigChange[] = [];
  const failed: { topic: string; error: { code: string; message: string } }[] = [];
  const fail = (topic: string, error: KmirrorError) => failed.push({ topic, error: { code: error.code, message: error.message } });
  for (const topic of topics) {
    const source = onSource.get(topic)!;
    const dest = onDestination.get(topic)!;
    if ('error' in source) {
      fail(topic, source.error);
      continue;
    }
    if ('error' in dest) {
      fail(topic, dest.error);
      continue;
    }
    const change = configChange(topic, source.configs, dest.configs);
    if (change === undefined) continue;
    try {
      await destination.raw.alterTopicConfigs(topic, change.set, change.removed);
    } catch (err) {
      fail(topic, kafkaFailure(err, `alter the configs of ${topic} on the destination`));
      continue;
    }
    await record(change);
    changed.push(change);
  }
  return { changed, failed };
}

export interface DestinationTopic {
  readonly topic: string;
  /** Absent on the destination (will be created). */
  readonly missing: boolean;
  /** Partitions that already hold records (each checked to be a prefix of its source). */
  readonly nonEmptyPartitions: number;
}

/**
 * Check the destination side of topics about to be mirrored. A destination topic that exists must
 * have the source's partition count, and each of its partitions must be an exact prefix of the
 * source's: it ends at or before the source, and its last record equals the source's record at that
 * offset. Otherwise OFFSET_DIVERGENCE (nothing has been changed yet).
 */
export async function inspectDestination(
  source: RawCluster,
  destination: RawCluster,
  destAdmin: Admin,
  specs: readonly { readonly topic: string; readonly partitionCount: number }[],
): Promise<DestinationTopic[]> {
  let existing: Set<string>;
  try {
    existing = new Set(await destAdmin.listTopics());
  } catch (err) {
    throw kafkaFailure(err, 'list the destination cluster\'s topics');
  }
  const out: DestinationTopic[] = [];
  for (const spec of specs) {
    if (!existing.has(spec.topic)) {
      out.push({ topic: spec.topic, missing: true, nonEmptyPartitions: 0 });
      continue;
    }
    const partitions = await destination.partitions(spec.topic);
    if (partitions.length !== spec.partitionCount) {
      throw new KmirrorError(
        'OFFSET_DIVERGENCE',
        `destination topic ${spec.topic} exists with ${partitions.length} partitions, the source's has ${spec.partitionCount}: offsets cannot be preserved; delete or rename it first`,
        { topic: spec.topic },
      );
    }
    const all = partitions.map((p) => p.partitionId);
    const [destEnd, srcEnd] = await Promise.all([destination.listOffsets(spec.topic, all, 'latest'), source.listOffsets(spec.topic, all, 'latest')]);
    const nonEmpty = all.filter((p) => destEnd.get(p)! > 0n);
    for (const p of nonEmpty) {
      if (destEnd.get(p)! > srcEnd.get(p)!) {
        throw new KmirrorError(
          'OFFSET_DIVERGENCE',
          `destination ${spec.topic}-${p} ends at ${destEnd.get(p)}, beyond the source's end ${srcEnd.get(p)}: it is not a copy of the source; delete it first`,
          { topic: spec.topic, partition: p },
        );
      }
    }
    if (nonEmpty.length > 0) {
      const wanted = nonEmpty.map((p) => ({ topic: spec.topic, partition: p, offset: destEnd.get(p)! - 1n }));
      const [d, s] = await Promise.all([recordsAt(destination, wanted), recordsAt(source, wanted)]);
      for (const w of wanted) {
        const key = partitionKey(w.topic, w.partition);
        const dr = d.get(key);
        const sr = s.get(key);
        const same = dr !== undefined && sr !== undefined && boundaryChecksum(dr, w.offset) === boundaryChecksum(sr, w.offset);
        // A record the source no longer holds (retention, compaction) cannot be compared: allowed.
        if (!same && !(sr === undefined && dr !== undefined)) {
          throw new KmirrorError(
            'OFFSET_DIVERGENCE',
            `destination ${spec.topic}-${w.partition} already holds records that differ from the source's at offset ${w.offset}: it is not a copy of the source; delete it first`,
            { topic: spec.topic, partition: w.partition, offset: w.offset.toString() },
          );
        }
      }
    }
    out.push({ topic: spec.topic, missing: false, nonEmptyPartitions: nonEmpty.length });
  }
  return out;
}

export interface CreatedTopic {
  readonly topic: string;
  readonly partitionCount: number;
  readonly replicationFactor: number;
  /** The source's, when it was more than the destination has brokers. */
  readonly sourceReplicationFactor: number;
  readonly created: boolean;
}

/** Metadata records one CreateTopics request may cause. A KRaft controller refuses a request that
 *  makes more than 10,000 (POLICY_VIOLATION: a topic is one record, each partition and each config
 *  one more); half that leaves room. Fewer, larger requests are much faster: the same 5,000
 *  partitions took 0.3 s in one request and 25 s in requests of 100 topics. */
const RECORDS_PER_CREATE = 5_000;

/** Topics in requests of at most RECORDS_PER_CREATE metadata records (a larger topic alone). */
export function createBatches<T extends { readonly partitions: number; readonly configs?: Readonly<Record<string, string>> }>(specs: readonly T[]): T[][] {
  const batches: T[][] = [];
  let batch: T[] = [];
  let records = 0;
  for (const spec of specs) {
    const cost = 1 + spec.partitions + Object.keys(spec.configs ?? {}).length;
    if (batch.length > 0 && records + cost > RECORDS_PER_CREATE) {
      batches.push(batch);
      batch = [];
      records = 0;
    }
    batch.push(spec);
    records += cost;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

/** Create the missing destination topics: the source's partition count and configs, its
 *  replication factor capped by the destination's broker count (createBatches). */
export async function createMirrorTopics(destAdmin: Admin, specs: readonly SourceTopicSpec[], missing: ReadonlySet<string>): Promise<CreatedTopic[]> {
  let brokers: number;
  try {
    brokers = (await destAdmin.describeCluster()).brokers.length;
  } catch (err) {
    throw kafkaFailure(err, 'describe the destination cluster');
  }
  const toCreate = specs.filter((s) => missing.has(s.topic));
  try {
    const topicSpecs = toCreate.map((s) => ({ topic: s.topic, partitions: s.partitionCount, replicationFactor: Math.min(s.replicationFactor, brokers), configs: { ...s.configs, ...MIRROR_TOPIC_CONFIGS } }));
    for (const batch of createBatches(topicSpecs)) await createTopicsAndWait(destAdmin, batch);
  } catch (err) {
    throw kafkaFailure(err, 'create destination topics');
  }
  return specs.map((s) => ({
    topic: s.topic,
    partitionCount: s.partitionCount,
    replicationFactor: Math.min(s.replicationFactor, brokers),
    sourceReplicationFactor: s.replicationFactor,
    created: missing.has(s.topic),
  }));
}

export interface IsrStatus {
  /** Partitions whose ISR lacks a replica, as topic-partition. */
  readonly waiting: readonly string[];
  /** Brokers missing from some ISR. */
  readonly missingBrokers: readonly number[];
  /** min.insync.replicas per topic, for the operator's picture. */
  readonly minInsyncReplicas: Readonly<Record<string, number>>;
}

/** The destination's real ISR for `topics`: a partition converges when every replica is in sync. */
export async function isrStatus(destination: RawCluster, destAdmin: Admin, topics: readonly string[]): Promise<IsrStatus> {
  const waiting: string[] = [];
  const missing = new Set<number>();
  for (const topic of topics) {
    for (const p of await destination.partitions(topic)) {
      const absent = p.replicas.filter((r) => !p.isr.includes(r));
      if (absent.length > 0 || p.leader < 0) {
        waiting.push(`${topic}-${p.partitionId}`);
        for (const b of absent) missing.add(b);
      }
    }
  }
  const minInsyncReplicas: Record<string, number> = {};
  try {
    const configs = await destAdmin.describeConfigs({ resources: topics.map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: ['min.insync.replicas'] })), includeSynonyms: false });
    for (const r of configs.resources) {
      const entry = r.configEntries.find((e) => e.configName === 'min.insync.replicas');
      if (entry !== undefined) minInsyncReplicas[r.resourceName] = Number(entry.configValue);
    }
  } catch (err) {
    throw kafkaFailure(err, 'describe destination topic configs');
  }
  return { waiting, missingBrokers: [...missing].sort((a, b) => a - b), minInsyncReplicas };
}

/** How a topic deletes old records: by age (ms; null: no time limit) and/or by size. */
export interface Retention {
  readonly ms: bigint | null;
  readonly bySize: boolean;
}

/**
 * The topics that delete old records by retention (cleanup.policy includes delete and retention.ms
 * or retention.bytes is not -1), with their limits. Such a topic may start later on the destination
 * than on the source, as each cluster's retention removes whole segments and their bounds differ
 * (kafka/verify.ts VerifyOptions).
 */
export async function deletesByRetention(admin: Admin, topics: readonly string[]): Promise<Map<string, Retention>> {
  if (topics.length === 0) return new Map();
  const names = ['cleanup.policy', 'retention.ms', 'retention.bytes'];
  try {
    const { resources } = await admin.describeConfigs({ resources: topics.map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: names })), includeSynonyms: false });
    const out = new Map<string, Retention>();
    for (const r of resources) {
      const value = (name: string) => r.configEntries.find((e) => e.configName === name)?.configValue;
      const deletes = (value('cleanup.policy') ?? 'delete').split(',').map((p) => p.trim()).includes('delete');
      const ms = value('retention.ms') === undefined || value('retention.ms') === '-1' ? null : BigInt(value('retention.ms')!);
      const bySize = value('retention.bytes') !== undefined && value('retention.bytes') !== '-1';
      if (deletes && (ms !== null || bySize)) out.set(r.resourceName, { ms, bySize });
    }
    return out;
  } catch (err) {
    throw kafkaFailure(err, 'describe destination topic configs');
  }
}
