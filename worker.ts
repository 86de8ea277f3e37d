// The kmirror worker: a Temporal worker on the configured task queue (`kmirror`) that runs the
// workflows in workflows/index.ts and the activities composed below. `npm start` runs this file;
// `kmirror worker` calls workerMain() in-process.
//
// Lifecycle contract: SIGINT or SIGTERM starts a graceful shutdown (stop polling, let running
// activities finish for SHUTDOWN_GRACE, then cancel them); further signals are ignored while it
// runs, and SHUTDOWN_FORCE bounds it. A clean stop resolves (exit code 0); a failure to connect or a
// worker crash rejects with a KmirrorError.
import { NativeConnection, Runtime, TransportError, Worker, type LogLevel as TemporalLogLevel, type Logger as TemporalLogger, type LogMetadata } from '@temporalio/worker';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { hostname } from 'node:os';
import { createActivities } from './activities/index.ts';
import { ClusterClients } from './activities/cluster-clients.ts';
import { loadConfig, withEnvFile, type Config, type Env } from './config.ts';
import { createDatabase } from './db/connect.ts';
import { migrateToLatest } from './db/migrate.ts';
import { ByteBudget } from './kafka/budget.ts';
import { KmirrorError } from './domain/errors.ts';
import { printError } from './errors-output.ts';
import { createLogger, type Logger } from './log.ts';
import { bundleWorkflows } from './workflow-bundle.ts';
import { Metrics, serveMetrics, type MetricsServer } from './metrics/metrics.ts';
import { listMirrors } from './db/projections/describe-mirror.ts';
import type { OperationSinks } from './workflows/interceptors.ts';
import type { InjectedSinks } from '@temporalio/worker';

const SHUTDOWN_GRACE = '10 seconds';
const SHUTDOWN_FORCE = '30 seconds';
const SHUTDOWN_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/** The Temporal SDK's logger interface over ours (SDK and workflow/activity context logs). */
function temporalLogger(log: Logger): TemporalLogger {
  const levels: Record<TemporalLogLevel, (msg: string, meta?: LogMetadata) => void> = {
    TRACE: (msg, meta) => log.debug(msg, meta),
    DEBUG: (msg, meta) => log.debug(msg, meta),
    INFO: (msg, meta) => log.info(msg, meta),
    WARN: (msg, meta) => log.warn(msg, meta),
    ERROR: (msg, meta) => log.error(msg, meta),
  };
  return {
    log: (level, msg, meta) => levels[level](msg, meta),
    trace: levels.TRACE,
    debug: levels.DEBUG,
    info: levels.INFO,
    warn: levels.WARN,
    error: levels.ERROR,
  };
}

/** Summarise the core bridge's transport error (a Rust debug string) for an operator. */
function unreachable(address: string, err: Error): KmirrorError {
  const os = /message: "([^"]+)"/.exec(err.message)?.[1];
  const reason = os ?? err.message;
  return new KmirrorError(
    'TEMPORAL_UNREACHABLE',
    `cannot connect to Temporal at ${address} (${reason}); is it running? \`npm run stack -- up\` starts the local one`,
    { address },
    { cause: err },
  );
}

/** Run the worker until a shutdown signal (or a fatal worker error). */
export async function runWorker(config: Config, log: Logger): Promise<void> {
  const { address, namespace, taskQueue } = config.temporal;
  // Core (Rust) logs are forwarded to our logger too, so nothing bypasses redaction.
  Runtime.install({
    logger: temporalLogger(log.child({ component: 'temporal' })),
    shutdownSignals: [],
    telemetryOptions: { logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} } },
  });
  let connection: NativeConnection;
  try {
    connection = await NativeConnection.connect({ address });
  } catch (err) {
    if (err instanceof TransportError) throw unreachable(address, err);
    throw err;
  }
  const built = await createWorker(config, connection, log).catch(async (err: unknown) => {
    await connection.close();
    throw err;
  });
  let server: MetricsServer | undefined;
  try {
    const { host, port } = config.metrics;
    if (port > 0) {
      server = await serveMetrics(built.metrics, host, port).catch((err: NodeJS.ErrnoException) => {
        throw new KmirrorError('INVALID_CONFIG', `cannot serve metrics on ${host}:${port} (${err.code ?? err.message}): set KMIRROR_METRICS_PORT to a free port, or 0 for none`, { host, port }, { cause: err });
      });
      log.info('metrics served', { url: `http://${host}:${port}/metrics` });
    }
    const worker = built.worker;
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals): void => {
      if (stopping) {
        log.debug('shutdown already in progress', { signal });
        return;
      }
      stopping = true;
      log.info('shutting down', { signal });
      worker.shutdown();
    };
    for (const s of SHUTDOWN_SIGNALS) process.on(s, onSignal);
    try {
      log.info('worker running', { address, namespace, taskQueue });
      await worker.run();
    } finally {
      for (const s of SHUTDOWN_SIGNALS) process.off(s, onSignal);
    }
    log.info('worker stopped', { taskQueue });
  } finally {
    await server?.close();
    await built.close();
    await connection.close();
  }
}

