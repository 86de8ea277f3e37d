// Prometheus part of the local stack: Debian's `prometheus` on 127.0.0.1, scraping every 2 s the
// targets listed in .stack/prometheus/targets/*.json (file service discovery: a file added or
// removed is picked up without a restart). The stack's worker (KMIRROR_METRICS_PORT's default) is
// always listed; a test that runs a worker of its own adds it with addScrapeTarget. The alert rules
// in ops/prometheus-alerts.yml are loaded, so a broken rule fails the start.
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { aptInstall, ensureDir, requirePortsFree, runningPid, spawnDaemon, stopDaemon, waitUntil } from './proc.ts';
import { ports, projectRoot, stackDir } from './topology.ts';

const BINARY = '/usr/bin/prometheus';
const dir = join(stackDir, 'prometheus');
const targetsDir = join(dir, 'targets');
const pidFile = join(dir, 'prometheus.pid');
export const prometheusLog = join(dir, 'prometheus.log');
export const prometheusUrl = `http://127.0.0.1:${ports.prometheus}`;
export const ALERT_RULES_FILE = join(projectRoot, 'ops', 'prometheus-alerts.yml');
/** How often Prometheus scrapes and evaluates rules here (a developer stack: fast feedback). */
export const SCRAPE_INTERVAL = '2s';

export function prometheusPid(): number | undefined {
  return runningPid(pidFile);
}

export async function prometheusReady(): Promise<boolean> {
  const res = await fetch(`${prometheusUrl}/-/ready`, { signal: AbortSignal.timeout(2_000) });
  return res.ok;
}

/** List `address` (host:port) as a scrape target named `name` (labelled worker=<name>). */
export function addScrapeTarget(name: string, address: string): void {
  ensureDir(targetsDir);
  writeFileSync(join(targetsDir, `${name}.json`), `${JSON.stringify([{ targets: [address], labels: { worker: name } }])}\n`);
}

export function removeScrapeTarget(name: string): void {
  rmSync(join(targetsDir, `${name}.json`), { force: true });
}

function writeConfig(): string {
  const file = join(dir, 'prometheus.yml');
  const config = [
    '# Written by `stack up` (scripts/stack/prometheus.ts); edits are overwritten.',
    'global:',
    `  scrape_interval: ${SCRAPE_INTERVAL}`,
    `  evaluation_interval: ${SCRAPE_INTERVAL}`,
    'rule_files:',
    `  - ${JSON.stringify(ALERT_RULES_FILE)}`,
    'scrape_configs:',
    '  - job_name: kmirror',
    '    file_sd_configs:',
    `      - files: [${JSON.stringify(join(targetsDir, '*.json'))}]`,
    '',
  ].join('\n');
  writeFileSync(file, config);
  return file;
}

export async function startPrometheus(log: (line: string) => void): Promise<void> {
  if (prometheusPid() !== undefined && (await prometheusReady().catch(() => false))) return;
  if (!existsSync(BINARY)) aptInstall('prometheus', `Prometheus is not installed (${BINARY} missing)`, (line) => log(`prometheus: ${line}`));
  if (prometheusPid() === undefined) {
    await requirePortsFree('prometheus', [ports.prometheus]);
    ensureDir(dir);
    addScrapeTarget('stack', `127.0.0.1:${ports.workerMetrics}`);
    const config = writeConfig();
    log('prometheus: starting…');
    spawnDaemon({
      command: BINARY,
      args: [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        '--storage.tsdb.retention.time=2d',
        `--web.listen-address=127.0.0.1:${ports.prometheus}`,
      ],
      logFile: prometheusLog,
      pidFile,
    });
  }
  await waitUntil('prometheus', prometheusReady, { timeoutMs: 60_000, logFile: prometheusLog, ...(prometheusPid() === undefined ? {} : { pid: prometheusPid()! }) });
}

export async function stopPrometheus(): Promise<boolean> {
  return stopDaemon(pidFile);
}
