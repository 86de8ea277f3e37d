// `npm run stack -- up | down | status`: the whole local stack (source + destination Kafka,
// Temporal with its Web UI, Postgres, Prometheus) as native processes on loopback. Idempotent; pids recorded;
// `down` stops exactly what `up` started. Tests, CI and the demo all use this one script.
import { Command, InvalidArgumentError } from 'commander';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isKmirrorError } from '../domain/errors.ts';
import { connectionFor, formattedNodes, runningNodes, startCluster, stopCluster, wipeKafka, type ClusterName } from './stack/kafka.ts';
import { databaseUrl, postgresPid, postgresReady, startPostgres, stopPostgres, wipePostgres } from './stack/postgres.ts';
import { ensureDir } from './stack/proc.ts';
import { prometheusPid, prometheusReady, prometheusUrl, startPrometheus, stopPrometheus } from './stack/prometheus.ts';
import { ensureStackSecrets, secretFiles } from './stack/secrets.ts';
import { ensureStackTls } from './stack/tls.ts';
import { startTemporal, stopTemporal, temporalAddress, temporalPid, temporalReady, temporalUiUrl } from './stack/temporal.ts';
import { stopWorker, workerPid } from './stack/worker.ts';
import { DEST_SUPER_USER, MAX_NODES, ports, stackDir, TASK_QUEUE, type EndpointName } from './stack/topology.ts';

const parts = ['postgres', 'temporal', 'source', 'dest', 'prometheus'] as const;
type Part = (typeof parts)[number];

type NodeCounts = Record<ClusterName, number>;

function endpoints(nodes: NodeCounts): Record<EndpointName, string> {
  return {
    SOURCE_BOOTSTRAP: connectionFor('source', nodes.source).bootstrap.join(','),
    DEST_BOOTSTRAP: connectionFor('dest', nodes.dest).bootstrap.join(','),
    DEST_SECURITY_PROTOCOL: 'SASL_PLAINTEXT',
    DEST_SASL_MECHANISM: 'plain',
    DEST_SASL_USERNAME: DEST_SUPER_USER,
    DEST_SASL_PASSWORD_FILE: secretFiles.destKmirrorPassword,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_NAMESPACE: 'default',
    TEMPORAL_TASK_QUEUE: TASK_QUEUE,
    TEMPORAL_UI_URL: temporalUiUrl,
    KMIRROR_SECRET_KEY_FILE: secretFiles.kmirrorSecretKey,
  };
}

function formatEnv(env: Record<string, string>): string {
  return Object.entries(env)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');
}

function parseParts(value: string): Part[] {
  const chosen = value.split(',').map((s) => s.trim());
  for (const p of chosen) {
    if (!(parts as readonly string[]).includes(p)) throw new InvalidArgumentError(`unknown part '${p}' (parts: ${parts.join(', ')})`);
  }
  return chosen as Part[];
}

function parseNodes(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > MAX_NODES) throw new InvalidArgumentError(`must be 1..${MAX_NODES}`);
  return n;
}

/** Each cluster's nodes: as asked, else as formatted (so `up --quiet` from the test scripts does
 *  not shrink a 3-node cluster), else 1. */
const nodeCounts = (asked: Partial<NodeCounts> = {}): NodeCounts => ({
  source: asked.source ?? formattedNodes('source') ?? 1,
  dest: asked.dest ?? formattedNodes('dest') ?? 1,
});

async function up(opts: { sourceNodes?: number; destNodes?: number; quiet?: boolean; only?: Part[] }): Promise<void> {
  const log = opts.quiet ? () => {} : (line: string) => process.stderr.write(`${line}\n`);
  const started = Date.now();
  const chosen = new Set(opts.only ?? parts);
  const nodes = nodeCounts({ ...(opts.sourceNodes === undefined ? {} : { source: opts.sourceNodes }), ...(opts.destNodes === undefined ? {} : { dest: opts.destNodes }) });
  ensureDir(stackDir);
  ensureStackSecrets();
  const starts: Promise<void>[] = [];
  if (chosen.has('postgres')) starts.push(startPostgres(log));
  if (chosen.has('source')) starts.push(startCluster('source', nodes.source, log));
  if (chosen.has('dest')) starts.push(startCluster('dest', nodes.dest, log));
  if (chosen.has('temporal')) starts.push(startTemporal(log));
  if (chosen.has('prometheus')) starts.push(startPrometheus(log));
  const results = await Promise.allSettled(starts);
  const failures = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failures.length > 0) throw failures[0]!.reason;
  const env = endpoints(nodes);
  writeFileSync(join(stackDir, 'env'), `${formatEnv(env)}\n`);
  log(`stack ready in ${((Date.now() - started) / 1000).toFixed(1)} s (state in ${stackDir})`);
  if (chosen.has('prometheus')) log(`prometheus: ${prometheusUrl} (scrapes the worker's metrics at 127.0.0.1:${ports.workerMetrics})`);
  if (!opts.quiet) process.stdout.write(`${formatEnv(env)}\n`);
}