/**
 * A worker over `connection` with every workflow and activity, and what its activities need: the
 * database (migrated to the latest schema), the cluster clients (connections unsealed with the
 * secret key) and the byte budget. close() releases them once the worker has stopped. Tests build
 * their workers with this too.
 */
export async function createWorker(
  config: Config,
  connection: NativeConnection,
  log: Logger,
  options: { readonly taskQueue?: string; readonly identity?: string } = {},
): Promise<{ readonly worker: Worker; readonly metrics: Metrics; close(): Promise<void> }> {
  const db = createDatabase(config.databaseUrl);
  const clients = new ClusterClients(db, config.secretKey);
  try {
    await migrateToLatest(db);
    const identity = options.identity ?? `${process.pid}@${hostname()}`;
    const budget = new ByteBudget(config.dataPlane.budgetBytes);
    const metrics = new Metrics({ partitionSeries: config.metrics.partitionSeries, budget, partitionStates: async () => (await listMirrors(db)).flatMap((m) => Object.entries(m.states).map(([state, count]) => ({ mirror: m.name, state, count }))), log });
    // Operation workflows report their duration through this sink (workflows/interceptors.ts);
    // not during replay, so a workflow is counted once, when it ends.
    const sinks: InjectedSinks<OperationSinks> = {
      operations: { finished: { fn: (info, outcome, seconds) => metrics.operationFinished(info.workflowType, outcome, seconds), callDuringReplay: false } },
    };
    const worker = await Worker.create({
      connection,
      namespace: config.temporal.namespace,
      taskQueue: options.taskQueue ?? config.temporal.taskQueue,
      identity,
      workflowBundle: await bundleWorkflows(log),
      activities: createActivities({ db, clients, budget, metrics, authorization: config.authorization, dataPlane: config.dataPlane, workerIdentity: identity }),
      sinks,
      shutdownGraceTime: SHUTDOWN_GRACE,
      shutdownForceTime: SHUTDOWN_FORCE,
      // Heartbeats reach the server within a second: a cancelled copy (pause) learns it promptly.
      defaultHeartbeatThrottleInterval: '1 second',
      maxHeartbeatThrottleInterval: '1 second',
      // A workflow task waits this long on the sticky queue of the worker that ran the workflow
      // before any worker may take it (SDK default 10 s). A worker killed with the runner of a
      // mirror and its copies (copies are dispatched eagerly to the runner's worker) held the
      // takeover up by that much: bench/takeover.ts, docs/benchmarks.md.
      stickyQueueScheduleToStartTimeout: '3 seconds',
    });
    log.debug('worker built', { identity });
    return {
      worker,
      metrics,
      async close() {
        await clients.close();
        await db.destroy();
      },
    };
  } catch (err) {
    await clients.close();
    await db.destroy();
    throw err;
  }
}

/** Entry point shared by `npm start` and `kmirror worker`: env file, config (once), logger, run. */
export async function workerMain(explicitEnv: Env = process.env): Promise<void> {
  const { env, file, fromFile } = withEnvFile(explicitEnv);
  const config = loadConfig(env);
  const log = createLogger({ level: config.logLevel, fields: { service: 'kmirror-worker', pid: process.pid } });
  if (file !== undefined) log.debug('read env file', { file, variables: fromFile });
  await runWorker(config, log);
}

/** True when this file is the process's main module (`tsx worker.ts`), not an import. tsx does not
 *  provide import.meta.main, hence the comparison. */
function isEntryPoint(): boolean {
  const main = process.argv[1];
  if (main === undefined) return false;
  try {
    return realpathSync(main) === fileURLToPath(import.meta.url);
  } catch {
    return false; // argv[1] is not a file (node -e, a REPL): not us
  }
}

if (isEntryPoint()) {
  try {
    await workerMain();
  } catch (err) {
    printError(err, { json: false });
    process.exitCode = 1;
  }
}
