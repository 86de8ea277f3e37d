// The control plane on the local stack for one test file: a database of its own (migrated, the
// stack's two clusters registered as `src` and `dst`), a worker built like the product's
// (worker.ts createWorker) polling a task queue of its own, and a client starting workflows on it.
// close() stops the runners it started, the worker, and drops the database and topics.
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import { expect } from 'vitest';
import type { Admin, Kafka } from 'kafkajs';
import { awaitOperation, connectClient, startOperation, type OperationInputs, type OperationResults, type TemporalClient } from '../../client/index.ts';
import type { Operation } from '../../workflows/messages.ts';
import { loadConfig, type Config } from '../../config.ts';
import { registerCluster } from '../../db/cluster-store.ts';
import { createDatabase } from '../../db/connect.ts';
import type { Db } from '../../db/database.ts';
import { migrateToLatest } from '../../db/migrate.ts';
import { createTopicsAndWait, deleteTopicsAndWait } from '../../kafka/admin.ts';
import { createKafka } from '../../kafka/connection.ts';
import { RawCluster } from '../../kafka/protocol.ts';
import { createLogger } from '../../log.ts';
import { createWorker } from '../../worker.ts';
import type { Metrics } from '../../metrics/metrics.ts';
import { run } from './child.ts';
import { messages, sendAll } from './mirror-fixture.ts';
import { createTestDatabase, destConnection, randomName, sourceConnection, stackConfigEnv, testClientOptions } from './stack.ts';

export interface ControlPlane {
  readonly config: Config;
  readonly db: Db;
  readonly databaseUrl: string;
  readonly temporal: TemporalClient;
  readonly taskQueue: string;
  readonly sourceKafka: Kafka;
  readonly destKafka: Kafka;
  readonly sourceAdmin: Admin;
  readonly destAdmin: Admin;
  readonly source: RawCluster;
  readonly dest: RawCluster;
  /** A source topic (deleted on close, with its destination twin). */
  sourceTopic(opts?: { partitions?: number; configs?: Record<string, string> }): Promise<string>;
  /** Remember a topic to delete on both clusters at close. */
  track(topic: string): void;
  /** Start another worker on the same task queue (a second process's worth). */
  startWorker(identity?: string): Promise<{ readonly metrics: Metrics; stop(): Promise<void> }>;
  /** The metrics of the worker started with the plane (withWorker, the default). */
  readonly metrics: Metrics | undefined;
  close(): Promise<void>;
}

const quiet = createLogger({ level: 'warn' });
// The SDK's own logger would print every worker state change and activity failure into the test
// output; errors are enough. (Installed once per process; a second call throws.)
try {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
} catch {
  // installed already by another test file in this process
}

export async function controlPlane(options: { readonly env?: Record<string, string>; readonly withWorker?: boolean } = {}): Promise<ControlPlane> {
  const database = await createTestDatabase('cp');
  const taskQueue = randomName('cp');
  const config = loadConfig(stackConfigEnv({ DATABASE_URL: database.url, TEMPORAL_TASK_QUEUE: taskQueue, KMIRROR_LOG_LEVEL: 'warn', ...options.env }));
  const db = createDatabase(database.url);
  await migrateToLatest(db);
  const who = { actor: 'test-setup' };
  await registerCluster(db, config.secretKey, { cluster: 'src', connection: sourceConnection() }, who);
  await registerCluster(db, config.secretKey, { cluster: 'dst', connection: destConnection() }, who);
  const temporal = await connectClient(config);
  const sourceKafka = createKafka(sourceConnection(), testClientOptions);
  const destKafka = createKafka(destConnection(), testClientOptions);
  const sourceAdmin = sourceKafka.admin();
  const destAdmin = destKafka.admin();
  await Promise.all([sourceAdmin.connect(), destAdmin.connect()]);
  const source = new RawCluster(sourceKafka);
  const dest = new RawCluster(destKafka);
  const topics: string[] = [];
  const workers: { worker: Worker; running: Promise<void>; close(): Promise<void>; connection: NativeConnection }[] = [];

  const startWorker = async (identity?: string) => {
    const connection = await NativeConnection.connect({ address: config.temporal.address });
    const built = await createWorker(config, connection, quiet, identity === undefined ? {} : { identity });
    const entry = { worker: built.worker, running: built.worker.run(), close: built.close, connection };
    workers.push(entry);
    return {
      metrics: built.metrics,
      async stop() {
        if (entry.worker.getState() === 'RUNNING') entry.worker.shutdown();
        await entry.running.catch(() => undefined);
        await entry.close();
        await entry.connection.close();
        workers.splice(workers.indexOf(entry), 1);
      },
    };
  };
  const first = options.withWorker !== false ? await startWorker() : undefined;

  return {
    config,
    db,
    databaseUrl: database.url,
    temporal,
    taskQueue,
    sourceKafka,
    destKafka,
    sourceAdmin,
    destAdmin,
    source,
    dest,
    async sourceTopic(opts = {}) {
      const topic = randomName('cp');
      topics.push(topic);
      await createTopicsAndWait(sourceAdmin, [{ topic, partitions: opts.partitions ?? 1, replicationFactor: 1, configs: opts.configs ?? {} }]);
      return topic;
    },
    track(topic) {
      topics.push(topic);
    },
    startWorker,
    metrics: first?.metrics,
    async close() {
      // Runners of this file's mirrors live on its task queue: end them before the worker goes.
      const runners = temporal.client.workflow.list({ query: `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running'` });
      for await (const execution of runners) {
        await temporal.client.workflow
          .getHandle(execution.workflowId, execution.runId)
          .terminate('test finished')
          .catch(() => undefined);
      }
      for (const w of [...workers]) {
        if (w.worker.getState() === 'RUNNING') w.worker.shutdown();
        await w.running.catch(() => undefined);
        await w.close();
        await w.connection.close();
      }
      await deleteTopicsAndWait(sourceAdmin, topics).catch(() => undefined);
      await deleteTopicsAndWait(destAdmin, topics).catch(() => undefined);
      await Promise.all([source.close(), dest.close(), sourceAdmin.disconnect(), destAdmin.disconnect(), temporal.close()]);
      await db.destroy();
      await database.drop();
    },
  };
}

