// The kmirror worker as a stack daemon (the demo starts it; `stack down` stops it by pid).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDir, runningPid, spawnDaemon, stopDaemon, waitUntil } from './proc.ts';
import { projectRoot, stackDir } from './topology.ts';

const workerDir = join(stackDir, 'worker');
const pidFile = join(workerDir, 'worker.pid');
export const workerLog = join(workerDir, 'worker.log');

export function workerPid(): number | undefined {
  return runningPid(pidFile);
}

/** Start `node --import tsx worker.ts` on this Node (24) unless running; wait for "worker running". */
export async function startWorker(): Promise<number> {
  const running = workerPid();
  if (running !== undefined) return running;
  ensureDir(workerDir);
  const offset = existsSync(workerLog) ? readFileSync(workerLog).length : 0;
  const pid = spawnDaemon({ command: process.execPath, args: ['--import', 'tsx', join(projectRoot, 'worker.ts')], logFile: workerLog, pidFile, cwd: projectRoot });
  await waitUntil('worker', async () => readFileSync(workerLog).subarray(offset).toString().includes('"worker running"'), { timeoutMs: 60_000, logFile: workerLog, pid });
  return pid;
}

export async function stopWorker(): Promise<boolean> {
  return stopDaemon(pidFile);
}
