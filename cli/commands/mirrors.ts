// Read commands: `list`, `describe` (the projection plus live offsets from both clusters),
// `history` (the mirror's events, and the hash chain's check), `verify`, `groups` and
// `offsets-for-time` (where a consumer seeking by time should start on the destination).
import { Command, InvalidArgumentError } from 'commander';
import type { RecordsLostPolicy } from '../../domain/commands.ts';
import { readStream } from '../../db/event-store/read-stream.ts';
import { verifyChain } from '../../db/event-store/verify-chain.ts';
import { describeMirror, listMirrors } from '../../db/projections/describe-mirror.ts';
import { KmirrorError } from '../../domain/errors.ts';
import { mirrorStreamId } from '../../domain/events.ts';
import { partitionKey } from '../../kafka/copier.ts';
import { endOffsets } from '../../kafka/offsets.ts';
import { deletesByRetention } from '../../kafka/mirror-topics.ts';
import { planGroupOffsets } from '../../kafka/group-offsets.ts';
import { offsetsForTime } from '../../kafka/time-lookup.ts';
import { verifyPartition, type PartitionVerification } from '../../kafka/verify.ts';
import { errorBody } from '../../errors-output.ts';
import type { CliContext } from '../context.ts';
import { filterText, fitTo, table } from '../render.ts';
import type { PatternFilter } from '../../domain/names.ts';

/** A partition as `describe --json` prints it (offsets and lag as decimal strings). */
export interface DescribedPartition {
  readonly topic: string;
  readonly partition: number;
  readonly state: string;
  readonly sourceEndOffset: string | null;
  readonly destinationEndOffset: string | null;
  readonly lag: string | null;
  readonly lastMirroredOffset: string | null;
  readonly retryAttempt: number;
  /** Records the source's retention removed before they were mirrored (decimal string). */
  readonly recordsLost: string;
  readonly error: { readonly code: string; readonly message: string } | null;
}

export interface ClusterReach {
  readonly cluster: string;
  readonly reachable: boolean;
  readonly error?: { readonly code: string; readonly message: string };
}

export interface DescribedMirror {
  readonly name: string;
  readonly state: string;
  readonly sourceCluster: string;
  readonly destinationCluster: string;
  readonly include: readonly string[];
  readonly exclude: readonly string[];
  /** What the copier does with records the source's retention removed before they were mirrored. */
  readonly onRecordsLost: RecordsLostPolicy;
  /** Consumer groups whose offsets are synced, and principals whose topic ACLs are (whole-name patterns). */
  readonly groups: PatternFilter;
  readonly acls: PatternFilter;
  /** Whether each cluster answered (offsets are null where it did not). */
  readonly clusters: { readonly source: ClusterReach; readonly destination: ClusterReach };
  readonly partitions: readonly DescribedPartition[];
}

const key = partitionKey;

/** End offsets of the partitions on one cluster (kafka/offsets.ts). A cluster that does not answer
 *  is reported, not thrown. */
async function liveEnds(ctx: CliContext, cluster: string, topics: readonly { topic: string; partitions: number[] }[], which: 'source' | 'destination'): Promise<{ reach: ClusterReach; ends: Map<string, bigint> }> {
  try {
    const client = await (await ctx.clusters()).get(cluster);
    return { reach: { cluster, reachable: true }, ends: await endOffsets(client.raw, topics, which) };
  } catch (err) {
    return { reach: { cluster, reachable: false, error: errorBody(err) }, ends: new Map() };
  }
}