/** The operations the control-plane tests run: `run` (start and await), `refusal` (the code and
 *  message a request fails with; undefined when it succeeds), and `ends` (a topic's end offsets on
 *  a cluster, in partition order). `plane` is read at each call (test files open it in beforeAll). */
export function operationsOn(plane: () => ControlPlane) {
  const run = async <O extends Operation>(operation: O, input: OperationInputs[O]): Promise<OperationResults[O]> => awaitOperation<O>(await startOperation(plane().temporal, operation, input));
  const refusal = async <O extends Operation>(operation: O, input: OperationInputs[O]) =>
    run(operation, input).then(
      () => undefined,
      (err: unknown) => err as { code: string; message: string },
    );
  const ends = async (cluster: 'source' | 'dest', topic: string, n: number): Promise<bigint[]> => {
    const all = Array.from({ length: n }, (_, i) => i);
    const offsets = await (cluster === 'source' ? plane().source : plane().dest).listOffsets(topic, all, 'latest');
    return all.map((p) => offsets.get(p)!);
  };
  /** A new mirror of a new source topic of `partitions` holding `records` (spread evenly), started
   *  and caught up (destination ends equal the source's). `beforeStart` runs between create and
   *  start (e.g. to make the destination topic with more replicas). */
  const mirrored = async (
    partitions: number,
    records: number,
    opts: { readonly sourceCluster?: string; readonly prefix?: string; readonly beforeStart?: (topic: string) => Promise<void>; readonly create?: Partial<OperationInputs['createMirror']> } = {},
  ): Promise<{ mirror: string; topic: string }> => {
    const mirror = randomName(opts.prefix ?? 'm');
    const topic = await plane().sourceTopic({ partitions });
    const producer = plane().sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await sendAll(producer, topic, messages(records, partitions));
    await producer.disconnect();
    await run('createMirror', { mirror, sourceCluster: opts.sourceCluster ?? 'src', destinationCluster: 'dst', ...opts.create });
    await opts.beforeStart?.(topic);
    await run('startTopics', { mirror, topics: [topic] });
    await expect.poll(() => ends('dest', topic, partitions), { timeout: 30_000 }).toEqual(await ends('source', topic, partitions));
    return { mirror, topic };
  };
  return { run, refusal, ends, mirrored };
}


/** The environment of `kmirror` run as a child process on `plane`'s database and task queue: the
 *  stack's endpoints, the shell's PATH and HOME, no env file beneath it, and `extra`. */
export function cliEnv(plane: ControlPlane, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...stackConfigEnv({ DATABASE_URL: plane.databaseUrl, TEMPORAL_TASK_QUEUE: plane.taskQueue, KMIRROR_LOG_LEVEL: 'warn', ...extra }),
    KMIRROR_ENV_FILE: '/dev/null',
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/root',
  };
}

/** `kmirror <args>` as a child process on `plane` (cliEnv); killed (code null) after `timeout` ms. */
export function kmirrorOn(plane: ControlPlane, args: readonly string[], options: { readonly env?: Record<string, string>; readonly timeout?: number } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return run(process.execPath, ['--import', 'tsx', 'cli/main.ts', ...args], { env: cliEnv(plane, options.env), timeout: options.timeout ?? 120_000 });
}