async function down(opts: { wipe?: boolean; only?: Part[] }): Promise<void> {
  if (opts.wipe && opts.only) throw new InvalidArgumentError('--wipe stops and deletes everything: it takes no --only');
  const chosen = new Set<Part>(opts.only ?? parts);
  const stopped: string[] = [];
  // The worker first: it holds connections to every other part.
  if (opts.only === undefined && (await stopWorker())) stopped.push('worker');
  const [temporal, source, dest, prometheus] = await Promise.all([
    chosen.has('temporal') ? stopTemporal() : false,
    chosen.has('source') ? stopCluster('source') : 0,
    chosen.has('dest') ? stopCluster('dest') : 0,
    chosen.has('prometheus') ? stopPrometheus() : false,
  ]);
  if (temporal) stopped.push('temporal');
  if (prometheus) stopped.push('prometheus');
  if (source) stopped.push(`kafka source (${source} node${source === 1 ? '' : 's'})`);
  if (dest) stopped.push(`kafka dest (${dest} node${dest === 1 ? '' : 's'})`);
  if (chosen.has('postgres') && stopPostgres()) stopped.push('postgres');
  process.stderr.write(stopped.length ? `stopped: ${stopped.join(', ')}\n` : 'nothing was running\n');
  if (opts.wipe) {
    wipePostgres();
    wipeKafka();
    rmSync(stackDir, { recursive: true, force: true });
    process.stderr.write(`wiped ${stackDir}\n`);
  }
}

async function status(opts: { json?: boolean }): Promise<void> {
  const nodes = nodeCounts();
  const state = {
    postgres: postgresPid() !== undefined && (await postgresReady()),
    temporal: temporalPid() !== undefined && (await temporalReady().catch(() => false)),
    source: runningNodes('source') === nodes.source,
    dest: runningNodes('dest') === nodes.dest,
    prometheus: prometheusPid() !== undefined && (await prometheusReady().catch(() => false)),
  };
  const env = endpoints(nodes);
  if (opts.json) {
    process.stdout.write(`${JSON.stringify({ parts: state, worker: workerPid() !== undefined, sourceNodes: nodes.source, destNodes: nodes.dest, endpoints: env }, null, 2)}\n`);
  } else {
    process.stdout.write(`${formatEnv(env)}\n`);
    for (const part of parts) process.stdout.write(`# ${part}: ${state[part] ? 'up' : 'down'}\n`);
    process.stdout.write(`# worker: ${workerPid() === undefined ? 'not running (npm run demo or npm start)' : 'up'}\n`);
  }
  if (!Object.values(state).every(Boolean)) process.exitCode = 3;
}

const program = new Command('stack')
  .description('The kmirror local stack: two Kafka clusters, Temporal (+ Web UI) and Postgres on 127.0.0.1')
  .showHelpAfterError();
program
  .command('up')
  .description('start every part (no-op for parts already running), wait until each answers, print endpoints as KEY=value')
  .option('--source-nodes <n>', `source brokers (1..${MAX_NODES}); default: as formatted, else 1`, parseNodes)
  .option('--dest-nodes <n>', `destination brokers (1..${MAX_NODES}); default: as formatted, else 1`, parseNodes)
  .option('--only <parts>', `comma-separated subset of: ${parts.join(', ')}`, parseParts)
  .option('--quiet', 'print nothing but errors')
  .action(up);
program
  .command('down')
  .description('stop exactly the processes `up` started (by pid); data is kept unless --wipe')
  .option('--wipe', 'also delete all stack data, logs and generated credentials')
  .option('--only <parts>', `comma-separated subset of: ${parts.join(', ')} (the worker is stopped only without it)`, parseParts)
  .action(down);
program
  .command('status')
  .description('print the endpoints and which parts are up (exit code 3 if any part is down)')
  .option('--json', 'machine-readable output')
  .action(status);

program
  .command('tls')
  .description('make the local CA and the source broker\'s TLS certificate in .stack/tls if absent (`up` does it too; docker compose mounts them), print the CA file')
  .action(() => {
    process.stdout.write(`${ensureStackTls().caFile}\n`);
  });

program.parseAsync().catch((err: unknown) => {
  if (isKmirrorError(err)) process.stderr.write(`error ${err.code}: ${err.message}\n`);
  else process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
