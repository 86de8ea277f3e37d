// The operation commands: each starts its workflow (joining the same request if it is running),
// shows its progress on a terminal, and prints the result when the workflow has completed.
// --no-wait prints the workflow id at once.
import { Command, InvalidArgumentError, Option } from 'commander';
import { awaitOperation, differingSettings, startOperation, workflowUrl, type OperationInputs, type OperationResults } from '../../client/index.ts';
import { KmirrorError } from '../../domain/errors.ts';
import { RECORDS_LOST_POLICIES, type RecordsLostPolicy } from '../../domain/commands.ts';
import { runnerWorkflowId, type Operation } from '../../workflows/messages.ts';
import type { StartTopicsResult } from '../../workflows/start-topics.ts';
import type { TopicsChangeResult } from '../../workflows/change-topics.ts';
import type { CreateMirrorResult } from '../../workflows/create-mirror.ts';
import type { StopTopicsResult } from '../../workflows/stop-topics.ts';
import type { CliContext } from '../context.ts';
import { filterText, fitTo, progressLine, table } from '../render.ts';

interface WaitOptions {
  wait: boolean;
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** The states in which an operation is done with a partition (what its progress counts down to). */
const DONE_STATES: Partial<Record<Operation, readonly string[]>> = {
  startTopics: ['MIRRORING', 'FAILED'],
  pauseTopics: ['PAUSED', 'FAILED', 'STOPPED'],
  resumeTopics: ['MIRRORING', 'FAILED'],
  failover: ['STOPPED'],
  promote: ['STOPPED'],
  retryPartitions: ['MIRRORING'],
};

/** Run an operation the way every command does; returns the result (or undefined with --no-wait). */
async function operate<O extends Operation>(ctx: CliContext, operation: O, input: OperationInputs[O], options: WaitOptions, label: string): Promise<OperationResults[O] | undefined> {
  const temporal = await ctx.temporal();
  const handle = await startOperation(temporal, operation, input);
  const url = workflowUrl(ctx.uiUrl, ctx.config.temporal.namespace, handle.workflowId);
  // The same request for the same partitions joins the running workflow; its settings apply.
  const differing = await differingSettings(temporal, handle, input);
  // --json says it too, for scripts: the settings in which the running request differs.
  const joined = differing.length > 0 ? { joinedWithOtherSettings: differing } : {};
  if (differing.length > 0) ctx.note(`joined workflow ${handle.workflowId}, already running the same request with other settings (${differing.join(', ')}): its settings apply; wait for it, or cancel it in the Temporal UI and run this again`);
  if (!options.wait) {
    if (ctx.json) ctx.printJson({ workflowId: handle.workflowId, runId: handle.firstExecutionRunId, url, ...joined });
    else ctx.print(`started ${operation} as workflow ${handle.workflowId}, not waited for (it may still refuse the request)\n  ${url}`);
    return undefined;
  }
  const tty = process.stderr.isTTY === true;
  const done = DONE_STATES[operation];
  let last = '';
  const result = await awaitOperation<O>(handle, {
    // A terminal also shows the first partitions not done yet (a log gets each change of the counts once).
    ...(tty && done !== undefined ? { unfinished: { done, max: 5 } } : {}),
    // A start's partitions are aligned, and their ISR waited for, by the mirror's runner.
    ...(operation === 'startTopics' ? { worksFor: temporal.client.workflow.getHandle(runnerWorkflowId(input.mirror)) } : {}),
    onProgress: (progress) => {
      const line = fitTo(progressLine(label, progress, done), process.stderr.columns);
      if (line === last) return;
      last = line;
      // A terminal gets one line rewritten in place; a log gets each change once.
      if (tty) ctx.output.stderr(`\r\x1b[K${line}`);
      else if (!ctx.json) ctx.note(line);
    },
  }).finally(() => {
    if (tty && last !== '') ctx.output.stderr('\r\x1b[K');
  });
  if (ctx.json) ctx.printJson({ workflowId: handle.workflowId, url, ...joined, result });
  else ctx.note(`workflow ${handle.workflowId}: ${url}`);
  return result;
}

/** "90", "90s", "5m", "1h" → seconds. */
function parseDuration(value: string): number {
  const m = /^(\d+(?:\.\d+)?)(s|m|h)?$/.exec(value.trim());
  if (m === null) throw new InvalidArgumentError('a duration like 90s, 5m or 1h');
  return Number(m[1]) * ({ s: 1, m: 60, h: 3_600 } as const)[(m[2] ?? 's') as 's' | 'm' | 'h'];
}

function printStop(ctx: CliContext, r: StopTopicsResult): void {
  const behind = r.partitions.reduce((n, p) => n + BigInt(p.recordsBehind ?? '0'), 0n);
  const unknown = r.partitions.some((p) => p.recordsBehind === null);
  ctx.print(
    table(
      // A run reports each partition's state before it stopped them (the summary line says what they are now).
      ['TOPIC', 'PARTITION', r.dryRun ? 'STATE' : 'WAS', 'DEST END', 'SOURCE END', 'BEHIND', 'SOURCE TXN'],
      r.partitions.map((p) => [p.topic, String(p.partition), p.state, p.destinationEnd ?? '?', p.sourceEnd ?? '?', p.recordsBehind ?? '?', p.transactionOpenOnSource === null ? '?' : p.transactionOpenOnSource ? 'open' : '']),
    ),
  );
  const source = r.source.reachable ? '' : ` (the source does not answer: ${r.source.error?.code})`;
  if (r.dryRun) {
    ctx.print(`\ndry run, nothing changed: a ${r.mode} now would stop ${r.partitions.length} partition(s) and leave ${unknown ? 'an unknown number of' : behind.toString()} record(s) behind${source}`);
    return;
  }
  ctx.print(`\n${r.mode}: ${Object.entries(r.states).map(([s, n]) => `${n} ${s}`).join(', ')} in ${(r.durationMs / 1000).toFixed(1)} s; records behind the source (RPO): ${unknown ? 'unknown' : behind.toString()}${source}`);
  if (r.writable) ctx.print(r.writable.lifted.length > 0 ? `writable: DENY WRITE lifted for ${r.writable.lifted.join(', ')}` : `writable: no DENY WRITE to lift${r.writable.reason ? ` (${r.writable.reason})` : ''}`);
  printFailed(ctx, r.failed);
}

function printFailed(ctx: CliContext, failed: readonly { topic: string; partition: number; code: string; message: string }[]): void {
  if (failed.length === 0) return;
  ctx.print(`\n${failed.length} partition(s) FAILED (kmirror describe <mirror> --failed):`);
  ctx.print(table(['TOPIC', 'PARTITION', 'CODE', 'MESSAGE'], failed.map((f) => [f.topic, String(f.partition), f.code, f.message])));
}

function printChange(ctx: CliContext, verb: string, result: TopicsChangeResult): void {
  const states = Object.entries(result.states).map(([s, n]) => `${n} ${s}`).join(', ');
  ctx.print(result.partitions === 0 ? `mirror ${result.mirror} has no partition to act on: nothing ${verb}` : `${verb} ${result.partitions} partition(s) of mirror ${result.mirror}: ${states}`);
  printFailed(ctx, result.failed);
}

export function operationCommands(ctx: CliContext): Command[] {
  const create = new Command('create')
    .description('create a mirror from a registered source cluster into a registered destination cluster, and start its runner')
    .argument('<mirror>', 'mirror name ([a-zA-Z0-9._-], 1-249 characters)')
    .requiredOption('--source <cluster>', 'the registered cluster to mirror from')
    .requiredOption('--destination <cluster>', 'the registered cluster to mirror into')
    .option('--group-include <regex>', 'consumer groups whose offsets are synced (repeatable; default every group)', collect)
    .option('--group-exclude <regex>', 'consumer groups left out (repeatable)', collect)
    .option('--acl-include <regex>', "principals (e.g. 'User:orders-.*') whose ACLs on the mirrored topics are synced to the destination (repeatable; default none: ACL sync off)", collect)
    .option('--acl-exclude <regex>', 'principals left out of ACL sync (repeatable)', collect)
    .addOption(
      new Option('--on-records-lost <policy>', "when the source's retention removed records before they were mirrored: record the range and continue, or fail the partition until `kmirror retry --accept-records-lost`")
        .choices([...RECORDS_LOST_POLICIES])
        .default('continue'),
    )
    .option('--no-wait', 'print the workflow id and return at once (before the workflow has checked the request: follow it with the printed link)')
    .addHelpText(
      'after',
      `\nExamples:\n  kmirror create dr-east --source east --destination west --reason "DR for the east region"\n  kmirror create ledger --source east --destination west --on-records-lost fail\n  kmirror create dr-east --source east --destination west --acl-include 'User:.*' --acl-exclude 'User:admin'`,
    )
    .action(async (mirror: string, options: WaitOptions & { source: string; destination: string; groupInclude?: string[]; groupExclude?: string[]; aclInclude?: string[]; aclExclude?: string[]; onRecordsLost: RecordsLostPolicy }) => {
      const groups =
        options.groupInclude === undefined && options.groupExclude === undefined
          ? {}
          : { groups: { ...(options.groupInclude ? { include: options.groupInclude } : {}), ...(options.groupExclude ? { exclude: options.groupExclude } : {}) } };
      if (options.aclExclude !== undefined && options.aclInclude === undefined) throw new KmirrorError('INVALID_ARGUMENT', '--acl-exclude narrows --acl-include: name the principals to sync with --acl-include');
      const acls = options.aclInclude === undefined ? {} : { acls: { include: options.aclInclude, ...(options.aclExclude ? { exclude: options.aclExclude } : {}) } };
      const input = { mirror, sourceCluster: options.source, destinationCluster: options.destination, ...groups, ...acls, onRecordsLost: options.onRecordsLost, ...ctx.requester };
      const result = await operate(ctx, 'createMirror', input, options, `create ${mirror}`);
      if (result === undefined || ctx.json) return;
      const r: CreateMirrorResult = result;
      ctx.print(`mirror ${r.mirror} created: ${r.sourceCluster.cluster} (${r.sourceCluster.brokers} brokers) → ${r.destinationCluster.cluster} (${r.destinationCluster.brokers} brokers); runner ${r.runnerWorkflowId}`);
    });

  const alter = new Command('alter')
    .description("change a mirror's sync filters: the consumer groups whose offsets are synced, the principals whose topic ACLs are (an option given replaces that list; the others are kept)")
    .argument('<mirror>', 'mirror name')
    .option('--group-include <regex>', 'consumer groups whose offsets are synced (repeatable; replaces the list)', collect)
    .option('--group-exclude <regex>', 'consumer groups left out (repeatable; replaces the list)', collect)
    .option('--no-group-sync', 'sync no consumer group offsets')
    .option('--acl-include <regex>', "principals (e.g. 'User:orders-.*') whose ACLs on the mirrored topics are synced (repeatable; replaces the list)", collect)
    .option('--acl-exclude <regex>', 'principals left out of ACL sync (repeatable; replaces the list)', collect)
    .option('--no-acl-sync', 'sync no ACLs (the read-only guard stays)')
    .option('--no-wait', 'print the workflow id and return at once (before the workflow has checked the request: follow it with the printed link)')
    .addHelpText(
      'after',
      `\nExamples:\n  kmirror alter dr-east --acl-include 'User:orders-.*' --reason "consumers fail over too"\n  kmirror alter dr-east --group-exclude 'tmp-.*'\n  kmirror alter dr-east --no-acl-sync --json`,
    )
    .action(async (mirror: string, options: WaitOptions & { groupInclude?: string[]; groupExclude?: string[]; groupSync: boolean; aclInclude?: string[]; aclExclude?: string[]; aclSync: boolean }) => {
      if (!options.groupSync && (options.groupInclude ?? options.groupExclude) !== undefined) throw new KmirrorError('INVALID_ARGUMENT', '--no-group-sync excludes --group-include and --group-exclude');
      if (!options.aclSync && (options.aclInclude ?? options.aclExclude) !== undefined) throw new KmirrorError('INVALID_ARGUMENT', '--no-acl-sync excludes --acl-include and --acl-exclude');
      const filter = (include: string[] | undefined, exclude: string[] | undefined, off: boolean) =>
        off ? { include: [], exclude: [] } : include === undefined && exclude === undefined ? undefined : { ...(include ? { include } : {}), ...(exclude ? { exclude } : {}) };
      const groups = filter(options.groupInclude, options.groupExclude, !options.groupSync);
      const acls = filter(options.aclInclude, options.aclExclude, !options.aclSync);
      if (groups === undefined && acls === undefined) throw new KmirrorError('INVALID_ARGUMENT', 'alter needs at least one of --group-include, --group-exclude, --no-group-sync, --acl-include, --acl-exclude, --no-acl-sync');
      const input = { mirror, ...(groups ? { groups } : {}), ...(acls ? { acls } : {}), ...ctx.requester };
      const result = await operate(ctx, 'alterMirror', input, options, `alter ${mirror}`);
      if (result === undefined || ctx.json) return;
      ctx.print(`mirror ${result.mirror}: ${result.changed.length === 0 ? 'nothing changed' : `changed ${result.changed.join(' and ')}`}; groups synced: ${filterText(result.groups)}; ACLs synced for: ${filterText(result.acls)}`);
    });

  const start = new Command('start')
    .description('add source topics to a mirror: create the destination topics (read-only), align them, wait for their ISR and start mirroring')
    .argument('<mirror>', 'mirror name')
    .option('--topic <name>', 'a source topic (repeatable)', collect)
    .option('--include <regex>', 'source topics whose whole name matches (repeatable; added to the mirror\'s patterns, which auto-discovery follows for new topics)', collect)
    .option('--exclude <regex>', 'leave out topics the include patterns match (repeatable)', collect)
    .option('--no-wait', 'print the workflow id and return at once (before the workflow has checked the request: follow it with the printed link)')
    .addHelpText('after', '\nExamples:\n  kmirror start dr-east --topic orders --topic payments\n  kmirror start dr-east --include \'orders\\..*\' --exclude \'.*\\.tmp\'')
    .action(async (mirror: string, options: WaitOptions & { topic?: string[]; include?: string[]; exclude?: string[] }) => {
      if (options.topic === undefined && options.include === undefined) throw new KmirrorError('INVALID_ARGUMENT', 'start needs --topic NAME or --include REGEX; see `kmirror start --help`');
      if (options.exclude !== undefined && options.include === undefined) throw new KmirrorError('INVALID_ARGUMENT', '--exclude narrows --include patterns; give --include too');
      const input = {
        mirror,
        ...(options.topic ? { topics: options.topic } : {}),
        ...(options.include ? { include: options.include } : {}),
        ...(options.exclude ? { exclude: options.exclude } : {}),
        ...ctx.requester,
      };
      const result = await operate(ctx, 'startTopics', input, options, `start ${mirror}`);
      if (result === undefined || ctx.json) return;
      const r: StartTopicsResult = result;
      ctx.print(table(
        ['TOPIC', 'PARTITIONS', 'REPLICATION', 'DESTINATION TOPIC'],
        r.topics.map((t) => [t.topic, String(t.partitionCount), t.replicationFactor === t.sourceReplicationFactor ? String(t.replicationFactor) : `${t.replicationFactor} (source ${t.sourceReplicationFactor}, capped by the destination's brokers)`, t.created ? 'created' : 'existed']),
      ));
      ctx.print(`\n${r.partitions} partition(s): ${Object.entries(r.states).map(([s, n]) => `${n} ${s}`).join(', ') || 'none'}`);
      ctx.print(r.readOnly.enforced ? `read-only: DENY WRITE for ${r.readOnly.denied.join(', ') || 'no other principal (none may write)'}` : `read-only: not enforced (${r.readOnly.reason}); foreign writes are detected and halt the partition`);
      printFailed(ctx, r.failed);
    });

  const change = (name: 'pause' | 'resume', operation: 'pauseTopics' | 'resumeTopics', description: string, verb: string) =>
    new Command(name)
      .description(description)
      .argument('<mirror>', 'mirror name')
      .option('--topic <name>', 'a topic of the mirror (repeatable)', collect)
      .option('--all-topics', 'every topic of the mirror')
      .option('--no-wait', 'print the workflow id and return at once (before the workflow has checked the request: follow it with the printed link)')
      .addHelpText('after', `\nExamples:\n  kmirror ${name} dr-east --topic orders --reason "broker maintenance"\n  kmirror ${name} dr-east --all-topics`)
      .action(async (mirror: string, options: WaitOptions & { topic?: string[]; allTopics?: boolean }) => {
        if ((options.allTopics === true) === (options.topic !== undefined)) throw new KmirrorError('INVALID_ARGUMENT', `${name} needs --topic NAME or --all-topics (one of them)`);
        const input = { mirror, ...(options.allTopics ? { allTopics: true } : { topics: options.topic! }), ...ctx.requester };
        const result = await operate(ctx, operation, input, options, `${name} ${mirror}`);
        if (result !== undefined && !ctx.json) printChange(ctx, verb, result);
      });

  const stop = (name: 'failover' | 'promote', description: string, example: string) => {
    const command = new Command(name)
      .description(description)
      .argument('<mirror>', 'mirror name')
      .option('--topic <name>', 'a topic of the mirror (repeatable)', collect)
      .option('--include <regex>', "the mirror's topics whose whole name matches (repeatable)", collect)
      .option('--all-topics', 'every topic of the mirror')
      .option('--dry-run', 'show per partition what would happen and the records a stop now would leave behind; change nothing')
      .option('--no-wait', 'print the workflow id and return at once (before the workflow has checked the request: follow it with the printed link)');
    if (name === 'promote') command.option('--timeout <duration>', 'how long to wait for the lag to reach 0 (e.g. 90s, 5m; default 5m)', parseDuration);
    return command.addHelpText('after', `\nExamples:\n${example}`).action(async (mirror: string, options: WaitOptions & { topic?: string[]; include?: string[]; allTopics?: boolean; dryRun?: boolean; timeout?: number }) => {
      const ways = [options.allTopics === true, options.topic !== undefined, options.include !== undefined].filter(Boolean).length;
      if (ways !== 1) throw new KmirrorError('INVALID_ARGUMENT', `${name} needs --topic NAME, --include REGEX or --all-topics (one of them)`);
      const input = {
        mirror,
        ...(options.allTopics ? { allTopics: true } : {}),
        ...(options.topic ? { topics: options.topic } : {}),
        ...(options.include ? { include: options.include } : {}),
        ...(options.dryRun ? { dryRun: true } : {}),
        ...(options.timeout !== undefined ? { timeoutSeconds: options.timeout } : {}),
        ...ctx.requester,
      };
      const result = await operate(ctx, name, input, options, `${name} ${mirror}`);
      if (result === undefined || ctx.json) return;
      printStop(ctx, result);
    });
  };

  const retry = new Command('retry')
    .description('retry FAILED partitions now (attempts reset); with --override-isr-wait, end the ISR waits of the topics although replicas are missing; with --accept-records-lost, let partitions that failed with RECORDS_LOST skip the records the source no longer holds (both recorded with your reason)')
    .argument('<mirror>', 'mirror name')
    .option('--topic <name>', 'only this topic (repeatable; default: every topic)', collect)
    .option('--override-isr-wait', 'let waiting operations go on with missing replicas (needs --reason)')
    .option('--accept-records-lost', "accept that records the source's retention removed are lost to the mirror: the next loss in each partition of the topics is skipped and recorded (needs --reason)")
    .option('--no-wait', 'print the workflow id and return at once (before the workflow has checked the request: follow it with the printed link)')
    .addHelpText('after', '\nExamples:\n  kmirror retry dr-east\n  kmirror retry dr-east --topic orders --override-isr-wait --reason "broker 3 replaced next week"\n  kmirror retry ledger --topic payments --accept-records-lost --reason "owners agreed: replayed from the archive"')
    .action(async (mirror: string, options: WaitOptions & { topic?: string[]; overrideIsrWait?: boolean; acceptRecordsLost?: boolean }) => {
      if (options.overrideIsrWait === true && ctx.reason === undefined) throw new KmirrorError('INVALID_ARGUMENT', '--override-isr-wait needs --reason TEXT (it is recorded in the event log)');
      if (options.acceptRecordsLost === true && ctx.reason === undefined) throw new KmirrorError('INVALID_ARGUMENT', '--accept-records-lost needs --reason TEXT (it is recorded in the event log)');
      const input = {
        mirror,
        ...(options.topic ? { topics: options.topic } : {}),
        ...(options.overrideIsrWait ? { overrideIsrWait: true } : {}),
        ...(options.acceptRecordsLost ? { acceptRecordsLost: true } : {}),
        ...ctx.requester,
      };
      const result = await operate(ctx, 'retryPartitions', input, options, `retry ${mirror}`);
      if (result === undefined || ctx.json) return;
      ctx.print(`retried ${result.retried} FAILED partition(s) of mirror ${mirror}; now: ${Object.entries(result.states).map(([s, n]) => `${n} ${s}`).join(', ')}`);
      if (result.isrWaitOverridden.length > 0) ctx.print(`ISR wait overridden for ${result.isrWaitOverridden.join(', ')}`);
      if (result.recordsLostAccepted.length > 0) ctx.print(`records lost to source retention accepted for ${result.recordsLostAccepted.join(', ')} (each range is recorded: kmirror history ${mirror})`);
      if ((result.states.STOPPING ?? 0) > 0) ctx.print('partitions in STOPPING: run the same failover or promote again to finish it (it skips the steps already done)');
      printFailed(ctx, result.failed);
    });

  const failback = new Command('failback')
    .description("after a failover, make the old primary a mirror of the new one: continue where each partition stopped, or archive (or discard) the records the old primary took after the failover point and re-mirror the topic in full; the reverse mirror is <mirror>-reverse")
    .argument('<mirror>', 'the failed-over mirror')
    .option('--topic <name>', 'only this failed-over topic (repeatable; default every one)', collect)
    .option('--dry-run', 'show per partition what would happen and each divergent range; change nothing')
    .option('--archive-divergent', 'copy divergent tails to <topic>.kmirror-divergent-<time> on the old primary (the default)')
    .option('--discard-divergent', 'drop divergent tails without a copy')
    .option('--no-wait', 'print the workflow id and return at once (before the workflow has checked the request: follow it with the printed link)')
    .addHelpText('after', '\nExamples:\n  kmirror failback dr-east --dry-run\n  kmirror failback dr-east --reason "east is back"\n  kmirror promote dr-east-reverse --all-topics    # then: the old primary is the primary again')
    .action(async (mirror: string, options: WaitOptions & { topic?: string[]; dryRun?: boolean; archiveDivergent?: boolean; discardDivergent?: boolean }) => {
      if (options.archiveDivergent === true && options.discardDivergent === true) throw new KmirrorError('INVALID_ARGUMENT', '--archive-divergent and --discard-divergent exclude each other');
      const input = {
        mirror,
        ...(options.topic ? { topics: options.topic } : {}),
        ...(options.dryRun ? { dryRun: true } : {}),
        divergent: options.discardDivergent === true ? ('discard' as const) : ('archive' as const),
        ...ctx.requester,
      };
      const result = await operate(ctx, 'failback', input, options, `failback ${mirror}`);
      if (result === undefined || ctx.json) return;
      ctx.print(
        table(
          ['TOPIC', 'PARTITION', 'LAST MIRRORED', 'OLD PRIMARY END', 'ACTION', 'WHY', 'DIVERGENT'],
          result.topics.flatMap((t) =>
            t.partitions.map((p) => [
              t.topic,
              String(p.partition),
              p.lastMirrored ?? '-',
              p.oldPrimaryEnd,
              t.action === 'recreate' ? 'recreate + full re-mirror' : 'continue',
              p.reason,
              p.divergent === null ? '' : `[${p.divergent.from}, ${p.divergent.to})${p.divergent.records === null ? '' : `: ${p.divergent.records} records ${result.dryRun ? 'would be ' : ''}${t.archiveTopic === null ? 'discarded' : 'archived'}`}`,
            ]),
          ),
        ),
      );
      for (const t of result.topics) if (t.archiveTopic !== null) ctx.print(`${t.topic}: divergent records ${result.dryRun ? 'would be archived' : 'archived'} to ${t.archiveTopic} on the old primary`);
      if (result.dryRun) ctx.print(`\ndry run, nothing changed; the reverse mirror would be ${result.reverseMirror}`);
      else ctx.print(`\nthe old primary now mirrors the new one through ${result.reverseMirror}; when its lag is 0: kmirror promote ${result.reverseMirror} --all-topics`);
    });

  const remove = new Command('delete')
    .description('delete a mirror whose every partition is STOPPED, and stop its runner (topics stay on both clusters; the history stays in the event log)')
    .argument('<mirror>', 'mirror name')
    .option('--no-wait', 'print the workflow id and return at once (before the workflow has checked the request: follow it with the printed link)')
    .addHelpText('after', '\nExample:\n  kmirror delete dr-east --reason "migration finished"')
    .action(async (mirror: string, options: WaitOptions) => {
      const result = await operate(ctx, 'deleteMirror', { mirror, ...ctx.requester }, options, `delete ${mirror}`);
      if (result !== undefined && !ctx.json) ctx.print(`mirror ${mirror} deleted`);
    });

  return [
    create,
    alter,
    start,
    change('pause', 'pauseTopics', 'pause mirroring of topics: returns once fetching has stopped; the destination keeps its log and stays read-only', 'paused'),
    change('resume', 'resumeTopics', 'resume paused topics: each partition continues from its destination end', 'resumed'),
    stop(
      'failover',
      'disaster recovery: stop mirroring and make the destination topics writable now, whether or not the source answers; reports the records left behind (RPO)',
      '  kmirror failover dr-east --all-topics --dry-run\n  kmirror failover dr-east --all-topics --reason "east region down"',
    ),
    stop(
      'promote',
      'planned switchover: wait until the destination has everything the source has (source reachable), then stop and make the topics writable: zero loss once producers have stopped',
      '  kmirror promote dr-east --all-topics --timeout 10m --reason "move to west"',
    ),
    failback,
    retry,
    remove,
  ];
}

