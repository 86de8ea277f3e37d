// runCli in-process: help, usage errors and the error format. The same binary as a child process,
// including `npx kmirror`, is in main.int.test.ts.
import { describe, expect, it } from 'vitest';
import { buildProgram, runCli } from '../../cli/program.ts';
import { errorBody, printError } from '../../cli/output.ts';
import { KmirrorError } from '../../domain/errors.ts';
import { timeArgument } from '../../cli/commands/mirrors.ts';

async function run(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(['node', 'kmirror', ...args], { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

describe('kmirror --help', () => {
  it('describes every command and the global --json option', async () => {
    const { code, stdout } = await run('--help');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^Usage: kmirror \[options\] \[command\]/);
    expect(stdout).toContain('--json');
    const commands = buildProgram().commands;
    expect(commands.length).toBeGreaterThan(0);
    for (const command of commands) {
      expect(command.description().length, `command ${command.name()} has a description`).toBeGreaterThan(10);
      expect(stdout).toMatch(new RegExp(`^  ${command.name()}\\b`, 'm'));
    }
    expect(stdout).toMatch(/^  help \[command\]/m);
  });

  it("every command's and subcommand's help lists the options it takes from the program (--json, --actor, --reason) and has an example", async () => {
    const walk = (command: ReturnType<typeof buildProgram>, path: string[]): string[][] =>
      command.commands.flatMap((c) => (c.commands.length > 0 ? walk(c, [...path, c.name()]) : [[...path, c.name()]]));
    for (const path of walk(buildProgram(), [])) {
      const { code, stdout } = await run(...path, '--help');
      expect(code, path.join(' ')).toBe(0);
      for (const option of ['--json', '--actor <name>', '--reason <text>']) expect(stdout, `${path.join(' ')} --help lists ${option}`).toContain(option);
      expect(stdout, `${path.join(' ')} --help has an example`).toMatch(/Example/);
    }
  });

  it('help worker describes the worker command', async () => {
    const { code, stdout } = await run('help', 'worker');
    expect(code).toBe(0);
    expect(stdout).toContain('Usage: kmirror worker');
    expect(stdout).toContain('SIGINT/SIGTERM');
  });

  it('--version prints the package version', async () => {
    const { code, stdout } = await run('--version');
    expect(code).toBe(0);
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('usage errors', () => {
  it('an unknown command is INVALID_ARGUMENT, exit 2, in the common format', async () => {
    const { code, stdout, stderr } = await run('mirror-everything');
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe("error INVALID_ARGUMENT: unknown command 'mirror-everything'; see `kmirror --help`\n");
  });

  it('with --json the error is one JSON object on stdout', async () => {
    const { code, stdout, stderr } = await run('--json', 'wrker');
    expect(code).toBe(2);
    expect(stderr).toBe('');
    const body = JSON.parse(stdout) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('INVALID_ARGUMENT');
    expect(body.error.message).toContain("unknown command 'wrker'");
    expect(body.error.message).toContain('worker'); // the suggestion
  });

  it('an unknown option is INVALID_ARGUMENT', async () => {
    const { code, stderr } = await run('worker', '--bogus');
    expect(code).toBe(2);
    expect(stderr).toMatch(/^error INVALID_ARGUMENT: unknown option '--bogus'/);
  });

  it('a value outside an option\'s choices is INVALID_ARGUMENT naming the choices', async () => {
    const { code, stderr } = await run('create', 'm', '--source', 'a', '--destination', 'b', '--on-records-lost', 'skip');
    expect(code).toBe(2);
    expect(stderr).toMatch(/^error INVALID_ARGUMENT: .*'skip' is invalid.*continue, fail/);
  });

  it('offsets-for-time takes an ISO-8601 date-time with a zone or epoch milliseconds, and refuses anything else before reading', async () => {
    expect(timeArgument('2026-12-07T10:00:00Z')).toBe(BigInt(Date.UTC(2026, 11, 7, 10)));
    expect(timeArgument('2026-12-07T11:00:00.250+01:00')).toBe(BigInt(Date.UTC(2026, 11, 7, 10) + 250));
    expect(timeArgument('1796637600000')).toBe(1796637600000n);
    expect(timeArgument('2026-12-07T10:00-05:30')).toBe(BigInt(Date.UTC(2026, 11, 7, 15, 30)));
    expect(timeArgument('8640000000000000')).toBe(8640000000000000n);
    for (const bad of ['yesterday', '2026-12-07', '2026-12-07T10:00:00', '2026-13-07T10:00:00Z', '2026-02-30T10:00:00Z', '2026-12-07T24:00:00Z', '2026-12-07T10:00:00+25:00', '-5', '1e12', '8640000000000001', '99999999999999999999']) {
      const { code, stderr } = await run('offsets-for-time', 'm', '--time', bad);
      expect(code, bad).toBe(2);
      expect(stderr, bad).toMatch(/^error INVALID_ARGUMENT: .*--time/);
    }
    const { code, stderr } = await run('offsets-for-time', 'm');
    expect(code).toBe(2);
    expect(stderr).toMatch(/^error INVALID_ARGUMENT: .*--time <time>/);
  });

  it('alter needs a filter option, and an include with its own --no-…-sync is refused, before anything is started', async () => {
    for (const [args, message] of [
      [['alter', 'm'], /alter needs at least one of --group-include/],
      [['alter', 'm', '--acl-include', 'User:.*', '--no-acl-sync'], /--no-acl-sync excludes --acl-include and --acl-exclude/],
      [['alter', 'm', '--acl-exclude', 'User:x', '--no-acl-sync'], /--no-acl-sync excludes/],
      [['alter', 'm', '--group-include', '.*', '--no-group-sync'], /--no-group-sync excludes --group-include and --group-exclude/],
    ] as const) {
      const { code, stderr } = await run(...args);
      expect(code, args.join(' ')).not.toBe(0);
      expect(stderr).toMatch(new RegExp(`^error INVALID_ARGUMENT: ${message.source}`));
    }
  });

  it('retry --accept-records-lost without --reason is refused before anything is started', async () => {
    const { code, stderr } = await run('retry', 'm', '--accept-records-lost');
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/^error INVALID_ARGUMENT: --accept-records-lost needs --reason TEXT/);
  });
});

describe('printError', () => {
  it('prints a KmirrorError with its code', () => {
    let err = '';
    printError(new KmirrorError('TEMPORAL_UNREACHABLE', 'cannot connect'), { json: false, output: { stdout: () => {}, stderr: (t) => (err += t) } });
    expect(err).toBe('error TEMPORAL_UNREACHABLE: cannot connect\n');
  });

  it('reports anything else as INTERNAL, with credentials redacted', () => {
    expect(errorBody(new Error('connect postgres://u:hunter2@h/db failed'))).toEqual({ code: 'INTERNAL', message: 'connect postgres://u:[redacted]@h/db failed' });
    expect(errorBody('plain string')).toEqual({ code: 'INTERNAL', message: 'plain string' });
  });
});