export async function describeLive(ctx: CliContext, mirror: string, options: { failedOnly?: boolean } = {}): Promise<DescribedMirror> {
  const d = await describeMirror(await ctx.db(), mirror, options);
  if (d.state === 'deleted') throw new KmirrorError('UNKNOWN_CLUSTER_MIRROR', `mirror ${mirror} does not exist (deleted)`, { mirror });
  const topics = d.topics.filter((t) => t.partitions.length > 0).map((t) => ({ topic: t.topic, partitions: t.partitions.map((p) => p.partition) }));
  const [source, destination] = await Promise.all([
    liveEnds(ctx, d.sourceCluster, topics, 'source'),
    liveEnds(ctx, d.destinationCluster, topics, 'destination'),
  ]);
  const partitions: DescribedPartition[] = d.topics.flatMap((t) =>
    t.partitions.map((p) => {
      const s = source.ends.get(key(t.topic, p.partition));
      const dst = destination.ends.get(key(t.topic, p.partition));
      return {
        topic: t.topic,
        partition: p.partition,
        state: p.state,
        sourceEndOffset: s?.toString() ?? null,
        destinationEndOffset: dst?.toString() ?? null,
        lag: s !== undefined && dst !== undefined ? (s > dst ? s - dst : 0n).toString() : null,
        lastMirroredOffset: p.lastMirrored?.offset ?? null,
        retryAttempt: p.retryAttempt,
        recordsLost: p.recordsLost,
        error: p.error,
      };
    }),
  );
  return {
    name: d.name,
    state: d.state,
    sourceCluster: d.sourceCluster,
    destinationCluster: d.destinationCluster,
    include: d.include,
    exclude: d.exclude,
    onRecordsLost: d.onRecordsLost,
    groups: { include: d.groupInclude, exclude: d.groupExclude },
    acls: { include: d.aclInclude, exclude: d.aclExclude },
    clusters: { source: source.reach, destination: destination.reach },
    partitions,
  };
}

function printDescribed(ctx: CliContext, d: DescribedMirror): void {
  const states = new Map<string, number>();
  let lag = 0n;
  let known = 0;
  let lost = 0n;
  let losing = 0;
  for (const p of d.partitions) {
    states.set(p.state, (states.get(p.state) ?? 0) + 1);
    if (p.lag !== null) {
      lag += BigInt(p.lag);
      known++;
    }
    if (p.recordsLost !== '0') {
      lost += BigInt(p.recordsLost);
      losing++;
    }
  }
  const reach = (r: ClusterReach) => (r.reachable ? r.cluster : `${r.cluster} (NOT REACHABLE: ${r.error?.code} ${r.error?.message})`);
  ctx.print(
    [
      `mirror ${d.name} (${d.state}): ${reach(d.clusters.source)} → ${reach(d.clusters.destination)}`,
      `  include: ${d.include.join(' ') || '-'}   exclude: ${d.exclude.join(' ') || '-'}   records lost to source retention: ${d.onRecordsLost === 'fail' ? 'fail the partition' : 'record and continue'}`,
      `  groups synced: ${filterText(d.groups)}   ACLs synced for: ${filterText(d.acls)}`,
      `  partitions: ${[...states].map(([s, n]) => `${n} ${s}`).join(', ') || 'none'}`,
      // A lag nobody could read is unknown, never 0 (which reads as "safe to fail over").
      `  lag: ${
        d.partitions.length > 0 && known === 0
          ? 'unknown (no partition has both ends known)'
          : `${lag.toLocaleString('en-US')} records${known < d.partitions.length ? ` (in the ${known} of ${d.partitions.length} partitions whose both ends are known)` : ''}`
      }`,
      ...(lost > 0n ? [`  LOST to source retention before they were mirrored: ${lost.toLocaleString('en-US')} records in ${losing} partition(s) (\`kmirror history ${d.name}\` shows each range)`] : []),
      '',
    ].join('\n'),
  );
  if (d.partitions.length === 0) return;
  ctx.print(
    table(
      ['TOPIC', 'PARTITION', 'STATE', 'SOURCE END', 'DEST END', 'LAG', 'LAST MIRRORED', 'ERROR'],
      d.partitions.map((p) => [p.topic, String(p.partition), p.state, p.sourceEndOffset ?? '?', p.destinationEndOffset ?? '?', p.lag ?? '?', p.lastMirroredOffset ?? '-', p.error ? `${p.error.code}: ${p.error.message}` : '']),
    ),
  );
}

const positiveInt = (value: string): number => {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) throw new InvalidArgumentError('must be a positive integer');
  return n;
};

/** The latest time a JavaScript Date holds (ms since the epoch). */
const MAX_DATE_MS = 8_640_000_000_000_000;

/** --time: an ISO-8601 date-time with a zone (each field checked: no 30 February rolled over into
 *  March), or milliseconds since the epoch. */
