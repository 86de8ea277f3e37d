// The `kmirror` command line: clusters, mirror operations (each a Temporal workflow), read commands
// over the event store, and the worker. Commands only parse, call client/ or db/ read models, and
// print (cli/context.ts opens what they need and closes it after).
//
// Exit codes: 0 success, 1 a failure reported as `error <CODE>: <message>` (with --json as
// {"error":{"code","message"}} on stdout), 2 a usage error (USAGE_CODES: the request's own shape).
import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import { isKmirrorError, KmirrorError } from '../domain/errors.ts';
import { clusterCommand } from './commands/cluster.ts';
import { aclCommand } from './commands/acl.ts';
import { importMm2Command } from './commands/import-mm2.ts';
import { mirrorCommands } from './commands/mirrors.ts';
import { operationCommands } from './commands/operations.ts';
import { CliContext, type GlobalOptions } from './context.ts';
import { printError, processOutput, type Output } from './output.ts';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

const environmentHelp = `
Configuration comes from environment variables (every one is described in .env.example):
  TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE   where the worker polls
  DATABASE_URL                                                the event store
  KMIRROR_SECRET_KEY[_FILE]                                   key for stored cluster credentials
  KMIRROR_LOG_LEVEL                                           debug | info | warn | error
  TEMPORAL_UI_URL                                             printed in workflow links
Variables not set in the environment are read from KMIRROR_ENV_FILE, by default the local
stack's .stack/env (written by \`npm run stack -- up\`). The environment always wins.

Exit codes: 0 ok, 1 error (printed as "error <CODE>: <message>"), 2 usage error
(INVALID_ARGUMENT, INVALID_CLUSTER_MIRROR_NAME, INVALID_TOPIC_PATTERN).
With --json, errors are printed on stdout as {"error":{"code":"<CODE>","message":"…"}}.`;

/** Refusals of a request for its own shape (a bad option, name or pattern): exit 2. */
const USAGE_CODES = ['INVALID_ARGUMENT', 'INVALID_CLUSTER_MIRROR_NAME', 'INVALID_TOPIC_PATTERN'] as const;

export function buildProgram(output: Output = processOutput, context?: (ctx: CliContext) => void): Command {
  const program: Command = new Command('kmirror')
    .description('Offset-preserving, KIP-1279-style cluster mirroring for stock Apache Kafka')
    .version(pkg.version, '-V, --version', 'print the kmirror version')
    .option('--json', 'machine-readable output (errors as {"error":{"code","message"}} on stdout)')
    .option('--actor <name>', 'who asks, recorded in the events (default: the OS user)')
    .option('--reason <text>', 'why, recorded in the events')
    .helpOption('-h, --help', 'show help for kmirror or a command')
    .helpCommand('help [command]', 'show help for a command')
    .addHelpText('after', environmentHelp)
    // Every command's help lists --json, --actor and --reason, which it takes too.
    .configureHelp({ showGlobalOptions: true })
    .showSuggestionAfterError()
    .exitOverride()
    .configureOutput({
      writeOut: output.stdout,
      writeErr: output.stderr,
      // Usage errors are reported by runCli in the common error format instead.
      outputError: () => {},
    });

  const ctx = new CliContext(output, () => program.opts<GlobalOptions>());
  context?.(ctx);
  // Commands built apart take the program's settings (exit override, output, help option), so
  // their usage errors are reported in the common format like the program's own.
  const inherit = (command: Command): Command => {
    command.copyInheritedSettings(program);
    for (const sub of command.commands) inherit(sub);
    return command;
  };
  for (const command of [clusterCommand(ctx), aclCommand(ctx), ...operationCommands(ctx), ...mirrorCommands(ctx), importMm2Command(ctx)]) program.addCommand(inherit(command));
  // Every command's clients are closed after it, whatever happened.
  program.hook('postAction', () => ctx.close());

  program
    .command('worker')
    .description(
      'run the Temporal worker on TEMPORAL_TASK_QUEUE (default kmirror) until SIGINT/SIGTERM; same as `npm start`',
    )
    .addHelpText('after', '\nExample:\n  kmirror worker        # run several, on several machines: copies spread across them')
    .action(async () => {
      // Loaded on use: the Temporal worker and its native bridge are not needed for --help.
      const { workerMain } = await import('../worker.ts');
      await workerMain();
    });

  return program;
}

/** Parse and run; returns the exit code instead of exiting, so tests can call it in-process. */
export async function runCli(argv: readonly string[], output: Output = processOutput): Promise<number> {
  let ctx: CliContext | undefined;
  const program = buildProgram(output, (c) => (ctx = c));
  try {
    await program.parseAsync([...argv]);
    return ctx?.exitCode ?? 0;
  } catch (err) {
    await ctx?.close();
    const json = program.opts<GlobalOptions>().json ?? argv.includes('--json');
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
      // `kmirror` alone prints the help (to stderr) and exits 1, as commander does.
      if (err.code === 'commander.help') return err.exitCode;
      const message = `${err.message.replace(/^error: /, '').replaceAll('\n', ' ')}; see \`kmirror --help\``;
      printError(new KmirrorError('INVALID_ARGUMENT', message), { json, output });
      return 2;
    }
    printError(err, { json, output });
    // A request refused for its own shape is a usage error, wherever it was noticed.
    return USAGE_CODES.some((code) => isKmirrorError(err, code)) ? 2 : 1;
  }
}
