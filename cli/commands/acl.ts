// `kmirror acl add | remove | list`: the ClusterMirror grants (domain/authorization.ts) checked by
// every operation workflow when KMIRROR_AUTHORIZATION is on. Granting is an administrator's act:
// it writes to the database directly (like `cluster add`), so whoever holds DATABASE_URL administers
// the grants; workflow starts — from this CLI or from the Temporal UI — are what is checked.
import { Command, Option } from 'commander';
import { changeGrant, loadGrants } from '../../db/acl-store.ts';
import { ACL_OPERATIONS, assertGrant, type AclGrant, type AclOperation } from '../../domain/authorization.ts';
import { KmirrorError } from '../../domain/errors.ts';
import type { CliContext } from '../context.ts';
import { table } from '../render.ts';

interface GrantOptions {
  principal: string;
  operation: AclOperation[];
  mirror?: string;
  topic?: string;
}

/** One grant per operation, on the mirror or the topic the options name. */
function grantsOf(options: GrantOptions): AclGrant[] {
  if ((options.mirror === undefined) === (options.topic === undefined)) throw new KmirrorError('INVALID_ARGUMENT', 'name the resource: --mirror NAME|* or --topic NAME|* (one of them)');
  const grants = options.operation.map(
    (operation): AclGrant =>
      options.mirror !== undefined
        ? { principal: options.principal, operation, resourceType: 'CLUSTER_MIRROR', resource: options.mirror }
        : { principal: options.principal, operation, resourceType: 'TOPIC', resource: options.topic! },
  );
  for (const g of grants) assertGrant(g);
  return grants;
}

const describeGrant = (g: AclGrant): string => `${g.principal} ${g.operation} ${g.resourceType} ${g.resource}`;

export function aclCommand(ctx: CliContext): Command {
  const acl = new Command('acl')
    .description('grant and revoke who may run which operation on which mirror and topic (checked when KMIRROR_AUTHORIZATION=true)')
    .addHelpText(
      'after',
      [
        '',
        'Operations: CREATE, ALTER, DESCRIBE, DELETE on a mirror (--mirror NAME or *); READ on a topic (--topic NAME or *).',
        'start/pause/resume/failover/promote/failback/retry need ALTER on the mirror and READ on each topic they touch',
        '(a start by --include pattern: READ on *); create needs CREATE, delete needs DELETE. The principal is the',
        "request's actor (--actor; default the OS user; `temporal-ui` for a UI start without one); * is every principal.",
        '',
        'Example:',
        '  kmirror acl add --principal alice --operation ALTER --operation DESCRIBE --mirror dr-east',
        '  kmirror acl add --principal alice --operation READ --topic orders',
        '  kmirror acl list --principal alice',
      ].join('\n'),
    );

  const operationOption = () =>
    new Option('--operation <operation>', 'operation granted (repeat for several)')
      .choices([...ACL_OPERATIONS])
      .argParser((value: string, previous: AclOperation[] | undefined) => {
        if (!(ACL_OPERATIONS as readonly string[]).includes(value)) throw new KmirrorError('INVALID_ARGUMENT', `--operation must be one of ${ACL_OPERATIONS.join(', ')}, got ${value}`);
        return [...(previous ?? []), value as AclOperation];
      })
      .makeOptionMandatory();

  for (const [name, type, verb] of [
    ['add', 'GrantAcl', 'granted'],
    ['remove', 'RevokeAcl', 'revoked'],
  ] as const) {
    acl
      .command(name)
      .description(name === 'add' ? 'grant operations to a principal (a grant that exists is left as it is)' : 'revoke grants (one that does not exist is reported, nothing changes)')
      .requiredOption('--principal <name>', 'who (the actor of requests), or * for everyone')
      .addOption(operationOption())
      .option('--mirror <name>', 'the mirror, or * for every mirror')
      .option('--topic <name>', 'the topic (READ), or * for every topic')
      .addHelpText('after', `\nExample:\n  kmirror acl ${name} --principal alice --operation ALTER --mirror dr-east`)
      .action(async (options: GrantOptions) => {
        const grants = grantsOf(options);
        const db = await ctx.db();
        const results: { grant: string; changed: boolean }[] = [];
        for (const grant of grants) {
          const result = await changeGrant(db, type, grant, ctx.requester);
          results.push({ grant: describeGrant(grant), changed: result.events > 0 });
        }
        if (ctx.json) return ctx.printJson({ [verb]: results.filter((r) => r.changed).map((r) => r.grant), unchanged: results.filter((r) => !r.changed).map((r) => r.grant) });
        ctx.print(results.map((r) => (r.changed ? `${verb}: ${r.grant}` : `unchanged (${name === 'add' ? 'already granted' : 'not granted'}): ${r.grant}`)).join('\n'));
      });
  }

  acl
    .command('list')
    .description('list the grants')
    .option('--principal <name>', 'only this principal')
    .option('--mirror <name>', 'only grants on this mirror (and *)')
    .addHelpText('after', '\nExample:\n  kmirror acl list --principal alice --json')
    .action(async (options: { principal?: string; mirror?: string }) => {
      const { state } = await loadGrants(await ctx.db());
      const shown = state.filter(
        (g) => (options.principal === undefined || g.principal === options.principal) && (options.mirror === undefined || (g.resourceType === 'CLUSTER_MIRROR' && (g.resource === options.mirror || g.resource === '*'))),
      );
      if (ctx.json) return ctx.printJson({ authorization: ctx.config.authorization, grants: shown });
      const note = ctx.config.authorization ? '' : '\n(KMIRROR_AUTHORIZATION is off: these grants are not checked)';
      if (shown.length === 0) return ctx.print(`no grants${note}`);
      ctx.print(`${table(['PRINCIPAL', 'OPERATION', 'RESOURCE TYPE', 'RESOURCE'], shown.map((g) => [g.principal, g.operation, g.resourceType, g.resource]))}${note}`);
    });

  return acl;
}
