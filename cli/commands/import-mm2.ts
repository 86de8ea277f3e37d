// `kmirror import-mm2 <mm2.properties>`: move from MirrorMaker 2. Reads a dedicated-mode MirrorMaker 2
// config (domain/mm2-config.ts plans it), registers its clusters (credentials sealed, never
// printed), creates one mirror per enabled flow with the flow's group filter, starts the flow's
// topic patterns, and prints what it could not carry over with the reason. Idempotent: a cluster or
// mirror that exists is kept (and said so), so a second run only finishes what the first left.
import { Command } from 'commander';
import { awaitOperation, startOperation } from '../../client/index.ts';
import { describeCluster, registerCluster } from '../../db/cluster-store.ts';
import { describeConnection } from '../../domain/connection.ts';
import { isKmirrorError } from '../../domain/errors.ts';
import { planMm2Import, type Mm2ImportPlan } from '../../domain/mm2-config.ts';
import { listMirrors } from '../../db/projections/describe-mirror.ts';
import type { CliContext } from '../context.ts';
import { table } from '../render.ts';
import { checkCluster, readFile } from './cluster.ts';

interface ImportOptions {
  dryRun?: boolean;
  check: boolean;
  start: boolean;
}

type Outcome = 'registered' | 'kept' | 'created' | 'planned';

/** The plan without credentials: what --dry-run and --json print. */
function printable(plan: Mm2ImportPlan) {
  return {
    clusters: plan.clusters.map((c) => ({ name: c.alias, connection: describeConnection(c.connection), ...(c.sslCaFile ? { sslCaFile: c.sslCaFile } : {}) })),
    mirrors: plan.mirrors,
    notCarried: plan.notCarried,
  };
}

export function importMm2Command(ctx: CliContext): Command {
  return new Command('import-mm2')
    .description('create kmirror clusters and mirrors from a MirrorMaker 2 config (dedicated mode), and say what could not be carried over')
    .argument('<file>', 'the MirrorMaker 2 properties file (connect-mirror-maker.properties)')
    .option('--dry-run', 'print the plan (clusters, mirrors, filters, what is not carried over); change nothing')
    .option('--no-check', 'register clusters without checking that they answer')
    .option('--no-start', 'create the mirrors but do not start their topic patterns')
    .addHelpText(
      'after',
      [
        '',
        'Each enabled flow A->B becomes mirror A-to-B: clusters A and B registered under their aliases (SASL',
        'credentials from sasl.jaas.config, sealed), the flow\'s groups/groups.exclude as the group filter',
        '(none when sync.group.offsets.enabled is false), ACL sync of every principal (none when',
        'sync.topic.acls.enabled is false; kmirror syncs write grants too, denied until failover), and',
        'topics/topics.exclude started as patterns.',
        'kmirror keeps topic names and offsets: with the default replication policy MirrorMaker 2 renamed',
        'topics to A.<topic>; consumers move to the original names (the output says so).',
        '',
        'Example:',
        '  kmirror import-mm2 /etc/kafka/connect-mirror-maker.properties --dry-run',
        '  kmirror import-mm2 /etc/kafka/connect-mirror-maker.properties --json',
      ].join('\n'),
    )
    .action(async (file: string, options: ImportOptions) => {
      const plan = planMm2Import(readFile(file, 'MirrorMaker 2 config'));
      if (options.dryRun === true) {
        if (ctx.json) return ctx.printJson({ dryRun: true, ...printable(plan) });
        return printPlan(ctx, plan, new Map(), true);
      }
      const db = await ctx.db();
      const outcomes = new Map<string, Outcome>();
      for (const cluster of plan.clusters) {
        const exists = await describeCluster(db, cluster.alias).then(
          () => true,
          (err: unknown) => (isKmirrorError(err, 'UNKNOWN_CLUSTER') ? false : Promise.reject(err)),
        );
        if (exists) {
          outcomes.set(`cluster:${cluster.alias}`, 'kept');
          continue;
        }
        const connection = cluster.sslCaFile === undefined ? cluster.connection : { ...cluster.connection, sslCa: readFile(cluster.sslCaFile, `${cluster.alias}.ssl.truststore.location`) };
        if (options.check) await checkCluster(cluster.alias, connection);
        await registerCluster(db, ctx.config.secretKey, { cluster: cluster.alias, connection }, ctx.requester);
        outcomes.set(`cluster:${cluster.alias}`, 'registered');
      }
      const existing = new Set((await listMirrors(db)).map((m) => m.name));
      const temporal = await ctx.temporal();
      const started: Record<string, { partitions: number; topics: number }> = {};
      for (const mirror of plan.mirrors) {
        if (existing.has(mirror.name)) outcomes.set(`mirror:${mirror.name}`, 'kept');
        else {
          await awaitOperation<'createMirror'>(
            await startOperation(temporal, 'createMirror', { mirror: mirror.name, sourceCluster: mirror.source, destinationCluster: mirror.destination, groups: { include: [...mirror.groups.include], exclude: [...mirror.groups.exclude] }, acls: { include: [...mirror.acls.include] }, ...ctx.requester }),
          );
          outcomes.set(`mirror:${mirror.name}`, 'created');
        }
        // A flow whose `topics` is empty names nothing to start (MirrorMaker 2 would copy nothing either).
        if (options.start && mirror.include.length > 0) {
          const result = await awaitOperation<'startTopics'>(await startOperation(temporal, 'startTopics', { mirror: mirror.name, include: [...mirror.include], ...(mirror.exclude.length > 0 ? { exclude: [...mirror.exclude] } : {}), ...ctx.requester }));
          started[mirror.name] = { partitions: result.partitions, topics: result.topics.length };
        }
      }
      if (ctx.json) return ctx.printJson({ dryRun: false, ...printable(plan), outcomes: Object.fromEntries(outcomes), started });
      printPlan(ctx, plan, outcomes, false, started);
    });
}

