// Process plumbing for the local stack: detached daemons with pid files, readiness polling, and
// stopping exactly the processes we started.
import { spawn, spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { KmirrorError } from '../../domain/errors.ts';

export function prerequisite(message: string): KmirrorError {
  return new KmirrorError('STACK_PREREQUISITE_MISSING', message);
}

/**
 * Install a Debian package with apt-get (the local stack's servers come from Debian: postgresql,
 * prometheus). Only as root on a machine with apt-get; otherwise STACK_PREREQUISITE_MISSING
 * naming the package and `why` (what is missing).
 */
export function aptInstall(pkg: string, why: string, log: (line: string) => void): void {
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) {
    throw prerequisite(`${why}: install Debian's "${pkg}" package, or run \`stack up\` as root so it can`);
  }
  log(`installing Debian package "${pkg}" (apt-get)…`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  run('apt-get', ['update', '-qq'], { env });
  run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', pkg], { env });
}

/** Resolve an executable on PATH, or fail naming it and how to get it. */
export function requireCommand(command: string, hint: string): string {
  const found = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' });
  const path = found.stdout.trim();
  if (found.status !== 0 || path === '') throw prerequisite(`'${command}' not found on PATH: ${hint}`);
  return path;
}

/** Run a command to completion; throw with its output when it fails. */
export function run(command: string, args: readonly string[], options: SpawnSyncOptions = {}): string {
  const result = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...options });
  if (result.error) throw result.error;
  if (result.status !== 0) {
    const output = `${String(result.stdout ?? '')}${String(result.stderr ?? '')}`.trim().split('\n').slice(-30).join('\n');
    throw new Error(`${command} ${args.join(' ')} exited with ${String(result.status)}:\n${output}`);
  }
  return String(result.stdout ?? '');
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function readPid(pidFile: string): number | undefined {
  if (!existsSync(pidFile)) return undefined;
  const pid = Number.parseInt(readFileSync(pidFile, 'utf8').split('\n')[0] ?? '', 10);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** The pid recorded in pidFile if that process is still running. */
export function runningPid(pidFile: string): number | undefined {
  const pid = readPid(pidFile);
  return pid !== undefined && pidAlive(pid) ? pid : undefined;
}

/** Start a long-running process in its own process group, output to logFile, pid to pidFile. */
export function spawnDaemon(opts: {
  command: string;
  args: readonly string[];
  logFile: string;
  pidFile: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}): number {
  const log = openSync(opts.logFile, 'a');
  const child = spawn(opts.command, opts.args, {
    detached: true,
    stdio: ['ignore', log, log],
    env: opts.env ?? process.env,
    cwd: opts.cwd,
  });
  if (child.pid === undefined) throw new Error(`could not start ${opts.command}`);
  child.unref();
  writeFileSync(opts.pidFile, `${child.pid}\n`);
  return child.pid;
}

/** SIGTERM the process group we started, wait, then SIGKILL; remove the pid file. */
export async function stopDaemon(pidFile: string, graceMs = 20_000): Promise<boolean> {
  const pid = runningPid(pidFile);
  if (pid === undefined) {
    rmSync(pidFile, { force: true });
    return false;
  }
  const signalGroup = (signal: NodeJS.Signals): void => {
    try {
      process.kill(-pid, signal);
    } catch {
      try {
        process.kill(pid, signal);
      } catch {
        /* already gone */
      }
    }
  };
  signalGroup('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (pidAlive(pid) && Date.now() < deadline) await sleep(100);
  if (pidAlive(pid)) signalGroup('SIGKILL');
  while (pidAlive(pid)) await sleep(50);
  rmSync(pidFile, { force: true });
  return true;
}

export function portOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const socket = createConnection({ port, host });
    socket.setTimeout(1000);
    socket.once('connect', () => {
      socket.destroy();
      resolvePromise(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolvePromise(false);
    });
    socket.once('error', () => resolvePromise(false));
  });
}

/** True when nothing listens on the port and we could bind it. */
export function portFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const server = createServer();
    server.once('error', () => resolvePromise(false));
    server.listen(port, host, () => server.close(() => resolvePromise(true)));
  });
}

export async function requirePortsFree(part: string, portsToCheck: readonly number[]): Promise<void> {
  for (const port of portsToCheck) {
    if (!(await portFree(port))) {
      throw prerequisite(`port 127.0.0.1:${port} needed by ${part} is taken by another process (not started by this stack)`);
    }
  }
}

/** Poll until check() is true; on timeout fail with the tail of the part's log. */
export async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  opts: { timeoutMs: number; logFile?: string; pid?: number },
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (opts.pid !== undefined && !pidAlive(opts.pid)) {
      throw new Error(`${what} exited during start-up${logTail(opts.logFile)}`);
    }
    if (Date.now() > deadline) throw new Error(`${what} not ready after ${opts.timeoutMs} ms${logTail(opts.logFile)}`);
    await sleep(250);
  }
}

function logTail(logFile: string | undefined): string {
  if (logFile === undefined || !existsSync(logFile)) return '';
  const lines = readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-25).join('\n');
  return `\n--- last lines of ${logFile} ---\n${lines}`;
}

export function ensureDir(path: string, mode?: number): string {
  mkdirSync(path, { recursive: true, ...(mode === undefined ? {} : { mode }) });
  return path;
}
