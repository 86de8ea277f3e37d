// The `kmirror` binary as a user runs it: `npx kmirror …` from the checkout with the shell's PATH
// (not npm's), and cli/bin.js started by an older Node, which must re-run itself on the project's.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { run, userPath } from '../support/child.ts';
import { closedPort } from '../support/stack.ts';

/** The environment of a user's shell with nothing of kmirror's configuration in it. */
function shellEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = { PATH: userPath(), HOME: process.env.HOME ?? '/root', KMIRROR_ENV_FILE: '/dev/null' };
  for (const name of ['TMPDIR', 'LANG', 'npm_config_cache']) if (process.env[name] !== undefined) env[name] = process.env[name]!;
  return { ...env, ...extra };
}

/** A `node` on the user's PATH older than 24, if there is one (the machine's Node 20 here). */
function olderNode(): string | undefined {
  try {
    const path = execFileSync('sh', ['-c', 'command -v node'], { env: { PATH: userPath() }, encoding: 'utf8' }).trim();
    const major = Number(execFileSync(path, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }).trim());
    return major < 24 ? path : undefined;
  } catch {
    return undefined;
  }
}

const config = { DATABASE_URL: 'postgres://kmirror@127.0.0.1:25432/kmirror', KMIRROR_SECRET_KEY: Buffer.alloc(32, 1).toString('base64') };

describe('npx kmirror', () => {
  it('--help prints the usage with every command', async () => {
    const result = await run('npx', ['kmirror', '--help'], { env: shellEnv() });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^Usage: kmirror \[options\] \[command\]/);
    expect(result.stdout).toMatch(/^ {2}worker +run the Temporal worker/m);
    expect(result.stdout).toContain('--json');
    expect(result.stdout).toContain('.env.example');
  });

  it('an unknown command exits 2 with error INVALID_ARGUMENT', async () => {
    const result = await run('npx', ['kmirror', 'nosuch'], { env: shellEnv() });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^error INVALID_ARGUMENT: unknown command 'nosuch'/m);
  });

  it('worker without DATABASE_URL fails with INVALID_CONFIG naming it', async () => {
    const result = await run('npx', ['kmirror', 'worker'], { env: shellEnv() });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error INVALID_CONFIG: DATABASE_URL \(or DATABASE_URL_FILE\) is not set$/m);
  });

  it('worker against a Temporal that is not there fails with TEMPORAL_UNREACHABLE; --json puts it on stdout', async () => {
    const address = `127.0.0.1:${await closedPort()}`;
    const env = shellEnv({ ...config, TEMPORAL_ADDRESS: address });
    const human = await run('npx', ['kmirror', 'worker'], { env });
    expect(human.code).toBe(1);
    expect(human.stderr).toMatch(new RegExp(`^error TEMPORAL_UNREACHABLE: cannot connect to Temporal at ${address} \\(`, 'm'));

    const json = await run('npx', ['kmirror', '--json', 'worker'], { env });
    expect(json.code).toBe(1);
    const body = JSON.parse(json.stdout) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('TEMPORAL_UNREACHABLE');
    expect(body.error.message).toContain(address);
    expect(json.stderr).not.toMatch(/^error /m);
  });
});

describe('cli/bin.js', () => {
  it('on the project Node, runs in-process', async () => {
    const result = await run(process.execPath, ['cli/bin.js', '--version'], { env: shellEnv() });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  const older = olderNode();
  it.skipIf(older === undefined)(`started by an older Node (${older ?? 'none on PATH'}), re-runs itself on the project's Node 24`, async () => {
    const result = await run(older!, ['cli/bin.js', '--help'], { env: shellEnv() });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^Usage: kmirror/);
    // The exit status of the re-run child is passed through.
    const failed = await run(older!, ['cli/bin.js', 'nosuch'], { env: shellEnv() });
    expect(failed.code).toBe(2);
    expect(failed.stderr).toMatch(/^error INVALID_ARGUMENT: unknown command 'nosuch'/m);
  });
});