function printPlan(ctx: CliContext, plan: Mm2ImportPlan, outcomes: ReadonlyMap<string, Outcome>, dryRun: boolean, started: Record<string, { partitions: number; topics: number }> = {}): void {
  const outcome = (key: string): Outcome => outcomes.get(key) ?? 'planned';
  ctx.print(
    table(
      ['CLUSTER', 'BOOTSTRAP', 'PROTOCOL', 'SASL USER', dryRun ? 'PLAN' : 'DONE'],
      plan.clusters.map((c) => {
        const d = describeConnection(c.connection);
        return [c.alias, d.bootstrap.join(','), d.securityProtocol, d.saslUsername ?? '-', dryRun ? 'register' : outcome(`cluster:${c.alias}`)];
      }),
    ),
  );
  ctx.print('');
  ctx.print(
    table(
      ['MIRROR', 'FROM', 'TO', 'TOPICS', 'EXCLUDE', 'GROUPS', 'ACLS', dryRun ? 'PLAN' : 'DONE'],
      plan.mirrors.map((m) => [
        m.name,
        m.source,
        m.destination,
        m.include.join(', '),
        m.exclude.join(', ') || '-',
        m.groups.include.length === 0 ? 'none' : `${m.groups.include.join(', ')}${m.groups.exclude.length > 0 ? ` except ${m.groups.exclude.join(', ')}` : ''}`,
        m.acls.include.length === 0 ? 'none' : m.acls.include.join(', '),
        dryRun ? 'create, start' : `${outcome(`mirror:${m.name}`)}${started[m.name] ? `, started ${started[m.name]!.topics} topic(s), ${started[m.name]!.partitions} partition(s)` : ''}`,
      ]),
    ),
  );
  if (plan.notCarried.length > 0) {
    ctx.print(`\nnot carried over (${plan.notCarried.length}):`);
    for (const n of plan.notCarried) ctx.print(`  ${n.key}=${n.value}\n      ${n.reason}`);
  }
  if (dryRun) ctx.print('\ndry run: nothing registered, created or started');
}
