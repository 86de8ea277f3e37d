// The worker's two entry points against the stack's real Temporal server: start it, run the ping
// workflow through @temporalio/client on a task queue of its own, stop it with a signal, and check
// that it stopped cleanly and logged no credential.
import { Client, Connection } from '@temporalio/client';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pidAlive } from '../scripts/stack/proc.ts';
import type { PingResult } from '../workflows/ping.ts';
import { start, type Child, type Exit } from './support/child.ts';
import { randomName, stackEnv } from './support/stack.ts';

let connection: Connection;
let client: Client;
const started: Child[] = [];

beforeAll(async () => {
  connection = await Connection.connect({ address: stackEnv().TEMPORAL_ADDRESS! });
  client = new Client({ connection, namespace: stackEnv().TEMPORAL_NAMESPACE! });
});

afterAll(async () => {
  // A failed test must not leave a worker polling: each child leads its own process group.
  for (const child of started) {
    try {
      process.kill(-child.process.pid!, 'SIGKILL');
    } catch {
      // the group is gone already
    }
  }
  await connection?.close();
});

/** The stack's secrets, in every form the worker holds them: none may appear in its output. */
function stackSecrets(): string[] {
  const env = stackEnv();
  const read = (file: string): string => readFileSync(file, 'utf8').trim();
  const key = Buffer.from(read(env.KMIRROR_SECRET_KEY_FILE!), 'base64');
  return [read(env.DEST_SASL_PASSWORD_FILE!), read(env.KMIRROR_SECRET_KEY_FILE!), key.toString('base64'), key.toString('base64url'), key.toString('hex')];
}

async function pingThrough(taskQueue: string): Promise<void> {
  const message = randomName('hello');
  const result = await client.workflow.execute('ping', { taskQueue, workflowId: randomName('ping'), args: [{ message }], workflowExecutionTimeout: '60 seconds' });
  expect(result).toEqual({ message, activityTaskQueue: taskQueue } satisfies PingResult);
  // A malformed input is refused by the workflow itself, as a non-retryable INVALID_ARGUMENT.
  const failure = await client.workflow
    .execute('ping', { taskQueue, workflowId: randomName('ping'), args: [{}], workflowExecutionTimeout: '60 seconds' })
    .then(
      () => undefined,
      (err: unknown) => err as { cause?: { type?: string; nonRetryable?: boolean } },
    );
  expect(failure?.cause).toMatchObject({ type: 'INVALID_ARGUMENT', nonRetryable: true });
}

/** How a test stops the worker: a signal to the process, or to its whole process group (what a
 *  terminal's Ctrl-C and a service manager do). */
type Stop = { signal: NodeJS.Signals; to: 'process' | 'group' };

/** Start, wait until polling, ping, signal, and check the clean stop; returns the launcher's exit. */
async function exercise(command: string, args: string[], stop: Stop): Promise<Exit> {
  const taskQueue = randomName('worker-test');
  // The stack's endpoints come from .stack/env through the worker's own env-file loading; only the
  // task queue (and the log level, so every debug line is checked for secrets) is set explicitly.
  const child = start(command, args, { detached: true, env: { ...process.env, TEMPORAL_TASK_QUEUE: taskQueue, KMIRROR_LOG_LEVEL: 'debug' } });
  started.push(child);
  const running = await child.waitForLog((e) => e.msg === 'worker running' && e.taskQueue === taskQueue);
  const workerPid = running.pid as number;
  expect(running.address).toBe(stackEnv().TEMPORAL_ADDRESS);

  await pingThrough(taskQueue);

  process.kill(stop.to === 'group' ? -child.process.pid! : child.process.pid!, stop.signal);
  // Bounded, so a worker that does not exit fails with what it last logged, not a bare test timeout.
  const exit = await Promise.race([
    child.exited,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`worker still running 60 s after ${stop.signal}; its last log lines:\n${child.logs().slice(-10).map((e) => JSON.stringify(e)).join('\n')}`)), 60_000).unref(),
    ),
  ]);
  const logs = child.logs();
  expect(logs.find((e) => e.msg === 'shutting down')?.signal).toBe(stop.signal);
  expect(logs.some((e) => e.msg === 'worker stopped' && e.taskQueue === taskQueue)).toBe(true);
  expect(logs.filter((e) => e.level === 'error')).toEqual([]);
  expect(pidAlive(workerPid)).toBe(false);

  const printed = child.stdout() + child.stderr();
  // Not toContain: a failure message must not print the secret either.
  for (const [i, secret] of stackSecrets().entries()) expect(printed.includes(secret), `stack secret #${i} in the output`).toBe(false);
  return exit;
}

describe('worker', () => {
  it('npm start runs workflows on the task queue and stops cleanly on SIGTERM to its process group', async () => {
    // npm re-raises the signal on itself; the worker's own clean stop is what the logs show. (A
    // SIGTERM to npm's pid alone does not reach the worker: npm's `sh -c` does not pass it on, so
    // supervisors should run `node --import tsx worker.ts` or `kmirror worker`, tested below.)
    const exit = await exercise('npm', ['start'], { signal: 'SIGTERM', to: 'group' });
    expect(exit.code === 0 || exit.signal === 'SIGTERM').toBe(true);
  });

  it('node --import tsx worker.ts (the Docker image command) exits 0 on SIGTERM', async () => {
    expect(await exercise(process.execPath, ['--import', 'tsx', 'worker.ts'], { signal: 'SIGTERM', to: 'process' })).toEqual({ code: 0, signal: null });
  });

  it('kmirror worker (cli/bin.js) exits 0 on SIGINT', async () => {
    expect(await exercise(process.execPath, ['cli/bin.js', 'worker'], { signal: 'SIGINT', to: 'process' })).toEqual({ code: 0, signal: null });
  });
});