export const timeArgument = (value: string): bigint => {
  const bad = (): never => {
    throw new InvalidArgumentError('must be an ISO-8601 date-time with a zone (2026-12-07T10:00:00Z) or milliseconds since the epoch, up to the year 275760');
  };
  if (/^\d+$/.test(value)) {
    const ms = BigInt(value);
    return ms > BigInt(MAX_DATE_MS) ? bad() : ms;
  }
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?(?:Z|([+-])(\d{2}):(\d{2}))$/.exec(value);
  if (m === null) return bad();
  const [y, mo, d, h, mi, sec] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i] ?? 0)) as [number, number, number, number, number, number];
  const local = Date.UTC(y, mo - 1, d, h, mi, sec, Number((m[7] ?? '0').padEnd(3, '0')));
  const check = new Date(local);
  const same = check.getUTCFullYear() === y && check.getUTCMonth() === mo - 1 && check.getUTCDate() === d && check.getUTCHours() === h && check.getUTCMinutes() === mi && check.getUTCSeconds() === sec;
  const zone = m[8] === undefined ? 0 : (m[8] === '-' ? -1 : 1) * (Number(m[9]) * 60 + Number(m[10])) * 60_000;
  const ms = local - zone;
  return !same || Number(m[9] ?? 0) > 23 || Number(m[10] ?? 0) > 59 || ms < 0 ? bad() : BigInt(ms);
};

