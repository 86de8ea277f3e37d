// Child processes for tests of the entry points (`npm start`, `npx kmirror`, cli/bin.js): collect
// their output, wait for a log line, wait for the exit.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { delimiter, join } from 'node:path';
import { projectRoot } from '../../scripts/stack/topology.ts';

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface Child {
  readonly process: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** The stderr JSON log lines parsed (non-JSON lines are skipped). */
  logs(): Record<string, unknown>[];
  /** Resolves with the first log line that matches; rejects once the process tree is gone, or after timeoutMs. */
  waitForLog(match: (entry: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** The launcher's exit status, once it and every process sharing its output have ended. */
  readonly exited: Promise<Exit>;
}

export function start(command: string, args: readonly string[], options: SpawnOptions = {}): Child {
  const child = spawn(command, [...args], { cwd: projectRoot, stdio: ['ignore', 'pipe', 'pipe'], ...options });
  let out = '';
  let err = '';
  const waiters = new Set<() => void>();
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
    for (const w of waiters) w();
  });
  let closed = false;
  // 'close', not 'exit': it fires once every process holding the output pipes is gone, so a
  // grandchild (npm → sh → tsx → node) that outlives the launcher is waited for too.
  const exited = new Promise<Exit>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      closed = true;
      resolve({ code, signal });
      for (const w of waiters) w();
    });
  });
  const logs = (): Record<string, unknown>[] =>
    err.split('\n').flatMap((line) => {
      if (!line.startsWith('{')) return [];
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  const waitForLog: Child['waitForLog'] = (match, timeoutMs = 60_000) =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const found = logs().find(match);
        if (found) {
          done();
          resolve(found);
        } else if (closed) {
          done();
          reject(new Error(`process exited (${child.exitCode ?? child.signalCode}) before the log line; stderr:\n${err}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`no matching log line within ${timeoutMs} ms; stderr:\n${err}`));
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });
  return { process: child, stdout: () => out, stderr: () => err, logs, waitForLog, exited };
}

/** Run to completion. */
export async function run(command: string, args: readonly string[], options: SpawnOptions = {}): Promise<Exit & { stdout: string; stderr: string }> {
  const child = start(command, args, options);
  const exit = await child.exited;
  return { ...exit, stdout: child.stdout(), stderr: child.stderr() };
}

/** PATH as a user's shell has it: without this checkout's node_modules/.bin, which `npm run` (and
 *  so vitest under `npm test`) puts first. */
export function userPath(): string {
  const bin = join(projectRoot, 'node_modules', '.bin');
  return (process.env.PATH ?? '')
    .split(delimiter)
    .filter((p) => p !== bin && p !== '')
    .join(delimiter);
}
