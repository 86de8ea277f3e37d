// Runs scripts/copy-topic.ts in a child process (for tests that kill it and for the benchmarks,
// which measure it from outside the way they measure MirrorMaker 2).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { CopyTopicArgs } from './copy-topic.ts';
import { projectRoot } from './stack/topology.ts';

export interface CopyTopicExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** The JSON lines the child printed ({"event":"started"}, {"event":"done", …}). */
  readonly events: Record<string, unknown>[];
  /** Its stderr, then any other line it printed on stdout (Node diagnostics such as --trace-gc). */
  readonly stderr: string;
}

export interface CopyTopicProcess {
  readonly pid: number;
  /** Resolves once the child has connected and is about to copy (or has exited). */
  readonly started: Promise<void>;
  readonly done: Promise<CopyTopicExit>;
}

export function runCopyTopic(args: CopyTopicArgs, nodeFlags: readonly string[] = []): CopyTopicProcess {
  const child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', join(projectRoot, 'scripts/copy-topic.ts'), JSON.stringify(args)], {
    cwd: projectRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let markStarted: () => void = () => {};
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.includes('"event":"started"')) markStarted();
  });
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const done = new Promise<CopyTopicExit>((resolve) =>
    child.on('close', (code, signal) => {
      markStarted();
      const lines = out.split('\n').filter(Boolean);
      const isEvent = (line: string): boolean => line.startsWith('{');
      const diagnostics = lines.filter((line) => !isEvent(line)).join('\n');
      const events = lines.filter(isEvent).map((line) => JSON.parse(line) as Record<string, unknown>);
      resolve({ code, signal, stderr: diagnostics === '' ? err : `${err}${diagnostics}\n`, events });
    }),
  );
  return { pid: child.pid!, started, done };
}