export function mirrorCommands(ctx: CliContext): Command[] {
  const list = new Command('list')
    .description('list the mirrors, with their clusters and partitions by state')
    .addHelpText('after', '\nExample:\n  kmirror list --json')
    .action(async () => {
      const mirrors = await ctx.describable(await listMirrors(await ctx.db()));
      if (ctx.json) return ctx.printJson(mirrors);
      if (mirrors.length === 0) return ctx.print('no mirrors (kmirror create --help)');
      ctx.print(
        table(
          ['MIRROR', 'STATE', 'SOURCE', 'DESTINATION', 'TOPICS', 'PARTITIONS'],
          mirrors.map((m) => [m.name, m.state, m.sourceCluster, m.destinationCluster, String(m.topics), Object.entries(m.states).map(([s, n]) => `${n} ${s}`).join(', ') || '0']),
        ),
      );
    });

  const describe = new Command('describe')
    .description('show a mirror and each partition: state, source end (LSO), destination end, lag, last mirrored offset, error — read live from both clusters')
    .argument('<mirror>', 'mirror name')
    .option('--failed', 'only FAILED partitions')
    .option('--watch', 'refresh every 2 seconds until interrupted (--json: one object per refresh)')
    .addHelpText('after', '\nExamples:\n  kmirror describe dr-east\n  kmirror describe dr-east --failed --json')
    .action(async (mirror: string, options: { failed?: boolean; watch?: boolean }) => {
      await ctx.authorizeRead('describe', mirror);
      const once = async () => {
        const d = await describeLive(ctx, mirror, { failedOnly: options.failed === true });
        if (ctx.json) ctx.output.stdout(`${JSON.stringify(d, null, options.watch ? undefined : 2)}\n`);
        else {
          if (options.watch && process.stdout.isTTY) ctx.output.stdout('\x1b[2J\x1b[H');
          printDescribed(ctx, d);
        }
      };
      await once();
      if (!options.watch) return;
      const stop = new AbortController();
      const onSignal = () => stop.abort();
      process.once('SIGINT', onSignal);
      try {
        while (!stop.signal.aborted) {
          await new Promise((r) => setTimeout(r, 2_000));
          if (!stop.signal.aborted) await once();
        }
      } finally {
        process.off('SIGINT', onSignal);
      }
    });

  const history = new Command('history')
    .description("print a mirror's events in order: type, data, who asked (actor, reason), the workflow, and when")
    .argument('<mirror>', 'mirror name')
    .option('--limit <n>', 'only the last n events', positiveInt)
    .option('--verify', 'also check the whole event log\'s hash chain; exits 1 naming the first broken link')
    .addHelpText('after', '\nExamples:\n  kmirror history dr-east --limit 20\n  kmirror history dr-east --verify --json')
    .action(async (mirror: string, options: { limit?: number; verify?: boolean }) => {
      await ctx.authorizeRead('history', mirror);
      const db = await ctx.db();
      const all = await readStream(db, mirrorStreamId(mirror));
      if (all.length === 0) throw new KmirrorError('UNKNOWN_CLUSTER_MIRROR', `mirror ${mirror} has no history (it was never created)`, { mirror });
      const events = options.limit === undefined ? all : all.slice(-options.limit);
      const shown = events.map((e) => ({
        position: e.position.toString(),
        version: e.streamVersion.toString(),
        type: e.type,
        data: e.data,
        actor: e.metadata.actor,
        reason: e.metadata.reason ?? null,
        workflowId: e.metadata.workflowId ?? null,
        runId: e.metadata.runId ?? null,
        time: e.recordedAt.toISOString(),
      }));
      const chain = options.verify === true ? await verifyChain(db) : undefined;
      const broken =
        chain === undefined || chain.ok
          ? undefined
          : new KmirrorError('EVENT_CHAIN_BROKEN', `the event log's hash chain breaks at position ${chain.position}${chain.streamId ? ` (stream ${chain.streamId}, version ${chain.streamVersion})` : ''}: ${chain.message}`, {
              position: chain.position.toString(),
              reason: chain.reason,
            });
      if (ctx.json) {
        ctx.printJson({
          mirror,
          events: shown,
          ...(chain === undefined ? {} : { chain: { ...chain, events: chain.events.toString(), ...('position' in chain ? { position: chain.position.toString(), streamVersion: chain.streamVersion?.toString() } : {}) } }),
          ...(broken === undefined ? {} : { error: errorBody(broken) }),
        });
      } else {
        ctx.print(
          table(
            ['#', 'TIME', 'TYPE', 'ACTOR', 'REASON', 'DATA'],
            shown.map((e) => [e.version, e.time, e.type, e.actor, e.reason ?? '', fitTo(JSON.stringify(e.data), 120)]),
          ),
        );
        if (chain?.ok === true) ctx.print(`\nhash chain intact: ${chain.events} events verified (head ${chain.headHash.slice(0, 16)}…)`);
      }
      if (broken !== undefined) ctx.fail(broken);
    });

  const verify = new Command('verify')
    .description('compare source and destination record by record (offset, key, value, headers, timestamp) over what has been mirrored; exits 1 on a difference')
    .argument('<mirror>', 'mirror name')
    .option('--topic <name>', 'only this topic (repeatable)', (v: string, prev: string[] = []) => [...prev, v])
    .option('--full', 'compare up to the source\'s end, so records not mirrored yet count as missing')
    .addHelpText('after', '\nExamples:\n  kmirror verify dr-east\n  kmirror verify dr-east --topic orders --full --json')
    .action(async (mirror: string, options: { topic?: string[]; full?: boolean }) => {
      // DESCRIBE on the mirror before anything is read about it (not even whether it exists); then,
      // as it reads the records, READ on each topic it compares.
      await ctx.authorizeRead('verify', mirror);
      const d = await describeMirror(await ctx.db(), mirror);
      const topics = d.topics.filter((t) => options.topic === undefined || options.topic.includes(t.topic));
      await ctx.authorizeRead('verify', mirror, topics.map((t) => t.topic));
      for (const name of options.topic ?? []) {
        if (!d.topics.some((t) => t.topic === name)) throw new KmirrorError('TOPIC_NOT_IN_CLUSTER_MIRROR', `topic ${name} is not in mirror ${mirror}`, { mirror, topic: name });
      }
      const clusters = await ctx.clusters();
      const [source, destination] = await Promise.all([clusters.get(d.sourceCluster), clusters.get(d.destinationCluster)]);
      const results: (PartitionVerification & { topic: string })[] = [];
      // Where the destination's own retention deletes, it may start later than the source.
      const retaining = await deletesByRetention(destination.admin, topics.map((t) => t.topic));
      for (const t of topics) {
        for (let p = 0; p < t.partitionCount; p++) {
          const to = options.full === true ? undefined : (await destination.raw.listOffsets(t.topic, [p], 'latest')).get(p)!;
          results.push({ topic: t.topic, ...(await verifyPartition(source.raw, destination.raw, t.topic, p, to, { destinationRetention: retaining.get(t.topic) })) });
        }
      }
      const different = results.filter((r) => !r.equal);
      const first = different[0];
      const differs =
        first === undefined
          ? undefined
          : new KmirrorError('OFFSET_DIVERGENCE', `${different.length} partition(s) differ; first: ${first.topic}-${first.partition} at offset ${first.firstMismatch?.offset} (${first.firstMismatch?.field})`, {
              mirror,
              topic: first.topic,
              partition: first.partition,
            });
      if (ctx.json) ctx.printJson({ mirror, equal: differs === undefined, partitions: results, ...(differs === undefined ? {} : { error: errorBody(differs) }) });
      else {
        ctx.print(
          table(
            ['TOPIC', 'PARTITION', 'RANGE', 'RESULT'],
            results.map((r) => [
              r.topic,
              String(r.partition),
              `[${r.from}, ${r.to})`,
              (r.equal ? `equal (${r.recordsCompared} records)` : `DIFFERENT at offset ${r.firstMismatch?.offset}: ${r.firstMismatch?.field} (source ${r.firstMismatch?.source}, destination ${r.firstMismatch?.destination})`) +
                (r.removedByDestinationRetention ? `; [${r.removedByDestinationRetention.from}, ${r.removedByDestinationRetention.to}) removed by the destination's retention, not compared` : ''),
            ]),
          ),
        );
      }
      if (differs !== undefined) ctx.fail(differs);
    });

  const groups = new Command('groups')
    .description('consumer-group offset sync, per group and partition: source committed, destination committed, destination end, the clamped target, and whether the group is synced, skipped (active on the destination) or unchanged — read live')
    .argument('<mirror>', 'mirror name')
    .addHelpText('after', '\nExamples:\n  kmirror groups dr-east\n  kmirror groups dr-east --json')
    .action(async (mirror: string) => {
      await ctx.authorizeRead('groups', mirror);
      const db = await ctx.db();
      const d = await describeMirror(db, mirror);
      const clusters = await ctx.clusters();
      const [source, destination] = await Promise.all([clusters.get(d.sourceCluster), clusters.get(d.destinationCluster)]);
      const partitions = d.topics.flatMap((t) => t.partitions.filter((p) => p.state !== 'LOG_TRUNCATION').map((p) => ({ topic: t.topic, partition: p.partition })));
      const plans = await planGroupOffsets(source, destination, partitions, { include: d.groupInclude, exclude: d.groupExclude });
      // What the runner does at its next round: 'synced' groups get the 'set' partitions committed.
      const shown = plans.map((g) => ({
        group: g.group,
        status: g.status === 'synced' ? 'pending' : g.status === 'unchanged' ? 'synced' : g.status,
        partitions: g.partitions.map((p) => ({
          topic: p.topic,
          partition: p.partition,
          sourceCommitted: p.sourceCommitted.toString(),
          destinationCommitted: p.destinationCommitted?.toString() ?? null,
          destinationEnd: p.destinationEnd.toString(),
          target: p.target.toString(),
          clamped: p.clamped,
        })),
      }));
      if (ctx.json) return ctx.printJson({ mirror, include: d.groupInclude, exclude: d.groupExclude, groups: shown });
      if (shown.length === 0) return ctx.print(`no consumer group matching ${d.groupInclude.join(' ')} has committed offsets on mirror ${mirror}'s partitions`);
      ctx.print(
        table(
          ['GROUP', 'STATUS', 'TOPIC', 'PARTITION', 'SOURCE COMMITTED', 'DEST COMMITTED', 'DEST END', 'TARGET'],
          shown.flatMap((g) => g.partitions.map((p) => [g.group, g.status, p.topic, String(p.partition), p.sourceCommitted, p.destinationCommitted ?? '-', p.destinationEnd, `${p.target}${p.clamped ? ' (clamped)' : ''}`])),
        ),
      );
    });

  const offsetsForTimeCommand = new Command('offsets-for-time')
    .description(
      "where a consumer seeking by time should start on the destination: per partition, the first record a read_committed consumer sees with a timestamp at or after --time, read on the destination alone (works with the source gone), beside the destination broker's own offsetsForTimes answer — which can be earlier on transactional or compacted topics, because each filled gap's ABORT marker carries the destination's clock at fill time — and the source's when it answers",
    )
    .argument('<mirror>', 'mirror name')
    .requiredOption('--time <time>', 'an ISO-8601 date-time with a zone (2026-12-07T10:00:00Z) or milliseconds since the epoch', timeArgument)
    .option('--topic <name>', 'only this topic (repeatable)', (v: string, prev: string[] = []) => [...prev, v])
    .option('--csv', 'print topic,partition,offset lines, as kafka-consumer-groups --reset-offsets --from-file reads them')
    .addHelpText(
      'after',
      '\nA partition with no such record answers its end (as Kafka\'s own reset does).\n\nExamples:\n  kmirror offsets-for-time dr-east --time 2026-12-07T10:00:00Z\n  kmirror offsets-for-time dr-east --time 1796637600000 --topic orders --csv > reset.csv\n  kafka-consumer-groups.sh --bootstrap-server B --group G --reset-offsets --from-file reset.csv --execute',
    )
    .action(async (mirror: string, options: { time: bigint; topic?: string[]; csv?: boolean }) => {
      await ctx.authorizeRead('offsets-for-time', mirror);
      const d = await describeMirror(await ctx.db(), mirror);
      for (const name of options.topic ?? []) {
        if (!d.topics.some((t) => t.topic === name)) throw new KmirrorError('TOPIC_NOT_IN_CLUSTER_MIRROR', `topic ${name} is not in mirror ${mirror}`, { mirror, topic: name });
      }
      const topics = d.topics.filter((t) => options.topic === undefined || options.topic.includes(t.topic));
      await ctx.authorizeRead('offsets-for-time', mirror, topics.map((t) => t.topic));
      const partitions = new Map(topics.map((t) => [t.topic, Array.from({ length: t.partitionCount }, (_, p) => p)]));
      const total = topics.reduce((n, t) => n + t.partitionCount, 0);
      const clusters = await ctx.clusters();
      const destination = await clusters.get(d.destinationCluster);
      // The source's answer, for comparison, when it answers (after a disaster it may not).
      const sourceAnswers = clusters
        .get(d.sourceCluster)
        .then((source) => source.raw.listOffsetsOf(partitions, options.time))
        .catch((err: unknown) => err as Error);
      let done = 0;
      const tty = process.stderr.isTTY === true && !ctx.json && options.csv !== true;
      const lookups = await offsetsForTime(destination.raw, partitions, options.time, () => {
        done++;
        if (tty) ctx.output.stderr(`\roffsets-for-time: ${done}/${total} partitions read`);
      });
      if (tty) ctx.output.stderr('\n');
      const onSource = await sourceAnswers;
      const sourceAnswer = (topic: string, partition: number): string | null => {
        if (onSource instanceof Error) return null;
        const o = onSource.get(topic)?.get(partition);
        return o === undefined || o < 0n ? null : o.toString();
      };
      const shown = lookups.map((l) => ({
        topic: l.topic,
        partition: l.partition,
        offset: l.offset?.toString() ?? null,
        // A partition whose read failed has nowhere to seek to: null, with its error.
        seekTo: l.error === undefined ? (l.offset ?? l.end).toString() : null,
        destinationBrokerAnswer: l.broker?.toString() ?? null,
        sourceAnswer: sourceAnswer(l.topic, l.partition),
        error: l.error === undefined ? null : errorBody(l.error),
      }));
      const failed = lookups.find((l) => l.error !== undefined);
      const failure =
        failed === undefined
          ? undefined
          : new KmirrorError(failed.error!.code, `${lookups.filter((l) => l.error !== undefined).length} partition(s) could not be read; first: ${failed.topic}-${failed.partition}: ${failed.error!.message}`, {
              mirror,
              topic: failed.topic,
              partition: failed.partition,
            });
      const time = new Date(Number(options.time)).toISOString();
      const sourceReach = onSource instanceof Error ? { reachable: false, error: errorBody(onSource) } : { reachable: true };
      if (ctx.json) {
        ctx.printJson({ mirror, time, timestamp: options.time.toString(), source: { cluster: d.sourceCluster, ...sourceReach }, partitions: shown, ...(failure === undefined ? {} : { error: errorBody(failure) }) });
      } else if (options.csv === true) {
        // Only partitions with an answer: a reset file must not name a guess.
        ctx.print(shown.flatMap((p) => (p.seekTo === null ? [] : [`${p.topic},${p.partition},${p.seekTo}`])).join('\n'));
      } else {
        ctx.print(
          table(
            ['TOPIC', 'PARTITION', 'SEEK TO', 'DEST BROKER ANSWER', 'SOURCE ANSWER'],
            shown.map((p) => [
              p.topic,
              String(p.partition),
              p.error !== null ? `? (${p.error.code}: ${p.error.message})` : (p.offset ?? `${p.seekTo} (end: no record at or after ${time})`),
              p.destinationBrokerAnswer ?? 'none',
              p.sourceAnswer ?? (onSource instanceof Error ? '?' : 'none'),
            ]),
          ),
        );
        if (onSource instanceof Error) ctx.note(`source cluster ${d.sourceCluster} did not answer (${errorBody(onSource).code}): its answers are shown as ?`);
      }
      if (failure !== undefined) ctx.fail(failure);
    });

  return [list, describe, history, verify, groups, offsetsForTimeCommand];
}
